// RUN: uq-opt %s --split-input-file --convert-uq-to-wave --verify-diagnostics

// Every diagnostic of convert-uq-to-wave, one case each.

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x256xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no GPU kernel for the key format #uq.kv_format<fp4_e2m1, group = 16, rotation = hadamard>: FP4 needs one UE8M0 (or, for values, E4M3) scale per 32 elements (the MFMA's block)}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, group = 16, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x256xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x256xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no GPU kernel for the value format #uq.kv_format<fp8_e4m3, rotation = hadamard>: rotated FP8 formats have no GPU kernel}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp8_e4m3>, v_format = #uq.kv_format<fp8_e4m3, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x256xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x512xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no GPU kernel for the key format #uq.kv_format<bf16, rotation = hadamard>: rotated bf16 formats have no GPU kernel}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<bf16, rotation = hadamard>, v_format = #uq.kv_format<bf16>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x512xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%q: tensor<1x4x32xf32>, %cache: tensor<8x16x1x34xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x32xf32> {
  // expected-error @+1 {{has no GPU kernel for head dimension 32 (64, 128 and 256 are supported)}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x32xf32>, tensor<8x16x1x34xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x32xf32>
  return %o : tensor<1x4x32xf32>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no GPU kernel for query_precision f32: the QK product runs on the MFMA with an FP8 query}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>, query_precision = #uq<query_precision f32>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%o: tensor<?x?x?x?xf32>, %m: tensor<?x?x?xf32>, %s: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{needs static query heads and head dimension for the GPU kernel}}
  %r = uq.merge_partitions %o, %m, %s : (tensor<?x?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// E4M3 group scales (docs/accuracy.md): the scaled MFMA takes
// only E8M0 block scales, so keys cannot have them on the GPU path, neither
// in the cache write nor in the attention (values can).
func.func @f(%k: tensor<3x1x128xbf16>, %s: tensor<3xi64>, %cache: tensor<8x16x1x136xi8>) -> tensor<8x16x1x136xi8> {
  // expected-error @+1 {{has no GPU kernel for the key format #uq.kv_format<fp4_e2m1, scale = e4m3, rotation = hadamard>: scale = e4m3 group scales on keys have no GPU kernel}}
  %c = uq.cache_write %k, %k, %s into %cache {k_format = #uq.kv_format<fp4_e2m1, scale = e4m3, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1, scale = e4m3>, layout = #uq.cache_layout<vllm_slot>} : tensor<3x1x128xbf16>, tensor<3x1x128xbf16>, tensor<3xi64> into tensor<8x16x1x136xi8>
  return %c : tensor<8x16x1x136xi8>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{scale = e4m3 group scales on keys have no GPU kernel: gfx950's scaled MFMA takes only E8M0 (power-of-two) block scales (values may use them)}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard, scale = e4m3>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

// v_mean is added at the merge kernel: the partial op alone has none.
func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>, %mv: tensor<1x128xf32>) -> tensor<1x4x1x128xf32> {
  // expected-error @+1 {{has no GPU kernel for v_mean: the GPU path adds the value mean in uq.decode_attention's merge kernel}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l v_mean %mv scale 1.0 partition_size 64 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>, tensor<1x128xf32>) -> (tensor<1x4x1x128xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>)
  return %o : tensor<1x4x1x128xf32>
}
