// RUN: uq-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of the wave-level tile ops and #uq.lane_layout.

func.func @f(%buf: memref<?xi8>, %off: vector<16xindex>, %m: vector<32xi1>) {
  // expected-error @+1 {{needs one offset and one mask bit per row: 32 rows, 16 offsets, 32 mask bits}}
  %a = uq.load_rows %buf[%off] mask %m : memref<?xi8>, vector<16xindex>, vector<32xi1> -> vector<32x64xi8>
  return
}

// -----

func.func @f(%buf: memref<?xi8>, %off: vector<32xindex>, %m: vector<32xi1>) {
  // expected-error @+1 {{result element type 'i32' differs from the buffer's 'i8'}}
  %a = uq.load_rows %buf[%off] mask %m : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi32>
  return
}

// -----

func.func @f(%buf: memref<?xi8>, %off: vector<32xindex>, %m: vector<32xi1>) {
  // expected-error @+1 {{width 65 must be in [1, 64]}}
  %a = uq.load_rows %buf[%off] mask %m {width = 65} : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
  return
}

// -----

func.func @f(%v: vector<32x64xf32>, %buf: memref<?xi8>, %off: vector<32xindex>, %m: vector<32xi1>) {
  // expected-error @+1 {{value element type 'f32' differs from the buffer's 'i8'}}
  uq.store_rows %v, %buf[%off] mask %m : vector<32x64xf32>, memref<?xi8>, vector<32xindex>, vector<32xi1>
  return
}

// -----

func.func @f(%q: vector<16x128xf8E4M3FN>, %qs: vector<16x4xf8E8M0FNU>, %k: vector<32x64xf4E2M1FN>, %ks: vector<32x2xf8E8M0FNU>, %acc: vector<16x32xf32>) {
  // expected-error @+1 {{operands must agree on K}}
  %s = uq.scaled_mma %q, %qs, %k, %ks, %acc : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x64xf4E2M1FN>, vector<32x2xf8E8M0FNU>, vector<16x32xf32>
  return
}

// -----

func.func @f(%q: vector<16x48xf8E4M3FN>, %qs: vector<16x1xf8E8M0FNU>, %k: vector<32x48xf4E2M1FN>, %ks: vector<32x1xf8E8M0FNU>, %acc: vector<16x32xf32>) {
  // expected-error @+1 {{a K dimension 48 must be a multiple of 32}}
  %s = uq.scaled_mma %q, %qs, %k, %ks, %acc : vector<16x48xf8E4M3FN>, vector<16x1xf8E8M0FNU>, vector<32x48xf4E2M1FN>, vector<32x1xf8E8M0FNU>, vector<16x32xf32>
  return
}

// -----

func.func @f(%q: vector<16x128xf8E4M3FN>, %qs: vector<16x2xf8E8M0FNU>, %k: vector<32x128xf4E2M1FN>, %ks: vector<32x4xf8E8M0FNU>, %acc: vector<16x32xf32>) {
  // expected-error @+1 {{a scales must be 16x4 (one per 32 elements), got 'vector<16x2xf8E8M0FNU>'}}
  %s = uq.scaled_mma %q, %qs, %k, %ks, %acc : vector<16x128xf8E4M3FN>, vector<16x2xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
  return
}

// -----

func.func @f(%q: vector<16x128xf8E4M3FN>, %qs: vector<16x4xf8E8M0FNU>, %k: vector<32x128xf4E2M1FN>, %ks: vector<32x4xf8E8M0FNU>, %acc: vector<16x16xf32>) {
  // expected-error @+1 {{accumulator must be 16x32 (rows of a x rows of b), got 'vector<16x16xf32>'}}
  %s = uq.scaled_mma %q, %qs, %k, %ks, %acc : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x16xf32>
  return
}

// -----

func.func @f(%k: vector<32x128xf4E2M1FN>, %ks: vector<32x4xf8E8M0FNU>) {
  // expected-error @+1 {{result shape must equal the codes' shape 'vector<32x128xf4E2M1FN>'}}
  %v = uq.scaled_ext %k, %ks : vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU> -> vector<32x64xbf16>
  return
}

// -----

func.func @f(%x: vector<16x96xf64>) {
  // expected-error @+1 {{last dimension must be a static power of two, got 96}}
  %r = uq.rotate %x : vector<16x96xf64>
  return
}

// -----

// expected-error @+1 {{lane_layout dimension 0: 3 lanes of stride 16 must be powers of two within 64 lanes}}
func.func @f() attributes {l = #uq.lane_layout<batch = [1], threads = [3], elems = [1], lane_strides = [16]>} { return }

// -----

// expected-error @+1 {{lane_layout dimensions share lane bits}}
func.func @f() attributes {l = #uq.lane_layout<batch = [1, 1], threads = [4, 16], elems = [1, 1], lane_strides = [1, 1]>} { return }

// -----

// expected-error @+1 {{lane_layout needs batch, threads, elems and lane_strides of one equal, non-zero rank}}
func.func @f() attributes {l = #uq.lane_layout<batch = [1, 1], threads = [4], elems = [1], lane_strides = [1]>} { return }

// -----

// expected-error @+1 {{lane_layout sizes must be positive}}
func.func @f() attributes {l = #uq.lane_layout<batch = [0], threads = [4], elems = [1], lane_strides = [1]>} { return }
