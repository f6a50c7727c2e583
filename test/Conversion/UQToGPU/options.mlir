// RUN: not uq-opt %s --convert-uq-to-gpu='partition-size=48' 2>&1 | FileCheck %s --check-prefix=PS
// RUN: not uq-opt %s --convert-uq-to-gpu='chip=gfx942' 2>&1 | FileCheck %s --check-prefix=CHIP

// A partition size that is not a multiple of the 32-token tile, and a chip
// without the scaled MFMA, are rejected with a located error.
// PS: error: 'uq.decode_attention' op partition size 48 must be a positive multiple of 32 (the kernel's token tile)
// CHIP: error: convert-uq-to-gpu: chip 'gfx942' is not supported (only gfx950 has the scaled MFMA the kernels use)
func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}
