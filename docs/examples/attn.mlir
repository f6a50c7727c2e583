// The program of docs/runtime.md's examples: a cache write, a decode
// attention and a paged attention over one UltraQuant cache (8 query heads,
// 2 KV heads, head_dim 64, blocks of 16 tokens; 68 bytes per token and KV
// head). Every size a serving engine changes per step is a run-time size
// (`?`), so one code object serves every batch.
//
//   build/bin/uq-compile docs/examples/attn.mlir -o attn.hsaco

func.func @write(%k: tensor<?x2x64xbf16>, %v: tensor<?x2x64xbf16>,
                 %slots: tensor<?xi64>, %cache: tensor<?x16x2x68xi8>)
    -> tensor<?x16x2x68xi8> {
  %c = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>,
       layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?xi64>
        into tensor<?x16x2x68xi8>
  return %c : tensor<?x16x2x68xi8>
}

func.func @decode(%q: tensor<?x8x64xbf16>, %cache: tensor<?x16x2x68xi8>,
                  %bt: tensor<?x?xi32>, %lens: tensor<?xi32>)
    -> tensor<?x8x64xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>,
       layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x64xbf16>, tensor<?x16x2x68xi8>, tensor<?x?xi32>,
         tensor<?xi32>) -> tensor<?x8x64xf32>
  return %o : tensor<?x8x64xf32>
}

func.func @paged(%q: tensor<?x8x64xbf16>, %cache: tensor<?x16x2x68xi8>,
                 %bt: tensor<?x?xi32>, %lens: tensor<?xi32>,
                 %qsl: tensor<?xi32>) -> tensor<?x8x64xf32> {
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl
      scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>,
       layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x64xbf16>, tensor<?x16x2x68xi8>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x64xf32>
  return %o : tensor<?x8x64xf32>
}
