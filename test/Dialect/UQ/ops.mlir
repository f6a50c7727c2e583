// RUN: uq-opt %s --split-input-file | FileCheck %s
// RUN: uq-opt %s --split-input-file | uq-opt --split-input-file | FileCheck %s
// RUN: uq-opt %s --split-input-file --mlir-print-op-generic | uq-opt --split-input-file | FileCheck %s

// Every uq op and attribute round-trips through the printer and parser, in
// the custom and the generic form.

// CHECK-LABEL: func @rotate
func.func @rotate(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  // CHECK: uq.rotate %{{.*}} : tensor<4x128xf32>
  %r = uq.rotate %x : tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}

// -----

// Quantize and dequantize in the UltraQuant format (keys rotated), FP8 and
// BF16, with non-default fields of #uq.kv_format.
// CHECK-LABEL: func @quantize_dequantize
func.func @quantize_dequantize(%x: tensor<4x128xbf16>, %y: tensor<2x3x64xf32>)
    -> (tensor<4x128xf32>, tensor<4x128xi8>, tensor<2x3x64xbf16>, tensor<2x3x64xf32>) {
  // CHECK: %[[C:.*]], %[[S:.*]] = uq.quantize %{{.*}} {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>} : tensor<4x128xbf16> -> tensor<4x64xi8>, tensor<4x4xi8>
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>}
      : tensor<4x128xbf16> -> tensor<4x64xi8>, tensor<4x4xi8>
  // CHECK: uq.dequantize %[[C]], %[[S]] {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>} : tensor<4x64xi8>, tensor<4x4xi8> -> tensor<4x128xf32>
  %d = uq.dequantize %c, %s {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>}
      : tensor<4x64xi8>, tensor<4x4xi8> -> tensor<4x128xf32>
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp8_e4m3>} : tensor<4x128xbf16> -> tensor<4x128xi8>
  %f8 = uq.quantize %x {format = #uq.kv_format<fp8_e4m3>} : tensor<4x128xbf16> -> tensor<4x128xi8>
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<bf16>} : tensor<2x3x64xf32> -> tensor<2x3x64xbf16>
  %b = uq.quantize %y {format = #uq.kv_format<bf16>} : tensor<2x3x64xf32> -> tensor<2x3x64xbf16>
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp4_e2m1, group = 16, c = 0.1666, rounding = nearest_even>} : tensor<2x3x64xf32> -> tensor<2x3x32xi8>, tensor<2x3x4xi8>
  %c2, %s2 = uq.quantize %y {format = #uq.kv_format<fp4_e2m1, c = 0.1666, group = 16, rounding = nearest_even>}
      : tensor<2x3x64xf32> -> tensor<2x3x32xi8>, tensor<2x3x4xi8>
  // CHECK: uq.dequantize %{{.*}}, %{{.*}} {format = #uq.kv_format<fp4_e2m1, group = 16, c = 0.1666, rounding = nearest_even>} : tensor<2x3x32xi8>, tensor<2x3x4xi8> -> tensor<2x3x64xf32>
  %d2 = uq.dequantize %c2, %s2 {format = #uq.kv_format<fp4_e2m1, group = 16, c = 0.1666, rounding = nearest_even>}
      : tensor<2x3x32xi8>, tensor<2x3x4xi8> -> tensor<2x3x64xf32>
  return %d, %f8, %b, %d2 : tensor<4x128xf32>, tensor<4x128xi8>, tensor<2x3x64xbf16>, tensor<2x3x64xf32>
}

// -----

// The exponent-search scale rule of the accuracy study (docs/accuracy.md).
// CHECK-LABEL: func @scale_rule
func.func @scale_rule(%x: tensor<4x128xf32>) -> (tensor<4x64xi8>, tensor<4x4xi8>) {
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, scale_rule = mse_search, c = 0.196, rotation = hadamard>}
      : tensor<4x128xf32> -> tensor<4x64xi8>, tensor<4x4xi8>
  return %c, %s : tensor<4x64xi8>, tensor<4x4xi8>
}

// -----

// FP4 with E4M3 group scales (values; docs/accuracy.md): the default c is
// 1/6, printed only when it differs; group 16 and the search are allowed.
// CHECK-LABEL: func @e4m3_scales
func.func @e4m3_scales(%x: tensor<4x128xf32>) -> (tensor<4x64xi8>, tensor<4x8xi8>, tensor<4x128xf32>) {
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp4_e2m1, scale = e4m3, group = 16, scale_rule = mse_search>}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, scale = e4m3, group = 16, scale_rule = mse_search>}
      : tensor<4x128xf32> -> tensor<4x64xi8>, tensor<4x8xi8>
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp4_e2m1, scale = e4m3, c = 0.2, rotation = hadamard>}
  %c2, %s2 = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, rotation = hadamard, scale = e4m3, c = 0.2>}
      : tensor<4x128xf32> -> tensor<4x64xi8>, tensor<4x4xi8>
  // CHECK: uq.dequantize %{{.*}}, %{{.*}} {format = #uq.kv_format<fp4_e2m1, scale = e4m3, group = 16, scale_rule = mse_search>}
  %d = uq.dequantize %c, %s {format = #uq.kv_format<fp4_e2m1, scale = e4m3, group = 16, scale_rule = mse_search>}
      : tensor<4x64xi8>, tensor<4x8xi8> -> tensor<4x128xf32>
  return %c, %s, %d : tensor<4x64xi8>, tensor<4x8xi8>, tensor<4x128xf32>
}

// -----

// Channel means (the accuracy study's kmean / vmean): optional operands of
// the cache write and the attention ops.
// CHECK-LABEL: func @channel_means
func.func @channel_means(%k: tensor<3x2x128xbf16>, %s: tensor<3xi64>,
                         %cache: tensor<64x16x2x136xi8>, %mk: tensor<2x128xf32>,
                         %mv: tensor<2x128xf32>, %q: tensor<2x4x128xbf16>,
                         %bt: tensor<2x32xi32>, %lens: tensor<2xi32>,
                         %sinks: tensor<4xf32>)
    -> (tensor<64x16x2x136xi8>, tensor<64x16x2x136xi8>, tensor<2x4x128xf32>,
        tensor<2x4x128xf32>, tensor<2x4x2x128xf32>) {
  // CHECK: uq.cache_write %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} k_mean %{{.*}} : tensor<2x128xf32> v_mean %{{.*}} : tensor<2x128xf32> {k_format
  %c = uq.cache_write %k, %k, %s into %cache k_mean %mk : tensor<2x128xf32> v_mean %mv : tensor<2x128xf32>
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x128xbf16>, tensor<3x2x128xbf16>, tensor<3xi64> into tensor<64x16x2x136xi8>
  // CHECK: uq.cache_write %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} v_mean %{{.*}} : tensor<2x128xf32> {k_format
  %c2 = uq.cache_write %k, %k, %s into %cache v_mean %mv : tensor<2x128xf32>
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x128xbf16>, tensor<3x2x128xbf16>, tensor<3xi64> into tensor<64x16x2x136xi8>
  // CHECK: uq.decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} sinks %{{.*}} k_mean %{{.*}} v_mean %{{.*}} scale 8.838830e-02 {k_format
  %o = uq.decode_attention %q, %c, %bt, %lens sinks %sinks k_mean %mk v_mean %mv scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x4x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>,
         tensor<4xf32>, tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<2x4x128xf32>
  // CHECK: uq.decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} v_mean %{{.*}} scale
  %o2 = uq.decode_attention %q, %c, %bt, %lens v_mean %mv scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x4x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>,
         tensor<2x128xf32>) -> tensor<2x4x128xf32>
  // CHECK: uq.decode_attention_partial %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} k_mean %{{.*}} v_mean %{{.*}} scale 8.838830e-02 partition_size 256
  %po, %pm, %pl = uq.decode_attention_partial %q, %c, %bt, %lens k_mean %mk v_mean %mv
      scale 0.0883883 partition_size 256
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x4x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>,
         tensor<2x128xf32>, tensor<2x128xf32>)
      -> (tensor<2x4x2x128xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>)
  return %c, %c2, %o, %o2, %po : tensor<64x16x2x136xi8>, tensor<64x16x2x136xi8>,
      tensor<2x4x128xf32>, tensor<2x4x128xf32>, tensor<2x4x2x128xf32>
}

// -----

// FP8 (no scales: MX-style FP8 with UE8M0 group scales is rejected, see
// invalid.mlir) on rows of dynamic count.
// CHECK-LABEL: func @fp8_dynamic
func.func @fp8_dynamic(%x: tensor<?x64xf32>) -> tensor<?x64xi8> {
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp8_e4m3>} : tensor<?x64xf32> -> tensor<?x64xi8>
  %c = uq.quantize %x {format = #uq.kv_format<fp8_e4m3>}
      : tensor<?x64xf32> -> tensor<?x64xi8>
  return %c : tensor<?x64xi8>
}

// -----

// Paged cache write through a slot mapping (vLLM slot layout, padded slots).
// CHECK-LABEL: func @cache_write
func.func @cache_write(%k: tensor<3x8x128xbf16>, %v: tensor<3x8x128xbf16>,
                       %slots: tensor<3xi64>, %cache: tensor<64x16x8x144xi8>)
    -> tensor<64x16x8x144xi8> {
  // CHECK: uq.cache_write %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>, v_format = #uq.kv_format<fp4_e2m1>} : tensor<3x8x128xbf16>, tensor<3x8x128xbf16>, tensor<3xi64> into tensor<64x16x8x144xi8>
  %c = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x8x128xbf16>, tensor<3x8x128xbf16>, tensor<3xi64> into tensor<64x16x8x144xi8>
  return %c : tensor<64x16x8x144xi8>
}

// -----

// Decode attention with GQA 8, with and without sinks, and the f32 query.
// CHECK-LABEL: func @decode_attention
func.func @decode_attention(%q: tensor<2x16x128xbf16>, %cache: tensor<64x16x2x136xi8>,
                            %bt: tensor<2x32xi32>, %lens: tensor<2xi32>,
                            %sinks: tensor<16xf32>)
    -> (tensor<2x16x128xf32>, tensor<2x16x128xbf16>) {
  // CHECK: uq.decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale 8.838830e-02 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>, v_format = #uq.kv_format<fp4_e2m1>} : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>) -> tensor<2x16x128xf32>
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>) -> tensor<2x16x128xf32>
  // CHECK: uq.decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} sinks %{{.*}} scale 1.000000e+00 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>, query_precision = #uq<query_precision f32>, v_format = #uq.kv_format<fp4_e2m1>} : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>, tensor<16xf32>) -> tensor<2x16x128xbf16>
  %o2 = uq.decode_attention %q, %cache, %bt, %lens sinks %sinks scale 1.0
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision f32>}
      : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>, tensor<16xf32>) -> tensor<2x16x128xbf16>
  // CHECK: uq.decode_attention {{.*}}query_precision = #uq<query_precision fp8_e4m3_scaled>
  %o3 = uq.decode_attention %q, %cache, %bt, %lens scale 1.0
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision fp8_e4m3_scaled>}
      : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>) -> tensor<2x16x128xf32>
  return %o, %o2 : tensor<2x16x128xf32>, tensor<2x16x128xbf16>
}

// -----

// Paged attention (prefill + decode batches): dynamic num_tokens, num_seqs,
// max_blocks and num_blocks; sinks, a window and an f32 query; and the
// minimal form with static sizes and a bf16 result.
// CHECK-LABEL: func @paged_attention
func.func @paged_attention(%q: tensor<?x16x128xbf16>, %cache: tensor<?x16x2x136xi8>,
                           %bt: tensor<?x?xi32>, %lens: tensor<?xi32>,
                           %qsl: tensor<?xi32>, %sinks: tensor<16xf32>,
                           %q2: tensor<5x4x64xf32>, %cache2: tensor<8x16x1x68xi8>,
                           %bt2: tensor<2x4xi32>, %lens2: tensor<2xi32>,
                           %qsl2: tensor<3xi32>)
    -> (tensor<?x16x128xf32>, tensor<5x4x64xbf16>) {
  // CHECK: uq.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} query_start_loc %{{.*}} sinks %{{.*}} scale 8.838830e-02 window 4096 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>, query_precision = #uq<query_precision f32>, v_format = #uq.kv_format<fp4_e2m1>} : (tensor<?x16x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<16xf32>) -> tensor<?x16x128xf32>
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl sinks %sinks
      scale 0.0883883 window 4096
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision f32>}
      : (tensor<?x16x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<16xf32>) -> tensor<?x16x128xf32>
  // CHECK: uq.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} query_start_loc %{{.*}} scale 1.250000e-01 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>, v_format = #uq.kv_format<fp4_e2m1>} : (tensor<5x4x64xf32>, tensor<8x16x1x68xi8>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<5x4x64xbf16>
  %o2 = uq.paged_attention %q2, %cache2, %bt2, %lens2 query_start_loc %qsl2 scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<5x4x64xf32>, tensor<8x16x1x68xi8>, tensor<2x4xi32>, tensor<2xi32>,
         tensor<3xi32>) -> tensor<5x4x64xbf16>
  return %o, %o2 : tensor<?x16x128xf32>, tensor<5x4x64xbf16>
}

// Channel means on uq.paged_attention (with and without sinks, one mean).
// CHECK-LABEL: func @paged_attention_means
func.func @paged_attention_means(%q: tensor<?x8x128xbf16>, %cache: tensor<?x16x2x136xi8>,
                                 %bt: tensor<?x?xi32>, %lens: tensor<?xi32>,
                                 %qsl: tensor<?xi32>, %sinks: tensor<8xf32>,
                                 %mk: tensor<2x128xf32>, %mv: tensor<2x128xf32>)
    -> (tensor<?x8x128xf32>, tensor<?x8x128xf32>) {
  // CHECK: uq.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} query_start_loc %{{.*}} sinks %{{.*}} k_mean %{{.*}} v_mean %{{.*}} scale 8.838830e-02 {k_format
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl sinks %sinks
      k_mean %mk v_mean %mv scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<8xf32>, tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<?x8x128xf32>
  // CHECK: uq.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} query_start_loc %{{.*}} v_mean %{{.*}} scale
  %o2 = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl
      v_mean %mv scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<2x128xf32>) -> tensor<?x8x128xf32>
  return %o, %o2 : tensor<?x8x128xf32>, tensor<?x8x128xf32>
}

// -----

// Split-K decode attention: partitions, then the merge with sinks.
// CHECK-LABEL: func @split_k
func.func @split_k(%q: tensor<2x16x128xf32>, %cache: tensor<64x16x2x136xi8>,
                   %bt: tensor<2x32xi32>, %lens: tensor<2xi32>,
                   %sinks: tensor<16xf32>) -> tensor<2x16x128xf32> {
  // CHECK: %[[O:.*]], %[[M:.*]], %[[L:.*]] = uq.decode_attention_partial %{{.*}} scale 8.838830e-02 partition_size 256 {k_format
  %o, %m, %l = uq.decode_attention_partial %q, %cache, %bt, %lens
      scale 0.0883883 partition_size 256
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x16x128xf32>, tensor<64x16x2x136xi8>, tensor<2x32xi32>, tensor<2xi32>)
      -> (tensor<2x16x2x128xf32>, tensor<2x16x2xf32>, tensor<2x16x2xf32>)
  // CHECK: uq.merge_partitions %[[O]], %[[M]], %[[L]] sinks %{{.*}} : (tensor<2x16x2x128xf32>, tensor<2x16x2xf32>, tensor<2x16x2xf32>, tensor<16xf32>) -> tensor<2x16x128xf32>
  %r = uq.merge_partitions %o, %m, %l sinks %sinks
      : (tensor<2x16x2x128xf32>, tensor<2x16x2xf32>, tensor<2x16x2xf32>, tensor<16xf32>) -> tensor<2x16x128xf32>
  return %r : tensor<2x16x128xf32>
}

// -----

// The head-major cache layout: [blocks, KV heads, block_size, slot].
// CHECK-LABEL: func.func @head_major
// CHECK: uq.cache_write {{.*}}layout = #uq.cache_layout<head_major>{{.*}} into tensor<?x2x16x136xi8>
// CHECK: uq.decode_attention {{.*}}layout = #uq.cache_layout<head_major>
func.func @head_major(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>,
                      %s: tensor<?xi64>, %c: tensor<?x2x16x136xi8>,
                      %q: tensor<?x8x128xbf16>, %bt: tensor<?x?xi32>,
                      %lens: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %w = uq.cache_write %k, %v, %s into %c
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<head_major>}
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?xi64> into tensor<?x2x16x136xi8>
  %o = uq.decode_attention %q, %w, %bt, %lens scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<head_major>}
      : (tensor<?x8x128xbf16>, tensor<?x2x16x136xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
