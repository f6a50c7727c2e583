// RUN: not uq-opt %s --convert-uq-to-wave --uq-inline-kernels-on-host 2>&1 | FileCheck %s
// RUN: uq-opt %s --convert-uq-to-wave=prefill-waves=1 --uq-inline-kernels-on-host | FileCheck %s --check-prefix=ONE

// The host runs wave-level kernels one 64-lane wave per workgroup: a
// prefill kernel of 4 waves (sharing LDS, with barriers) is a located
// error that says how to build it for the host; with one wave it runs.
// CHECK: multi-wave-kernel.mlir:[[# @LINE + 5]]:8: error: 'gpu.launch_func' op cannot run kernel @paged_0_prefill on the host: its workgroup is 256x1x1 work-items, the host runs one 64-lane wave per workgroup (build paged attention with convert-uq-to-wave prefill-waves=1, as uq-cpu-pipeline does)
// ONE-LABEL: func.func @paged
// ONE-NOT: gpu.launch_func
// ONE: return
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
