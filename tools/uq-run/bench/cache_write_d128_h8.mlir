// Benchmark input for uq-run --bench (see docs/cpu-path.md): quantize and
// write 4096 tokens x 8 KV heads x D = 128 (bf16 K and V) into a 256-block
// cache (block size 16, vLLM slot layout, 136-byte slots).
func.func @cache_write(%k: tensor<4096x8x128xbf16>, %v: tensor<4096x8x128xbf16>,
                       %slots: tensor<4096xi64>, %cache: tensor<256x16x8x136xi8>)
    -> tensor<256x16x8x136xi8> {
  %c = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<4096x8x128xbf16>, tensor<4096x8x128xbf16>, tensor<4096xi64>
        into tensor<256x16x8x136xi8>
  return %c : tensor<256x16x8x136xi8>
}
