// RUN: uq-opt %s --uq-assign-lane-layouts | FileCheck %s --check-prefix=LAYOUT
// RUN: uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes --canonicalize --cse | FileCheck %s

// A hand-written PV tile (bf16 [16 x 32] x [32 x 16]) and a row rotation.
// The B operand of v_mfma_f32_16x16x32_bf16 holds 8 consecutive K (rows of
// the tile) per lane: loaded that way every lane would make 8 two-byte
// loads, so the tile is loaded in a staging layout (4 rows x 2 columns per
// lane) and moved to the operand layout through LDS.
// LAYOUT: uq.load_rows {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 1], threads = [8, 8], elems = [4, 2], lane_strides = [1, 8]>} : {{.*}} -> vector<32x16xbf16>
// LAYOUT: uq.to_layout %{{.*}} {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [4, 16], elems = [8, 1], lane_strides = [16, 1]>} : vector<32x16xbf16>
// LAYOUT: vector.contract
// LAYOUT: uq.rotate %{{.*}} {uq.layout = #uq.lane_layout<batch = [1], threads = [64], elems = [2], lane_strides = [1]>} : vector<128xf64>

// The conversion: one LDS buffer (workgroup attribution) of the tile, laid
// out K-major so that each lane writes 4 consecutive rows of a column at
// once and reads its 8 K-consecutive values with one load; a barrier
// between writes and reads, and after the reads.
// CHECK: gpu.func @pv({{.*}}) workgroup(%[[LDS:.*]] : memref<512xbf16, #gpu.address_space<workgroup>>) kernel
// CHECK: vector.store %{{.*}}, %[[LDS]][%{{.*}}] : memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// CHECK: vector.store %{{.*}}, %[[LDS]][%{{.*}}] : memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// CHECK: gpu.barrier
// CHECK: vector.load %[[LDS]][%{{.*}}] : memref<512xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: amdgpu.mfma 16x16x32 %{{.*}} * %{{.*}} + %{{.*}} blgp = none : vector<8xbf16>, vector<8xbf16>, vector<4xf32>
// The rotation: span 1 inside each lane's pair, spans 2..64 across lanes
// (xor 1..32) on both 32-bit halves of each f64.
// CHECK: arith.addf %{{.*}} : f64
// CHECK: arith.subf %{{.*}} : f64
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c64_i32 : i32
// CHECK: gpu.shuffle xor %{{.*}}, %c32_i32, %c64_i32 : i32
// CHECK: gpu.return
gpu.module @k {
  gpu.func @pv(%a: memref<?xbf16>, %b: memref<?xbf16>, %x: memref<?xf64>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %all16 = arith.constant dense<true> : vector<16xi1>
    %all32 = arith.constant dense<true> : vector<32xi1>
    %r16 = vector.step : vector<16xindex>
    %r32 = vector.step : vector<32xindex>
    %c32 = arith.constant dense<32> : vector<16xindex>
    %c16 = arith.constant dense<16> : vector<32xindex>
    %ao = arith.muli %r16, %c32 : vector<16xindex>
    %av = uq.load_rows %a[%ao] mask %all16 : memref<?xbf16>, vector<16xindex>, vector<16xi1> -> vector<16x32xbf16>
    %bo = arith.muli %r32, %c16 : vector<32xindex>
    %bv = uq.load_rows %b[%bo] mask %all32 : memref<?xbf16>, vector<32xindex>, vector<32xi1> -> vector<32x16xbf16>
    %z = arith.constant dense<0.0> : vector<16x16xf32>
    %o = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %av, %bv, %z : vector<16x32xbf16>, vector<32x16xbf16> into vector<16x16xf32>
    %oo = arith.muli %r16, %c32 : vector<16xindex>
    uq.store_rows %o, %out[%oo] mask %all16 : vector<16x16xf32>, memref<?xf32>, vector<16xindex>, vector<16xi1>
    %c0 = arith.constant 0 : index
    %xv = vector.load %x[%c0] : memref<?xf64>, vector<128xf64>
    %xr = uq.rotate %xv : vector<128xf64>
    vector.store %xr, %x[%c0] : memref<?xf64>, vector<128xf64>
    gpu.return
  }
}
