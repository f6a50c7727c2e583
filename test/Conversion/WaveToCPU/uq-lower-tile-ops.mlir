// RUN: uq-opt %s --split-input-file --uq-lower-tile-ops | FileCheck %s

// uq.load_rows: one guarded load per row, padded with zeros past the width.
// CHECK-LABEL: func.func @load
// CHECK-NOT: uq.load_rows
// CHECK: scf.if
// CHECK: vector.load %{{.*}} : memref<?xi8>, vector<2xi8>
// CHECK: vector.insert_strided_slice %{{.*}} {offsets = [0], strides = [1]} : vector<2xi8> into vector<4xi8>
// CHECK: } else {
// CHECK: vector.insert %{{.*}} [0] : vector<4xi8> into vector<2x4xi8>
// CHECK: vector.insert %{{.*}} [1] : vector<4xi8> into vector<2x4xi8>
func.func @load(%b: memref<?xi8>, %o: vector<2xindex>, %m: vector<2xi1>) -> vector<2x4xi8> {
  %r = uq.load_rows %b[%o] mask %m {width = 2} : memref<?xi8>, vector<2xindex>, vector<2xi1> -> vector<2x4xi8>
  return %r : vector<2x4xi8>
}

// -----

// uq.scaled_mma: rows staged in buffers, loops over (m, n), per K-block an
// f64 sum times both decoded scales, one rounding to f32.
// CHECK-LABEL: func.func @mma
// CHECK-NOT: uq.scaled_mma
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf %{{.*}} : vector<32xf64>
// CHECK: vector.reduction <add>, %{{.*}} : vector<32xf64> into f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
func.func @mma(%a: vector<16x32xf8E4M3FN>, %sa: vector<16x1xf8E8M0FNU>,
               %b: vector<16x32xf4E2M1FN>, %sb: vector<16x1xf8E8M0FNU>,
               %c: vector<16x16xf32>) -> vector<16x16xf32> {
  %r = uq.scaled_mma %a, %sa, %b, %sb, %c : vector<16x32xf8E4M3FN>, vector<16x1xf8E8M0FNU>, vector<16x32xf4E2M1FN>, vector<16x1xf8E8M0FNU>, vector<16x16xf32>
  return %r : vector<16x16xf32>
}

// -----

// uq.rotate on a tile: butterfly stages of span 1, 2, ... (partners by
// shuffle), then one multiply by 1/sqrt(D).
// CHECK-LABEL: func.func @rotate
// CHECK-NOT: uq.rotate
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 0, 3, 2] : vector<4xf64>, vector<4xf64>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [2, 3, 0, 1] : vector<4xf64>, vector<4xf64>
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<4xf64>
func.func @rotate(%x: vector<4xf64>) -> vector<4xf64> {
  %r = uq.rotate %x : vector<4xf64>
  return %r : vector<4xf64>
}

// -----

// Float sums are a perfect binary tree in element order (even + odd
// elements, halving), then the accumulator; maxima keep upstream's lowering.
// CHECK-LABEL: func.func @tree
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6] : vector<8xf32>, vector<8xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7] : vector<8xf32>, vector<8xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2] : vector<4xf32>, vector<4xf32>
// CHECK: vector.multi_reduction <maximumf>
func.func @tree(%x: vector<2x8xf32>, %a: vector<2xf32>) -> (vector<2xf32>, vector<2xf32>) {
  %s = vector.multi_reduction <add>, %x, %a [1] : vector<2x8xf32> to vector<2xf32>
  %m = vector.multi_reduction <maximumf>, %x, %a [1] : vector<2x8xf32> to vector<2xf32>
  return %s, %m : vector<2xf32>, vector<2xf32>
}
