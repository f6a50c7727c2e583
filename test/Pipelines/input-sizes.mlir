// RUN: uq-opt %s --split-input-file --uq-check-input-sizes --verify-diagnostics
// RUN: not uq-opt %s --split-input-file --uq-check-input-sizes="max-vector-elements=4" 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: not uq-opt %s --split-input-file --uq-check-input-sizes="max-vector-elements=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// uq-check-input-sizes, the first pass of every uq pipeline
// (uq::checkValueSizes; docs/robustness.md, "Input limits"): no vector of
// more than 65536 elements and no constant (dense, sparse, resource) of
// more than 2^24
// elements, wherever the type appears; the first offending op gets a
// located error.

// At the bound: accepted (the largest vector uq's kernels make has 8192).
func.func @at_bound(%a: vector<256x256xf32>) -> vector<65536xi8> {
  %c = arith.constant dense<1> : vector<65536xi8>
  %t = arith.constant dense<0.0> : tensor<4096x4096xf32>
  return %c : vector<65536xi8>
}

// -----

// One element past it, as a result.
func.func @result() {
  // expected-error @+1 {{'vector.step' op has the vector type vector<65537xindex> of 65537 elements, more than uq's bound of 65536 elements per vector}}
  %s = vector.step : vector<65537xindex>
  return
}

// -----

// In a signature (a declaration has no block arguments), nested in a
// memref element type.
// expected-error @+1 {{'func.func' op has the vector type vector<1024x1024xf32> of 1048576 elements}}
func.func private @decl(memref<4xvector<1024x1024xf32>>)

// -----

// As the argument of a block that is not the entry block: the op whose
// region holds the block is named.
// expected-error @+1 {{'func.func' op has the vector type vector<16x8192xf32> of 131072 elements}}
func.func @block() {
  return
^bb1(%v: vector<16x8192xf32>):
  return
}

// -----

// An element count past 2^64 is reported as such (not wrapped to a small
// number).
func.func @overflow() {
  // expected-error @+1 {{'arith.constant' op has the vector type vector<2147483648x2147483648x2147483648xf32> of more than 2^64 elements}}
  %z = arith.constant dense<0.0> : vector<2147483648x2147483648x2147483648xf32>
  return
}

// -----

// A splat constant of a tensor or a global's initial value: 2^24 + 1
// elements.
// expected-error @+1 {{'memref.global' op has a constant of type tensor<16777217xf32> (16777217 elements), more than uq's bound of 16777216 elements per constant}}
memref.global "private" constant @g : memref<16777217xf32> = dense<1.0>

// -----

// A sparse constant is as short in the text, and as large once lowered.
func.func @sparse() -> tensor<2147483648xf32> {
  // expected-error @+1 {{'arith.constant' op has a constant of type tensor<2147483648xf32> (2147483648 elements), more than uq's bound of 16777216 elements per constant}}
  %c = arith.constant sparse<[[0]], [1.0]> : tensor<2147483648xf32>
  return %c : tensor<2147483648xf32>
}

// The bound is an option of the pass.
// SMALL: error: 'func.func' op has the vector type vector<256x256xf32> of 65536 elements, more than uq's bound of 4 elements per vector
// ZERO: error: uq-check-input-sizes: max-vector-elements and max-constant-elements must be at least 1
