// RUN: uq-opt %s --uq-assign-lane-layouts | FileCheck %s
// RUN: uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes --canonicalize --cse | FileCheck %s --check-prefix=LANES
// RUN: uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes="dpp-reductions=false" --canonicalize --cse | FileCheck %s --check-prefix=SHUF

// A wave-level QK tile written by hand (16 FP8 query rows x 16 FP4 keys of
// 128 channels): the scaled MFMA fixes its result layout (VGPR i of lane l
// holds D[4 (l / 16) + i][l % 16]) and demands the gfx950 operand layouts of
// its operands (gfx950-notes.md), which the loads take: each lane loads
// 2 x 16 query bytes (K 16g.. and 64+16g..), 16 key bytes (K 32g..) and one
// scale byte; the row maximum's layout is the projection of the result's.
// CHECK: vector.step {uq.layout = #uq.lane_layout<batch = [1], threads = [16], elems = [1], lane_strides = [1]>}
// CHECK: uq.load_rows {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 2], threads = [16, 4], elems = [1, 16], lane_strides = [1, 16]>} : {{.*}} -> vector<16x128xi8>
// CHECK: uq.load_rows {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 16], lane_strides = [1, 16]>} : {{.*}} -> vector<16x64xi8>
// CHECK: vector.bitcast {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 32], lane_strides = [1, 16]>} : vector<16x64xi8> to vector<16x128xf4E2M1FN>
// CHECK: uq.load_rows {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 1], lane_strides = [1, 16]>} : {{.*}} -> vector<16x4xi8>
// CHECK: uq.scaled_mma {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>}
// CHECK: vector.multi_reduction <maximumf>, {{.*}}{uq.layout = #uq.lane_layout<batch = [1], threads = [4], elems = [4], lane_strides = [16]>}

// Per lane: the lane id, 16-byte loads, one scaled MFMA with scalar E8M0
// scales, the row maximum over the 16 lanes of a row (by DPP within the
// row: quad_perm xor 1, xor 2, row_half_mirror, row_mirror, combined with
// maximumf, which propagates NaN: the reduction has no uq.max_ignores_nan;
// by xor shuffles with dpp-reductions=false), and stores from the
// first copy of each replicated element only.
// LANES: %[[LANE:.*]] = gpu.thread_id x
// LANES: vector.load %{{.*}} : memref<?xi8>, vector<16xi8>
// LANES: vector.load %{{.*}} : memref<?xi8>, vector<16xi8>
// LANES: vector.load %{{.*}} : memref<?xi8>, vector<16xi8>
// LANES: vector.load %{{.*}} : memref<?xi8>, vector<1xi8>
// LANES: amdgpu.scaled_mfma 16x16x128 (%{{.*}}[0] * %{{.*}}) * (%{{.*}}[0] * %{{.*}}) + %{{.*}} : f8E8M0FNU, vector<32xf8E4M3FN>, f8E8M0FNU, vector<32xf4E2M1FN>, vector<4xf32>
// LANES-NOT: gpu.shuffle
// LANES: %[[P1:.*]] = amdgpu.dpp %{{.*}} %[[X0:.*]] quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32]) {bound_ctrl = true} : f32
// LANES: %[[X1:.*]] = arith.maximumf %[[X0]], %[[P1]] : f32
// LANES: %[[P2:.*]] = amdgpu.dpp %{{.*}} %[[X1]] quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32]) {bound_ctrl = true} : f32
// LANES: %[[X2:.*]] = arith.maximumf %[[X1]], %[[P2]] : f32
// LANES: %[[P4:.*]] = amdgpu.dpp %{{.*}} %[[X2]] row_half_mirror {bound_ctrl = true} : f32
// LANES: %[[X4:.*]] = arith.maximumf %[[X2]], %[[P4]] : f32
// LANES: %[[P8:.*]] = amdgpu.dpp %{{.*}} %[[X4]] row_mirror {bound_ctrl = true} : f32
// LANES: arith.maximumf %[[X4]], %[[P8]] : f32
// SHUF: gpu.shuffle xor %{{.*}}, %c1_i32, %c64_i32 : f32
// SHUF: gpu.shuffle xor %{{.*}}, %c2_i32, %c64_i32 : f32
// SHUF: gpu.shuffle xor %{{.*}}, %c4_i32, %c64_i32 : f32
// SHUF: gpu.shuffle xor %{{.*}}, %c8_i32, %c64_i32 : f32
// SHUF-NOT: amdgpu.dpp
// LANES: arith.andi %[[LANE]], %c15 : index
// LANES: memref.store
// LANES: gpu.return
gpu.module @k {
  gpu.func @qk(%q: memref<?xi8>, %k: memref<?xi8>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %rows = vector.step : vector<16xindex>
    %c128 = arith.constant dense<128> : vector<16xindex>
    %c68 = arith.constant dense<68> : vector<16xindex>
    %c64 = arith.constant dense<64> : vector<16xindex>
    %c16 = arith.constant dense<16> : vector<16xindex>
    %all = arith.constant dense<true> : vector<16xi1>
    %qoff = arith.muli %rows, %c128 : vector<16xindex>
    %qb = uq.load_rows %q[%qoff] mask %all : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x128xi8>
    %qa = vector.bitcast %qb : vector<16x128xi8> to vector<16x128xf8E4M3FN>
    %s127 = arith.constant dense<127> : vector<16x4xi8>
    %qs = vector.bitcast %s127 : vector<16x4xi8> to vector<16x4xf8E8M0FNU>
    %koff = arith.muli %rows, %c68 : vector<16xindex>
    %kb = uq.load_rows %k[%koff] mask %all : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x64xi8>
    %kc = vector.bitcast %kb : vector<16x64xi8> to vector<16x128xf4E2M1FN>
    %ksoff = arith.addi %koff, %c64 : vector<16xindex>
    %ksb = uq.load_rows %k[%ksoff] mask %all : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x4xi8>
    %ks = vector.bitcast %ksb : vector<16x4xi8> to vector<16x4xf8E8M0FNU>
    %z = arith.constant dense<0.0> : vector<16x16xf32>
    %s = uq.scaled_mma %qa, %qs, %kc, %ks, %z : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<16x128xf4E2M1FN>, vector<16x4xf8E8M0FNU>, vector<16x16xf32>
    %m = arith.constant dense<0xFF800000> : vector<16xf32>
    %mx = vector.multi_reduction <maximumf>, %s, %m [1] : vector<16x16xf32> to vector<16xf32>
    %ooff = arith.muli %rows, %c16 : vector<16xindex>
    uq.store_rows %s, %out[%ooff] mask %all : vector<16x16xf32>, memref<?xf32>, vector<16xindex>, vector<16xi1>
    %c0 = arith.constant 0 : index
    vector.scatter %out[%c0] [%rows], %all, %mx : memref<?xf32>, vector<16xindex>, vector<16xi1>, vector<16xf32>
    gpu.return
  }
}
