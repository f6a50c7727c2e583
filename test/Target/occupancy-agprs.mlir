// RUN: uq-compile %s -o %t.hsaco
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t.hsaco.json'))['kernels']}; p = k['paged_0_prefill']; g = lambda n: (n + 7) // 8 * 8; print('agprs', 'some' if p['agpr_count'] > 0 else 'none', 'within', p['agpr_count'] <= p['vgpr_count']); [print(n, 'waves', x['occupancy']['waves_per_simd_by_registers'], 'rule', min(8, 512 // g(x['vgpr_count']))) for n, x in sorted(k.items())]" | FileCheck %s

// The bf16 D = 256 prefill kernel uses AGPRs (LLVM 22: 256 arch VGPRs and
// 140 AGPRs, .vgpr_count 396). On gfx950 .vgpr_count is the unified count,
// AGPRs included (LLVM AMDGPUBaseInfo getTotalNumVGPRs), so the kernel fits
// one wave per SIMD: the JSON's occupancy follows 512 / ceil8(vgpr_count)
// for every kernel. (Adding .agpr_count to it again gave 0 waves, a kernel
// that "does not fit on a CU" in the timing model.)
// CHECK: agprs some within True
// CHECK: paged_0_merge waves [[M:[0-9]+]] rule [[M]]
// CHECK: paged_0_prefill waves 1 rule 1
// CHECK: paged_0_query waves [[Q:[0-9]+]] rule [[Q]]
func.func @paged(%q: tensor<?x64x256xbf16>, %c: tensor<?x16x8x1024xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x64x256xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0625 {k_format = #uq.kv_format<bf16>, v_format = #uq.kv_format<bf16>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x64x256xbf16>, tensor<?x16x8x1024xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x64x256xf32>
  return %o : tensor<?x64x256xf32>
}
