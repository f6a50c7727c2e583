// RUN: uq-opt %s --uq-cpu-pipeline | FileCheck %s
// RUN: uq-opt %s --uq-cpu-pipeline="emit-c-interface=false" | FileCheck %s --check-prefix=NOCIFACE

// uq-cpu-pipeline takes uq ops on tensors all the way to the LLVM dialect:
// memref descriptors at the function boundary, a C wrapper per function,
// expf from the softmax, malloc/free for temporaries, nothing else left.

// CHECK-LABEL: llvm.func @attention(
// CHECK-SAME: !llvm.ptr
// CHECK: llvm.call @malloc
// CHECK: llvm.intr.exp
// CHECK: llvm.call @free
// CHECK-LABEL: llvm.func @_mlir_ciface_attention(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr
// CHECK-NOT: uq.
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// CHECK-NOT: memref.
// CHECK-NOT: scf.
// NOCIFACE-NOT: _mlir_ciface_
func.func @attention(%q: tensor<1x2x64xbf16>, %cache: tensor<2x16x1x68xi8>,
                     %bt: tensor<1x2xi32>, %lens: tensor<1xi32>) -> tensor<1x2x64xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.125
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<1x2x64xbf16>, tensor<2x16x1x68xi8>, tensor<1x2xi32>, tensor<1xi32>) -> tensor<1x2x64xf32>
  return %o : tensor<1x2x64xf32>
}
