// RUN: uq-opt %s --convert-uq-to-wave=prefill-rows=32 | FileCheck %s
// RUN: not uq-opt %s --convert-uq-to-wave=prefill-rows=24 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not uq-opt %s --convert-uq-to-wave=prefill-rows=64 2>&1 | FileCheck %s --check-prefix=ERR64

// The prefill kernel with R MFMA rows per wave (prefill-rows, 16 or 32,
// default 16):
// R / G query tokens x the G heads of the KV head in one wave (GQA 8, R =
// 32: 4 tokens per wave, 16 per 4-wave workgroup); the query, logits,
// probabilities and accumulator are [R x ...] tiles, the K and V operands
// of a key tile stay [32 x ...] (shared by the wave's 16-row MFMA tiles).
// CHECK: name = "paged_0_prefill"
// CHECK-SAME: rows_per_wave = 32 : i64
// CHECK-SAME: tokens_per_tile = 16 : i64, tokens_per_wave = 4 : i64, waves_per_workgroup = 4 : i64
// CHECK: gpu.func @paged_0_prefill
// CHECK: uq.load_rows {{.*}} -> vector<32x128xi8>
// The key loop in three parts: the masked tiles before the full ones, the
// full tiles (every key valid and seen by every row of the workgroup: no
// masks), the masked tiles after them.
// CHECK: scf.for
// CHECK: uq.scaled_mma {{.*}} : vector<32x128xf8E4M3FN>, vector<32x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<32x32xf32>
// CHECK: arith.cmpf oge, {{.*}} : vector<32x32xf32>
// CHECK: arith.select {{.*}} : vector<32x32xi1>, vector<32x32xf32>
// CHECK: math.exp2 {{.*}} : vector<32x32xf32>
// CHECK: vector.contract {{.*}} : vector<32x32xbf16>, vector<32x128xbf16> into vector<32x128xf32>
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: uq.scaled_mma
// CHECK-NOT: arith.cmpf oge
// CHECK: math.exp2 {{.*}} : vector<32x32xf32>
// CHECK: vector.contract
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: uq.scaled_mma
// CHECK: arith.cmpf oge, {{.*}} : vector<32x32xf32>
// ERR: error: 'uq.paged_attention' op prefill-rows 24 is not supported (16 or 32 MFMA rows per wave
// 64 rows (four tiles) would spill: the accumulators alone take 128 of a
// lane's registers.
// ERR64: error: 'uq.paged_attention' op prefill-rows 64 is not supported
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}

