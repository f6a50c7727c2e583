// RUN: mlir-opt --load-dialect-plugin=%uq_plugin %s --split-input-file --verify-diagnostics

// The uq attribute parsers and op verifiers report their diagnostics inside
// Debian's mlir-opt as they do in uq-opt.

// expected-error @+1 {{unknown rotation 'random' (expected none or hadamard)}}
func.func @f() attributes {f = #uq.kv_format<fp4_e2m1, rotation = random>} { return }

// -----

// An op verifier (C++ code of the plugin) runs on ops built by mlir-opt's parser.
func.func @rotate(%x: tensor<4x96xf32>) -> tensor<4x96xf32> {
  // expected-error @+1 {{'uq.rotate' op last dimension must be a static power of two, got 96}}
  %r = uq.rotate %x : tensor<4x96xf32>
  return %r : tensor<4x96xf32>
}
