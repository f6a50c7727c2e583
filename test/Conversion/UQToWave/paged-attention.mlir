// RUN: uq-opt %s --convert-uq-to-wave=prefill-waves=1 | FileCheck %s

// uq.paged_attention (prefill chunks and decodes in one batch) becomes three
// wave-level kernels: decode's query kernel over the tokens, the prefill
// kernel over (query tiles of all sequences, KV heads, partitions) and
// decode's merge over the tokens. GQA 8: a tile is 2 tokens x 8 heads.
// One wave per prefill workgroup here (prefill-waves=1: the cache is read
// directly); paged-attention-waves.mlir has W = 4.
// CHECK: module attributes {gpu.container_module, uq.kernels = [
// CHECK-SAME: name = "paged_0_query"
// CHECK-SAME: name = "query_start_loc", shape = ["num_query_starts"]
// CHECK-SAME: block = array<i64: 64, 1, 1>, grid = ["num_query_tiles", 1, "num_partitions"]
// CHECK-SAME: name = "paged_0_prefill", op = "paged_attention_partial"
// CHECK-SAME: tokens_per_tile = 2 : i64, tokens_per_wave = 2 : i64, waves_per_workgroup = 1 : i64, window = 100 : i64
// CHECK-SAME: grid = [8, "num_tokens", 1]
// CHECK-SAME: name = "paged_0_merge"
// CHECK-LABEL: func.func @paged
// CHECK-DAG: %[[T:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x8x128xbf16>
// CHECK-DAG: %[[ROWS:.*]] = tensor.dim %arg2, %c0{{.*}} : tensor<?x?xi32>
// CHECK-DAG: %[[LENS:.*]] = tensor.dim %arg3, %{{.*}} : tensor<?xi32>
// num_seqs = min(dim(seq_lens), dim(block_tables, 0)).
// CHECK: %[[S:.*]] = arith.minui %[[LENS]], %[[ROWS]] : index
// CHECK: %[[P:.*]] = arith.maxui
// tiles = num_tokens / 2 + num_seqs + 2.
// CHECK: %[[S2:.*]] = arith.addi %[[S]], %{{.*}} : index
// CHECK: %[[TD:.*]] = arith.divui %[[T]], %{{.*}} : index
// CHECK: %[[TILES:.*]] = arith.addi %[[TD]], %[[S2]] : index
// CHECK: gpu.launch_func @uq_kernels::@paged_0_query blocks in (%[[T]], %{{.*}}, %{{.*}})
// CHECK: gpu.launch_func @uq_kernels::@paged_0_prefill blocks in (%[[TILES]], %{{.*}}, %[[P]])
// CHECK: gpu.launch_func @uq_kernels::@paged_0_merge blocks in (%{{.*}}, %[[T]], %{{.*}})
// The prefill kernel: the tile's sequence by a scan over query_start_loc,
// its length under a guard, the query rows, the key loop with the scaled
// MFMA, the causal and window masks, the online softmax, PV, and the
// partial results.
// CHECK: gpu.func @paged_0_prefill
// CHECK: scf.for {{.*}} -> (index, index, index, index)
// CHECK: memref.load %arg4
// CHECK: scf.if %{{.*}} -> (index)
// CHECK: memref.load %arg3
// CHECK: uq.load_rows %arg0{{.*}} -> vector<16x128xi8>
// CHECK: scf.for
// CHECK: uq.scaled_mma %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
// CHECK: arith.cmpf oge, %{{.*}} : vector<16x32xf32>
// CHECK: arith.cmpf olt, %{{.*}} : vector<16x32xf32>
// CHECK: vector.multi_reduction <maximumf>
// CHECK: arith.cmpf oeq, %{{.*}} : vector<16xf32>
// CHECK: vector.multi_reduction <add>, {{.*}} {uq.reassociate}
// CHECK: vector.contract {{.*}} : vector<16x32xbf16>, vector<32x128xbf16> into vector<16x128xf32>
// CHECK: uq.store_rows %{{.*}} : vector<16x128xf32>, memref<?xf32>, vector<16xindex>, vector<16xi1>
// CHECK: vector.scatter
// CHECK: vector.scatter
// CHECK: gpu.func @paged_0_merge
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 window 100 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
