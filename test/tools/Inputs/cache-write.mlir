// One uq.cache_write (one small kernel): an input for the tools' output
// tests (write-errors.py).
func.func @write(%k: tensor<?x1x64xf32>, %v: tensor<?x1x64xf32>, %s: tensor<?xi64>,
                 %cache: tensor<?x16x1x68xi8>) -> tensor<?x16x1x68xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?xi64> into tensor<?x16x1x68xi8>
  return %c : tensor<?x16x1x68xi8>
}
