// RUN: uq-opt %s --split-input-file --convert-uq-to-wave --verify-diagnostics

// Every diagnostic of convert-uq-to-wave, one case each.

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x256xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no GPU kernel for the key format #uq.kv_format<fp4_e2m1, group = 16, rotation = hadamard>: FP4 needs UE8M0 scales per 32 elements (the MFMA's block)}}
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
