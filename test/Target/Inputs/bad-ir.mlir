// Invalid IR for uq-compile-errors.mlir: 6 query heads over 4 KV heads.
func.func @f(%q: tensor<1x6x128xf32>, %cache: tensor<8x16x4x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x6x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x6x128xf32>, tensor<8x16x4x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x6x128xf32>
  return %o : tensor<1x6x128xf32>
}
