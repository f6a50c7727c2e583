// RUN: uq-opt %s --split-input-file --convert-uq-to-wave | FileCheck %s
// RUN: uq-opt %s --split-input-file --convert-uq-to-wave --canonicalize | FileCheck %s --check-prefix=FOLD

// Decode attention with run-time sizes becomes wave-level kernels and host
// launches whose grids come from the operands' sizes. The partition count
// is the rule of docs/uq-compile.md: P = max(1, ceil(C / 2048),
// min(ceil(1024 / (S * Hkv)), ceil(C / 64))), C = max_blocks * block_size;
// P = 1 launches the single-pass kernel, more the partial and merge kernels.
// The launch description: symbolic shapes and grids.
// CHECK: module attributes {gpu.container_module, uq.kernels = [
// CHECK-SAME: grid = ["num_partitions", 1, "num_seqs"]{{.*}}name = "decode_0_partial"
// CHECK-SAME: params = {{{.*}}max_partition_tokens = 2048{{.*}}min_partition_tokens = 64{{.*}}target_workgroups = 1024
// CHECK-SAME: grid = [1, 1, "num_seqs"]{{.*}}name = "decode_0_single"
// CHECK-LABEL: func.func @decode
// CHECK-DAG: %[[S:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x8x128xbf16>
// CHECK-DAG: %[[NB:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x16x1x136xi8>
// CHECK-DAG: %[[MB:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x?xi32>
// CHECK: %[[CAP:.*]] = arith.muli %[[MB]], %{{.*}} : index
// CHECK: %[[LEAST:.*]] = arith.ceildivui %[[CAP]], %c2048 : index
// CHECK: %[[ROWS:.*]] = arith.maxui
// CHECK: %[[FILL:.*]] = arith.ceildivui %c1024, %[[ROWS]] : index
// CHECK: %[[MOST:.*]] = arith.ceildivui %[[CAP]], %c64 : index
// CHECK: %[[SPREAD:.*]] = arith.minui %[[FILL]], %[[MOST]] : index
// CHECK: %[[P0:.*]] = arith.maxui %[[LEAST]], %[[SPREAD]] : index
// CHECK: %[[P:.*]] = arith.maxui %[[P0]], %{{.*}} : index
// CHECK: gpu.launch_func @uq_kernels::@decode_0_query blocks in (%[[S]], %{{.*}}, %{{.*}})
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[P]], %{{.*}} : index
// CHECK: scf.if %[[ONE]] {
// CHECK: gpu.launch_func @uq_kernels::@decode_0_single blocks in (%{{.*}}, %{{.*}}, %[[S]])
// CHECK: } else {
// CHECK: gpu.launch_func @uq_kernels::@decode_0_partial blocks in (%[[P]], %{{.*}}, %[[S]])
// CHECK: gpu.launch_func @uq_kernels::@decode_0_merge blocks in (%{{.*}}, %[[S]], %{{.*}})
// CHECK: bufferization.to_tensor
// The partial kernel: buffers are 1-D, sizes are i32 scalars; one tile
// program per workgroup over 32-key tiles of whole-wave vectors.
// CHECK: gpu.func @decode_0_partial(%{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32) kernel
// CHECK: uq.load_rows %{{.*}} : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x128xi8>
// CHECK: scf.for
// Block-table entries per block of the tile (2 blocks of 16 tokens): one
// uniform load each, each block's slot offset in scalar arithmetic, a
// select per token.
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: arith.select %{{.*}} : vector<32xi1>, vector<32xindex>
// CHECK: uq.load_rows %{{.*}} -> vector<32x64xi8>
// CHECK: uq.scaled_mma %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
// CHECK: vector.multi_reduction <maximumf>
// CHECK: math.exp2
// CHECK: vector.multi_reduction <add>, {{.*}} {uq.reassociate}
// CHECK: uq.scaled_ext %{{.*}} : vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU> -> vector<32x128xbf16>
// CHECK: vector.contract {{.*}} : vector<16x32xbf16>, vector<32x128xbf16> into vector<16x128xf32>
// CHECK: uq.store_rows %{{.*}} : vector<16x128xf32>, memref<?xf32>, vector<16xindex>, vector<16xi1>
// CHECK: vector.scatter
// The merge: the first chunk of 32 partitions' maxima and sums gathered
// (one per partition) before the loops; each iteration combines a chunk's
// rows [32 x 128] with the weights carried from the previous one while the
// next chunk's are gathered; whole chunks, then the partial last chunk.
// CHECK: gpu.func @decode_0_merge
// CHECK: vector.gather %{{.*}} : memref<?xf32>, vector<32xindex>, vector<32xi1>, vector<32xf32> into vector<32xf32>
// CHECK: vector.multi_reduction <maximumf>, %{{.*}} [0] : vector<32x1xf32> to vector<1xf32>
// CHECK: scf.for {{.*}} -> (vector<1xf32>, vector<1xf32>, vector<1xf32>, vector<128xf32>, vector<32x1xf32>, vector<1xf32>)
// CHECK: uq.load_rows %{{.*}} : memref<?xf32>, vector<32xindex>, vector<32xi1> -> vector<32x128xf32>
// CHECK: vector.gather
// CHECK: vector.multi_reduction <add>, %{{.*}} {uq.reassociate} [0] : vector<32x128xf32> to vector<128xf32>
// CHECK: scf.for
// CHECK: uq.load_rows %{{.*}} -> vector<32x128xf32>
// CHECK: vector.store %{{.*}} : memref<?xf32>, vector<128xf32>
func.func @decode(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>,
                  %bt: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}

// -----

// Static sizes fold into the launches: 3 sequences x 1 KV head, a table of
// 32 blocks of 16 (C = 512): P = min(ceil(1024 / 3), 512 / 64) = 8, so the
// partial and merge kernels, not the single pass.
// FOLD-LABEL: func.func @static_decode
// FOLD-NOT: @static_decode_0_single blocks
// FOLD: gpu.launch_func @uq_kernels::@static_decode_0_partial blocks in (%c8, %c1, %c3)
// FOLD-NOT: @static_decode_0_single blocks
// FOLD: gpu.launch_func @uq_kernels::@static_decode_0_merge
func.func @static_decode(%q: tensor<3x4x64xf32>, %c: tensor<20x16x1x68xi8>,
                         %bt: tensor<3x32xi32>, %lens: tensor<3xi32>) -> tensor<3x4x64xbf16> {
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<3x4x64xf32>, tensor<20x16x1x68xi8>, tensor<3x32xi32>, tensor<3xi32>) -> tensor<3x4x64xbf16>
  return %o : tensor<3x4x64xbf16>
}

// -----

// The same stages for the baselines: FP8 keys multiply on the scaled MFMA
// with constant scales, FP8 values with FP8 probabilities; bf16 keys and
// values on vector.contract with the keys K-major.
// CHECK-LABEL: func.func @fp8
// CHECK: gpu.func @fp8_0_partial
// CHECK: uq.scaled_mma %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf8E4M3FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
// CHECK: vector.contract {{.*}} : vector<16x32xf8E4M3FN>, vector<32x128xf8E4M3FN> into vector<16x128xf32>
func.func @fp8(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x256xi8>,
               %bt: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.088
      {k_format = #uq.kv_format<fp8_e4m3>, v_format = #uq.kv_format<fp8_e4m3>,
       layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x8x128xbf16>, tensor<?x16x1x256xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}

// -----

// CHECK-LABEL: func.func @bf16
// CHECK: gpu.func @bf16_0_partial(%{{.*}}: memref<?xbf16>
// CHECK: vector.contract {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], {{.*}} : vector<16x128xbf16>, vector<32x128xbf16> into vector<16x32xf32>
// CHECK: vector.contract {{.*}} : vector<16x32xbf16>, vector<32x128xbf16> into vector<16x128xf32>
func.func @bf16(%q: tensor<?x4x128xbf16>, %c: tensor<?x16x2x512xi8>,
                %bt: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x4x128xf32> {
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.088
      {k_format = #uq.kv_format<bf16>, v_format = #uq.kv_format<bf16>,
       layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x4x128xbf16>, tensor<?x16x2x512xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x4x128xf32>
  return %o : tensor<?x4x128xf32>
}

// -----

// Block sizes that neither divide the 32-key tile nor are divided by it read
// an entry per key; block sizes the tile divides read one uniform entry.
// CHECK-LABEL: func.func @block5
// CHECK: gpu.func @block5_0_partial
// CHECK: vector.gather %{{.*}} : memref<?xi32>, vector<32xindex>, vector<32xi1>, vector<32xi32> into vector<32xi32>
// CHECK: gpu.func @block5_1_partial
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK-NOT: vector.gather
// CHECK: gpu.func @block5_1_merge
func.func @block5(%q: tensor<?x2x64xbf16>, %c5: tensor<?x5x1x68xi8>, %c64: tensor<?x64x1x68xi8>,
                  %bt: tensor<?x?xi32>, %lens: tensor<?xi32>) -> (tensor<?x2x64xf32>, tensor<?x2x64xf32>) {
  %o = uq.decode_attention %q, %c5, %bt, %lens scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x2x64xbf16>, tensor<?x5x1x68xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x2x64xf32>
  %p = uq.decode_attention %q, %c64, %bt, %lens scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x2x64xbf16>, tensor<?x64x1x68xi8>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x2x64xf32>
  return %o, %p : tensor<?x2x64xf32>, tensor<?x2x64xf32>
}

// -----

// The cache write: one (token, head) row per workgroup, z = 0 K, z = 1 V;
// the rotation in f64, group absmax by reduction, ties-down FP4 codes
// packed two per byte; the cache is copied and updated.
// CHECK-LABEL: func.func @write
// CHECK: memref.copy
// CHECK: gpu.launch_func @uq_kernels::@write_0_cache_write blocks in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: gpu.func @write_0_cache_write(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xi64>, %{{.*}}: memref<?xi8>, %{{.*}}: i32, %{{.*}}: i32) kernel
// CHECK: uq.rotate %{{.*}} : vector<64xf64>
// CHECK: vector.shape_cast %{{.*}} : vector<64xf32> to vector<2x32xf32>
// CHECK: vector.multi_reduction <maximumf>
// CHECK: vector.bitcast %{{.*}} : vector<64xi4> to vector<32xi8>
// CHECK: vector.store %{{.*}} : memref<?xi8>, vector<32xi8>
// CHECK: vector.store %{{.*}} : memref<?xi8>, vector<2xi8>
func.func @write(%k: tensor<?x1x64xf32>, %v: tensor<?x1x64xf32>, %s: tensor<?xi64>,
                 %cache: tensor<?x16x1x68xi8>) -> tensor<?x16x1x68xi8> {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?xi64> into tensor<?x16x1x68xi8>
  return %c : tensor<?x16x1x68xi8>
}

// -----

// Split-K in the dialect: the partial op becomes query + partial kernels
// with its own partition size; merge_partitions a merge kernel.
// CHECK: params = {block_size = 16 : i64{{.*}}partition_size = 64 : i64
// CHECK-LABEL: func.func @split
// CHECK: gpu.launch_func @uq_kernels::@split_0_query
// CHECK: gpu.launch_func @uq_kernels::@split_0_partial
// CHECK: gpu.launch_func @uq_kernels::@split_1_merge
func.func @split(%q: tensor<2x4x64xf32>, %c: tensor<8x16x1x68xi8>, %bt: tensor<2x4xi32>,
                 %lens: tensor<2xi32>) -> tensor<2x4x64xf32> {
  %o, %m, %l = uq.decode_attention_partial %q, %c, %bt, %lens scale 0.125 partition_size 64
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x4x64xf32>, tensor<8x16x1x68xi8>, tensor<2x4xi32>, tensor<2xi32>)
      -> (tensor<2x4x1x64xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  %r = uq.merge_partitions %o, %m, %l
      : (tensor<2x4x1x64xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> tensor<2x4x64xf32>
  return %r : tensor<2x4x64xf32>
}
