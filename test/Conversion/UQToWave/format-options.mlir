// RUN: uq-opt %s --split-input-file --convert-uq-to-wave | FileCheck %s

// The accuracy options (docs/accuracy.md, docs/gpu-kernels.md) in the
// wave-level kernels. Each option adds arguments after the kernel's others.

// Channel means on the cache write: two f32 mean buffers after the scalars;
// each side subtracts its mean row (f32) before the rotation and coding.
// CHECK-LABEL: func.func @write
// CHECK: gpu.launch_func @uq_kernels::@write_0_cache_write
// CHECK-SAME: memref<?xi8>, %{{.*}} : i32, %{{.*}} : i32, %{{.*}} : memref<?xf32>, %{{.*}} : memref<?xf32>)
// CHECK: gpu.func @write_0_cache_write(%{{.*}}: memref<?xbf16>, %{{.*}}: memref<?xbf16>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi8>, %{{.*}}: i32, %{{.*}}: i32, %[[MK:.*]]: memref<?xf32>, %[[MV:.*]]: memref<?xf32>) kernel
// CHECK: %[[M1:.*]] = vector.load %[[MK]][%{{.*}}] : memref<?xf32>, vector<128xf32>
// CHECK: arith.subf %{{.*}}, %[[M1]] : vector<128xf32>
// CHECK: uq.rotate
// CHECK: %[[M2:.*]] = vector.load %[[MV]][%{{.*}}] : memref<?xf32>, vector<128xf32>
// CHECK: arith.subf %{{.*}}, %[[M2]] : vector<128xf32>
// CHECK-NOT: uq.rotate
// CHECK: gpu.return
func.func @write(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %s: tensor<?xi64>,
                 %c: tensor<?x16x2x136xi8>, %mk: tensor<2x128xf32>, %mv: tensor<2x128xf32>) -> tensor<?x16x2x136xi8> {
  %r = uq.cache_write %k, %v, %s into %c k_mean %mk : tensor<2x128xf32> v_mean %mv : tensor<2x128xf32>
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?xi64> into tensor<?x16x2x136xi8>
  return %r : tensor<?x16x2x136xi8>
}

// -----

// Per-32 query scales and both means on decode attention (GQA 4):
//  - query: per-32 scale bytes (UE8M0) stored to `query_scales`, and
//    q . rot(k_mean[h / 4]) stored to `query_bias`;
//  - partial: the scale bytes are the scaled MFMA's A scales (loaded, not a
//    constant 127), the bias is added to every logit;
//  - merge: v_mean[h / 4] times the keys' share of the softmax.
// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch_func @uq_kernels::@decode_0_query {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xi8>, %{{.*}} : i32, %[[QS:.*]] : memref<?xi8>, %{{.*}} : memref<?xf32>, %[[QB:.*]] : memref<?xf32>)
// CHECK: gpu.launch_func @uq_kernels::@decode_0_partial {{.*}} %{{.*}} : i32, %[[QS]] : memref<?xi8>, %[[QB]] : memref<?xf32>)
// CHECK: gpu.launch_func @uq_kernels::@decode_0_merge {{.*}} : i32, %{{.*}} : memref<?xf32>)
// CHECK: gpu.func @decode_0_query(%{{.*}}: memref<?xbf16>, %[[QP:.*]]: memref<?xi8>, %{{.*}}: i32, %[[S:.*]]: memref<?xi8>, %[[K:.*]]: memref<?xf32>, %[[B:.*]]: memref<?xf32>) kernel
// CHECK: vector.multi_reduction <maximumf>, %{{.*}} [1] : vector<4x32xf32> to vector<4xf32>
// CHECK: vector.store %{{.*}}, %[[QP]][%{{.*}}] : memref<?xi8>, vector<128xi8>
// CHECK: vector.store %{{.*}}, %[[S]][%{{.*}}] : memref<?xi8>, vector<4xi8>
// CHECK: vector.load %[[K]][%{{.*}}] : memref<?xf32>, vector<128xf32>
// CHECK: uq.rotate
// CHECK: vector.multi_reduction <add>, %{{.*}} [1] : vector<1x128xf32> to vector<1xf32>
// CHECK: vector.store %{{.*}}, %[[B]][%{{.*}}] : memref<?xf32>, vector<1xf32>
// CHECK: gpu.func @decode_0_partial({{.*}}: i32, %[[PS:.*]]: memref<?xi8>, %[[PB:.*]]: memref<?xf32>) kernel
// CHECK: %[[SB:.*]] = uq.load_rows %[[PS]][%{{.*}}] mask %{{.*}} : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x4xi8>
// CHECK: %[[SA:.*]] = vector.bitcast %[[SB]] : vector<16x4xi8> to vector<16x4xf8E8M0FNU>
// CHECK: %[[BIAS:.*]] = vector.gather %[[PB]]
// CHECK: scf.for
// CHECK: %[[L:.*]] = uq.scaled_mma %{{.*}}, %[[SA]], %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>
// CHECK: %[[BC:.*]] = vector.shape_cast %[[BIAS]] : vector<16xf32> to vector<16x1xf32>
// CHECK: %[[BB:.*]] = vector.broadcast %[[BC]] : vector<16x1xf32> to vector<16x32xf32>
// CHECK: arith.addf %[[L]], %[[BB]] : vector<16x32xf32>
// The merge adds v_mean times the keys' share (a [1] vector: the
// partitions' weights are reduced across lanes) after the rotation back.
// CHECK: gpu.func @decode_0_merge({{.*}}: i32, %[[MV:.*]]: memref<?xf32>) kernel
// CHECK: %[[MEAN:.*]] = vector.load %[[MV]][%{{.*}}] : memref<?xf32>, vector<128xf32>
// CHECK: arith.divf %{{.*}}, %{{.*}} : vector<1xf32>
// CHECK: uq.rotate
// CHECK: arith.mulf %[[MEAN]], %{{.*}} : vector<128xf32>
// The single-pass kernel (one partition, no merge) takes the partial
// kernel's option arguments, then v_mean, and does the same on its 16 rows.
// CHECK: gpu.func @decode_0_single({{.*}}: i32, %[[SS:.*]]: memref<?xi8>, %[[SB2:.*]]: memref<?xf32>, %[[SMV:.*]]: memref<?xf32>) kernel
// CHECK: uq.scaled_mma
// CHECK: vector.load %[[SMV]][%{{.*}}] : memref<?xf32>, vector<128xf32>
// CHECK: uq.rotate %{{.*}} : vector<16x128xf64>
func.func @decode(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x2x136xi8>,
                  %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %sinks: tensor<8xf32>,
                  %mk: tensor<2x128xf32>, %mv: tensor<2x128xf32>) -> tensor<?x8x128xf32> {
  %o = uq.decode_attention %q, %c, %bt, %lens sinks %sinks k_mean %mk v_mean %mv scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision fp8_e4m3_scaled>}
      : (tensor<?x8x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<8xf32>, tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}

// -----

// The same options on paged attention (GQA 4): the query kernel writes the
// per-32 scale bytes and q . rot(k_mean) of every (token, head); the prefill
// kernel takes them after its scalars (the scale bytes as the scaled MFMA's
// A scales, the bias gathered per row and added to every logit); the merge
// adds v_mean[h / 4] times the keys' share of the softmax.
// CHECK-LABEL: func.func @paged
// CHECK: gpu.launch_func @uq_kernels::@paged_0_query {{.*}} args(%{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xi8>, %{{.*}} : i32, %[[QS:.*]] : memref<?xi8>, %{{.*}} : memref<?xf32>, %[[QB:.*]] : memref<?xf32>)
// CHECK: gpu.launch_func @uq_kernels::@paged_0_prefill {{.*}} %{{.*}} : i32, %[[QS]] : memref<?xi8>, %[[QB]] : memref<?xf32>)
// CHECK: gpu.launch_func @uq_kernels::@paged_0_merge {{.*}} : i32, %{{.*}} : memref<?xf32>)
// CHECK: gpu.func @paged_0_query(%{{.*}}: memref<?xbf16>, %{{.*}}: memref<?xi8>, %{{.*}}: i32, %[[S:.*]]: memref<?xi8>, %[[K:.*]]: memref<?xf32>, %[[B:.*]]: memref<?xf32>) kernel
// CHECK: vector.store %{{.*}}, %[[S]][%{{.*}}] : memref<?xi8>, vector<4xi8>
// CHECK: vector.load %[[K]][%{{.*}}] : memref<?xf32>, vector<128xf32>
// CHECK: vector.store %{{.*}}, %[[B]][%{{.*}}] : memref<?xf32>, vector<1xf32>
// CHECK: gpu.func @paged_0_prefill({{.*}}: i32, %[[PS:.*]]: memref<?xi8>, %[[PB:.*]]: memref<?xf32>) workgroup({{.*}}) kernel
// CHECK: %[[SB:.*]] = uq.load_rows %[[PS]][%{{.*}}] mask %{{.*}} : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x4xi8>
// CHECK: %[[SA:.*]] = vector.bitcast %[[SB]] : vector<16x4xi8> to vector<16x4xf8E8M0FNU>
// CHECK: %[[BIAS:.*]] = vector.gather %[[PB]]
// CHECK: scf.for
// CHECK: %[[L:.*]] = uq.scaled_mma %{{.*}}, %[[SA]], %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>
// CHECK: %[[BC:.*]] = vector.shape_cast %[[BIAS]] : vector<16xf32> to vector<16x1xf32>
// CHECK: %[[BB:.*]] = vector.broadcast %[[BC]] : vector<16x1xf32> to vector<16x32xf32>
// CHECK: arith.addf %[[L]], %[[BB]] : vector<16x32xf32>
// CHECK: gpu.func @paged_0_merge({{.*}}: i32, %[[MV:.*]]: memref<?xf32>) kernel
// CHECK: vector.load %[[MV]][%{{.*}}] : memref<?xf32>, vector<128xf32>
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x2x136xi8>, %bt: tensor<?x?xi32>,
                 %lens: tensor<?xi32>, %qsl: tensor<?xi32>, %sinks: tensor<8xf32>,
                 %mk: tensor<2x128xf32>, %mv: tensor<2x128xf32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl sinks %sinks
      k_mean %mk v_mean %mv scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision fp8_e4m3_scaled>}
      : (tensor<?x8x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<8xf32>, tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
