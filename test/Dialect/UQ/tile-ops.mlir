// RUN: uq-opt %s --split-input-file | FileCheck %s
// RUN: uq-opt %s --split-input-file | uq-opt --split-input-file | FileCheck %s
// RUN: uq-opt %s --split-input-file --mlir-print-op-generic | uq-opt --split-input-file | FileCheck %s

// The wave-level tile ops and #uq.lane_layout round-trip in the custom and
// the generic form.

// CHECK-LABEL: func @rows
func.func @rows(%buf: memref<?xi8>, %out: memref<?xi8>, %off: vector<32xindex>,
                %m: vector<32xi1>) {
  // CHECK: uq.load_rows %{{.*}}[%{{.*}}] mask %{{.*}} : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
  %a = uq.load_rows %buf[%off] mask %m : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
  // CHECK: uq.load_rows %{{.*}} {width = 32 : i64} : memref<?xi8>
  %b = uq.load_rows %buf[%off] mask %m {width = 32} : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
  // CHECK: uq.store_rows %{{.*}}, %{{.*}}[%{{.*}}] mask %{{.*}} : vector<32x64xi8>, memref<?xi8>, vector<32xindex>, vector<32xi1>
  uq.store_rows %b, %out[%off] mask %m : vector<32x64xi8>, memref<?xi8>, vector<32xindex>, vector<32xi1>
  return
}

// -----

// CHECK-LABEL: func @mx
func.func @mx(%q: vector<16x128xf8E4M3FN>, %qs: vector<16x4xf8E8M0FNU>,
              %k: vector<32x128xf4E2M1FN>, %ks: vector<32x4xf8E8M0FNU>,
              %acc: vector<16x32xf32>) -> (vector<16x32xf32>, vector<32x128xbf16>) {
  // CHECK: uq.scaled_mma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
  %s = uq.scaled_mma %q, %qs, %k, %ks, %acc : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
  // CHECK: uq.scaled_ext %{{.*}}, %{{.*}} : vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU> -> vector<32x128xbf16>
  %v = uq.scaled_ext %k, %ks : vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU> -> vector<32x128xbf16>
  return %s, %v : vector<16x32xf32>, vector<32x128xbf16>
}

// -----

// uq.rotate on a wave tile; a lane layout on a value.
// CHECK-LABEL: func @rotate_tile
func.func @rotate_tile(%x: vector<16x128xf64>) -> vector<16x128xf64> {
  // CHECK: uq.rotate %{{.*}} : vector<16x128xf64>
  %r = uq.rotate %x : vector<16x128xf64>
  // CHECK: uq.to_layout %{{.*}} {uq.layout = #uq.lane_layout<batch = [1, 2], threads = [4, 16], elems = [4, 4], lane_strides = [16, 1]>} : vector<16x128xf64>
  %l = uq.to_layout %r {uq.layout = #uq.lane_layout<batch = [1, 2], threads = [4, 16], elems = [4, 4], lane_strides = [16, 1]>} : vector<16x128xf64>
  return %l : vector<16x128xf64>
}
