// RUN: not uq-opt %s --convert-uq-to-wave='partition-size=48' 2>&1 | FileCheck %s --check-prefix=PS
// RUN: not uq-opt %s --convert-uq-to-wave='tile-tokens=64' 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: uq-opt %s --convert-uq-to-wave='partition-size=64' | FileCheck %s --check-prefix=OK

// The pass options: a partition that is not whole tiles and another tile
// size are located errors; a valid partition size reaches the kernel.
// PS: options.mlir:[[@LINE+4]]:8: error: 'uq.decode_attention' op partition size 48 must be a positive multiple of the 32-token tile
// TILE: options.mlir:[[@LINE+3]]:8: error: 'uq.decode_attention' op tile-tokens 64 is not supported (32: two 16-key MFMA columns, one K = 32 step of the PV MFMA)
// OK: partition_size = 64
func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}
