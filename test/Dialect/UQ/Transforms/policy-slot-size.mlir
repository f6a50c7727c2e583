// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=0' 2>&1 | FileCheck %s

// BF16 for layer 0 does not fit the 136-byte slots of a 4-bit cache: the op
// verifier says how many bytes the new formats need.
// CHECK: error: 'uq.cache_write' op cache slots of 136 bytes are too small: K and V of head dimension 128 need 512 bytes
func.func @layer(%k: tensor<3x2x128xbf16>, %v: tensor<3x2x128xbf16>, %s: tensor<3xi64>,
                 %cache: tensor<8x16x2x136xi8>) -> tensor<8x16x2x136xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x128xbf16>, tensor<3x2x128xbf16>, tensor<3xi64> into tensor<8x16x2x136xi8>
  return %c : tensor<8x16x2x136xi8>
}
