// RUN: uq-compile %s --emit=isa -o %t.s
// RUN: %python %S/Inputs/check_isa.py %t.s d64_0_partial 64 | FileCheck %s --check-prefix=D64
// RUN: %python %S/Inputs/check_isa.py %t.s d256_0_partial 256 | FileCheck %s --check-prefix=D256

// Head dims 64 (one K = 128 MFMA half filled with zero codes) and 256 (two
// K-chunks accumulate): the key loop keeps the same structure.
// D64: check_isa: OK: d64_0_partial: 2 scaled MFMA, 16 FP4->bf16 cvt (V), 4 bf16 MFMA per 32-token iteration of each of 2 key loops
// D256: check_isa: OK: d256_0_partial: 4 scaled MFMA, 64 FP4->bf16 cvt (V), 16 bf16 MFMA per 32-token iteration of each of 2 key loops
func.func @d64(%q: tensor<1x16x64xbf16>, %cache: tensor<8x16x1x68xi8>,
               %bt: tensor<1x8xi32>, %lens: tensor<1xi32>) -> tensor<1x16x64xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<1x16x64xbf16>, tensor<8x16x1x68xi8>, tensor<1x8xi32>, tensor<1xi32>) -> tensor<1x16x64xf32>
  return %o : tensor<1x16x64xf32>
}
func.func @d256(%q: tensor<1x2x256xbf16>, %cache: tensor<8x16x2x272xi8>,
                %bt: tensor<1x8xi32>, %lens: tensor<1xi32>) -> tensor<1x2x256xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.0625
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<1x2x256xbf16>, tensor<8x16x2x272xi8>, tensor<1x8xi32>, tensor<1xi32>) -> tensor<1x2x256xf32>
  return %o : tensor<1x2x256xf32>
}
