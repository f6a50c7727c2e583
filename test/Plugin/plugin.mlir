// RUN: mlir-opt --load-dialect-plugin=%uq_plugin --load-pass-plugin=%uq_plugin %s --split-input-file | FileCheck %s
// RUN: mlir-opt --load-dialect-plugin=%uq_plugin --load-pass-plugin=%uq_plugin %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | FileCheck %s --check-prefix=CANON
// RUN: not mlir-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// RUN: mlir-opt --load-dialect-plugin=%uq_plugin --load-pass-plugin=%uq_plugin %s --split-input-file --pass-pipeline='builtin.module(convert-uq-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: mlir-opt --load-dialect-plugin=%uq_plugin %s --split-input-file --verify-roundtrip
// docs/integration.md's example, on every op of test/Dialect/UQ/ops.mlir (it
// used to fail on an MX-FP8 format no lowering implements, now rejected by
// the verifier and gone from ops.mlir):
// RUN: mlir-opt --load-dialect-plugin=%uq_plugin --load-pass-plugin=%uq_plugin %S/../Dialect/UQ/ops.mlir --split-input-file --pass-pipeline='builtin.module(convert-uq-to-linalg, canonicalize)' -o /dev/null

// Debian's mlir-opt (not uq-opt) parses, verifies and prints uq IR once
// libUQPlugin.so is loaded, and runs passes on it.

// NOPLUGIN: Dialect `uq' not found for custom op 'uq.rotate'

// The plugin's dialect round-trips; canonicalize (from the host tool) erases
// the unused, side-effect-free uq.rotate.
// The pass plugin's own pass (convert-uq-to-linalg, usable through
// --pass-pipeline) lowers the rotation to linalg.
// CHECK-LABEL: func @rotate
// CANON-LABEL: func @rotate
// LINALG-LABEL: func @rotate
// LINALG-NOT: uq.rotate
// LINALG: linalg.generic
// LINALG-NOT: uq.rotate
// LINALG: return
func.func @rotate(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  // CHECK: %[[R:.*]] = uq.rotate %{{.*}} : tensor<4x128xf32>
  // CHECK: uq.rotate %{{.*}} : tensor<4x128xf32>
  // CHECK: return %[[R]]
  // CANON: %[[R:.*]] = uq.rotate %{{.*}} : tensor<4x128xf32>
  // CANON-NOT: uq.rotate
  // CANON: return %[[R]]
  %r = uq.rotate %x : tensor<4x128xf32>
  %unused = uq.rotate %x : tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}

// -----

// Attributes of the plugin's dialect print in their custom form.
// CHECK-LABEL: func @quantize
// CANON-LABEL: func @quantize
// LINALG-LABEL: func @quantize
// LINALG-NOT: uq.quantize
// LINALG: return
func.func @quantize(%x: tensor<4x128xbf16>) -> (tensor<4x64xi8>, tensor<4x4xi8>) {
  // CHECK: uq.quantize %{{.*}} {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>} : tensor<4x128xbf16> -> tensor<4x64xi8>, tensor<4x4xi8>
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>}
      : tensor<4x128xbf16> -> tensor<4x64xi8>, tensor<4x4xi8>
  return %c, %s : tensor<4x64xi8>, tensor<4x4xi8>
}

