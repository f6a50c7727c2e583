// RUN: uq-opt %s --convert-uq-to-wave=prefill-shared-v=true | FileCheck %s
// RUN: uq-opt %s --convert-uq-to-wave=prefill-shared-v=false | FileCheck %s --check-prefix=OLD
// RUN: uq-opt %s --convert-uq-to-wave=prefill-waves=2 | FileCheck %s --check-prefix=W2
// RUN: not uq-opt %s --convert-uq-to-wave=prefill-waves=3 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not uq-opt %s --convert-uq-to-wave=prefill-waves=16 2>&1 | FileCheck %s --check-prefix=ERR16

// The prefill kernel with W waves per workgroup (prefill-waves, default
// 4): the workgroup is 64 * W lanes over W * 16 / G query tokens (GQA 8:
// 2 tokens per wave, 8 per workgroup), wave w owns the tokens from tok0 +
// 2 w; each key tile's slot bytes are copied into LDS by all waves (each
// its share of the 32 tokens), then every wave reads its K and V operands
// from the copy.
// CHECK: block = array<i64: 256, 1, 1>, grid = ["num_query_tiles", 1, "num_partitions"]
// CHECK-SAME: name = "paged_0_prefill"
// CHECK-SAME: tokens_per_tile = 8 : i64, tokens_per_wave = 2 : i64, waves_per_workgroup = 4 : i64
// tiles = num_tokens / 8 + num_seqs + 2, launched with 256 lanes.
// CHECK-LABEL: func.func @paged
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[TD:.*]] = arith.divui %{{.*}}, %[[C8]] : index
// CHECK: %[[TILES:.*]] = arith.addi %[[TD]], %{{.*}} : index
// CHECK: gpu.launch_func @uq_kernels::@paged_0_prefill blocks in (%[[TILES]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})
// Two LDS copies of a tile's keys (uq4, D = 128: K codes 32 x (64 + 16
// pad), K scales 32 x 4 bytes = 2688, twice) and two of its values
// converted to bf16 once per workgroup (32 rows
// of 128 + 8 pad bf16 = 4352 elements, twice; option prefill-shared-v,
// on by default): the first tile is copied
// before the loop, each wave converting its share of the values (tokens
// [8 w, 8 w + 8): an 8 x 64 byte code tile and its scales) into the bf16
// tile; the copy is not under a branch, only each uniform block-table read
// is (an scf.if yielding the entry, or 0 when the loop runs no tile), so
// that the query's loads are waited for before the loop on every path; in the loop, the loads of the next tile are issued first, the
// products read the current copies (V every row, in bf16), then the next
// tile is stored into the other copies (the wave's share of V converted)
// and one barrier ends the iteration.
// CHECK: gpu.func @paged_0_prefill({{.*}} workgroup(%[[V:arg[0-9]+]] : memref<8704xbf16, #gpu.address_space<workgroup>>, %[[LDS:arg[0-9]+]] : memref<5376xi8, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// The wave's first token: tok0 + 2 w; its share of a key tile: tokens
// [8 w, 8 w + 8).
// CHECK: %[[WAVE:.*]] = gpu.subgroup_id : index
// CHECK: arith.muli %[[WAVE]], %c2
// CHECK: arith.muli %[[WAVE]], %c8
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK-NEXT: memref.load %arg2
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK: uq.load_rows %arg1[{{.*}} {uq.lanes_per_row = 4 : i64} : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
// CHECK: uq.store_rows %{{.*}}, %[[LDS]][{{.*}} : vector<32x64xi8>, memref<5376xi8, #gpu.address_space<workgroup>>
// CHECK: uq.store_rows %{{.*}}, %[[LDS]][{{.*}} : vector<32x4xi8>
// CHECK: uq.load_rows %arg1[{{.*}} {uq.lanes_per_row = 8 : i64} : memref<?xi8>, vector<8xindex>, vector<8xi1> -> vector<8x64xi8>
// CHECK: uq.load_rows %arg1[{{.*}} -> vector<8x4xi8>
// CHECK: uq.scaled_ext {{.*}} -> vector<8x128xbf16>
// CHECK: uq.store_rows %{{.*}}, %[[V]][{{.*}} : vector<8x128xbf16>
// The block table one tile ahead: the second tile's entries (block size
// 16: two per 32-token tile) are read before the loop, each under the
// loop's guard, and carried; iteration i reads tile i + 2's entries first
// and takes tile i + 1's (slots of the next K tile and of the wave's V
// share) from the carried values, with no table read between.
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK-NEXT: memref.load %arg2
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK-NEXT: memref.load %arg2
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16x128xf32>, i32, i32)
// CHECK: memref.load %arg2
// CHECK: memref.load %arg2
// CHECK-NOT: memref.load %arg2
// CHECK: %[[NEXT:.*]] = uq.load_rows %arg1[{{.*}} -> vector<32x64xi8>
// CHECK: %[[NEXTV:.*]] = uq.load_rows %arg1[{{.*}} -> vector<8x64xi8>
// CHECK: uq.load_rows %[[LDS]][{{.*}} -> vector<32x64xi8>
// CHECK: uq.scaled_mma
// CHECK: uq.load_rows %[[V]][{{.*}} -> vector<32x128xbf16>
// CHECK-NEXT: vector.contract
// CHECK: uq.store_rows %[[NEXT]], %[[LDS]]
// CHECK: vector.bitcast %[[NEXTV]]
// CHECK: uq.scaled_ext
// CHECK: uq.store_rows %{{.*}}, %[[V]]
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// Without the shared value tile (prefill-shared-v=false) the copy holds
// the value codes and scales too (5376 bytes per tile) and every wave
// converts the whole [32 x 128] value tile.
// OLD: gpu.func @paged_0_prefill({{.*}} workgroup(%[[LDS:arg[0-9]+]] : memref<10752xi8, #gpu.address_space<workgroup>>) kernel
// OLD: scf.for
// OLD: uq.scaled_mma
// OLD: uq.load_rows %[[LDS]][{{.*}} -> vector<32x64xi8>
// OLD: uq.scaled_ext {{.*}} -> vector<32x128xbf16>
// OLD: vector.contract
// OLD: gpu.barrier
// OLD-NEXT: scf.yield
// W2: block = array<i64: 128, 1, 1>
// W2-SAME: name = "paged_0_prefill"
// W2-SAME: tokens_per_tile = 4 : i64, tokens_per_wave = 2 : i64, waves_per_workgroup = 2 : i64
// ERR: error: 'uq.paged_attention' op prefill-waves 3 is not supported (1, 2, 4 or 8 waves per workgroup
// ERR16: error: 'uq.paged_attention' op prefill-waves 16 is not supported
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
