// RUN: uq-opt %s --uq-assign-lane-layouts | FileCheck %s --check-prefix=LAYOUT
// RUN: uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes --canonicalize --cse | FileCheck %s
// RUN: uq-opt %s --uq-assign-lane-layouts="transpose-reads=false" --uq-distribute-to-lanes="transpose-reads=false" --canonicalize --cse | FileCheck %s --check-prefix=KMAJOR
// RUN: uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes --canonicalize --cse --uq-lower-kernel-abi --uq-gpu-to-rocdl | FileCheck %s --check-prefix=ROCDL
// RUN: uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes="transpose-row-pad=0" | FileCheck %s --check-prefix=NOPAD
// RUN: not uq-opt %s --uq-assign-lane-layouts --uq-distribute-to-lanes="transpose-row-pad=12" 2>&1 | FileCheck %s --check-prefix=BADPAD

// The PV tile of the decode kernel: FP4 values [32 tokens x 128 channels]
// decoded to bf16 and moved to the B operand of v_mfma_f32_16x16x32_bf16 (8
// consecutive tokens of one channel per lane). Layout decision "transposing
// reads": the staging layout is 2 tokens x 32 channels per lane (one E8M0
// group: a 16-byte load and one scale byte per token), the LDS buffer is
// row-major, each lane stores its 32-channel runs as they are (2 stores of
// 32 bf16), and reads its operand with two ds_read_b64_tr_b16 per
// 16-channel column tile (8 tiles: 16 transposing reads). Rows are padded by
// 16 bytes (option transpose-row-pad): 32 rows of 128 + 8 bf16.
// LAYOUT: uq.scaled_ext {{.*}}{uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [2, 32], lane_strides = [1, 16]>}
// CHECK-LABEL: gpu.func @pvwide
// CHECK-SAME: workgroup(%[[LDS:.*]] : memref<4352xbf16, #gpu.address_space<workgroup>>)
// CHECK-COUNT-2: vector.store %{{.*}}, %[[LDS]][%{{.*}}] : memref<4352xbf16, #gpu.address_space<workgroup>>, vector<32xbf16>
// CHECK: gpu.barrier
// CHECK-COUNT-16: amdgpu.transpose_load %[[LDS]][%{{.*}}] : memref<4352xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
// CHECK: gpu.barrier
// CHECK-COUNT-8: amdgpu.mfma 16x16x32
// Without it (both passes): staging of 4 tokens x 16 channels, a K-major
// buffer, runs of 4 tokens of one channel gathered
// from the lane's registers (16 stores of 4), 8 loads of 8.
// KMAJOR-LABEL: gpu.func @pvwide
// KMAJOR-NOT: amdgpu.transpose_load
// KMAJOR-COUNT-16: vector.store %{{.*}} vector<4xbf16>
// KMAJOR: gpu.barrier
// KMAJOR-COUNT-8: vector.load %{{.*}}workgroup>>, vector<8xbf16>
// ROCDL-COUNT-16: rocdl.ds.read.tr16.b64
// Unpadded: 32 rows of 128.
// NOPAD: workgroup(%{{.*}} : memref<4096xbf16, #gpu.address_space<workgroup>>)
// BADPAD: error: transpose-row-pad must be a non-negative multiple of 8 bytes (ds_read_b64_tr_b16 reads 8-byte aligned), got 12
gpu.module @k {
  gpu.func @pvwide(%a: memref<?xbf16>, %b: memref<?xi8>, %s: memref<?xi8>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %all16 = arith.constant dense<true> : vector<16xi1>
    %all32 = arith.constant dense<true> : vector<32xi1>
    %r16 = vector.step : vector<16xindex>
    %r32 = vector.step : vector<32xindex>
    %c32 = arith.constant dense<32> : vector<16xindex>
    %c64 = arith.constant dense<64> : vector<32xindex>
    %c2 = arith.constant dense<2> : vector<32xindex>
    %ao = arith.muli %r16, %c32 : vector<16xindex>
    %av = uq.load_rows %a[%ao] mask %all16 : memref<?xbf16>, vector<16xindex>, vector<16xi1> -> vector<16x32xbf16>
    %bo = arith.muli %r32, %c64 : vector<32xindex>
    %bb = uq.load_rows %b[%bo] mask %all32 : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
    %codes = vector.bitcast %bb : vector<32x64xi8> to vector<32x128xf4E2M1FN>
    %so = arith.muli %r32, %c2 : vector<32xindex>
    %sb = uq.load_rows %s[%so] mask %all32 : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x4xi8>
    %sc = vector.bitcast %sb : vector<32x4xi8> to vector<32x4xf8E8M0FNU>
    %bv = uq.scaled_ext %codes, %sc : vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU> -> vector<32x128xbf16>
    %z = arith.constant dense<0.0> : vector<16x128xf32>
    %o = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %av, %bv, %z : vector<16x32xbf16>, vector<32x128xbf16> into vector<16x128xf32>
    %oo = arith.muli %r16, %c32 : vector<16xindex>
    uq.store_rows %o, %out[%oo] mask %all16 : vector<16x128xf32>, memref<?xf32>, vector<16xindex>, vector<16xi1>
    gpu.return
  }
}
