// RUN: uq-opt %s --split-input-file --convert-uq-to-gpu --verify-diagnostics
// Every diagnostic of convert-uq-to-gpu.

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x256xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no gfx950 kernel for these formats}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp8_e4m3, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x256xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no gfx950 kernel for unrotated keys: the query placement assumes Hadamard-rotated keys}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%q: tensor<1x4x32xf32>, %cache: tensor<8x16x1x34xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x32xf32> {
  // expected-error @+1 {{has no gfx950 kernel for head dimension 32 (64, 128 and 256 are supported)}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x32xf32>, tensor<8x16x1x34xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x32xf32>
  return %o : tensor<1x4x32xf32>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{has no gfx950 kernel for query_precision f32}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>, query_precision = #uq<query_precision f32>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %o : tensor<1x4x128xf32>
}

// -----

func.func @f(%q: tensor<?x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<?x4xi32>, %l: tensor<?xi32>) -> tensor<?x4x128xf32> {
  // expected-error @+1 {{needs static shapes for the gfx950 kernels, got 'tensor<?x4x128xf32>'}}
  %o = uq.decode_attention %q, %cache, %bt, %l scale 1.0 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x4x128xf32>, tensor<8x16x1x136xi8>, tensor<?x4xi32>, tensor<?xi32>) -> tensor<?x4x128xf32>
  return %o : tensor<?x4x128xf32>
}

// -----

func.func @f(%x: tensor<4x64xf32>) -> (tensor<4x32xi8>, tensor<4x2xi8>) {
  // expected-error @+1 {{has no gfx950 kernel (only cache_write and decode attention run on the GPU; use the CPU path, convert-uq-to-linalg)}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>} : tensor<4x64xf32> -> tensor<4x32xi8>, tensor<4x2xi8>
  return %c, %s : tensor<4x32xi8>, tensor<4x2xi8>
}

// -----

func.func @f(%q: tensor<1x4x128xf32>, %cache: tensor<8x16x1x136xi8>, %bt: tensor<1x4xi32>, %l: tensor<1xi32>) -> tensor<1x4x1x128xf32> {
  // expected-error @+1 {{partition_size 64 differs from the pass option 256}}
  %o, %m, %s = uq.decode_attention_partial %q, %cache, %bt, %l scale 1.0 partition_size 64 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<1x4x128xf32>, tensor<8x16x1x136xi8>, tensor<1x4xi32>, tensor<1xi32>) -> (tensor<1x4x1x128xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>)
  return %o : tensor<1x4x1x128xf32>
}
