// RUN: uq-opt %s --split-input-file --uq-inline-kernels-on-host --verify-diagnostics | FileCheck %s

// A launch becomes a loop nest over the grid (z outermost): the kernel's
// body with block ids replaced by the loop indices and its arguments by the
// launch operands; the gpu.module is gone.
// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK-NOT: gpu.launch_func
// CHECK: scf.for %[[Z:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[Y:.*]] = %{{.*}} to %[[N]] step
// CHECK: scf.for %[[X:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[V:.*]] = arith.addi %[[X]], %[[Y]] : index
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[V]]] : memref<?xf32>
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @host(%buf: memref<?xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@fill blocks in (%c2, %n, %c1) threads in (%c64, %c1, %c1)
        args(%buf : memref<?xf32>)
    return
  }
  gpu.module @k {
    gpu.func @fill(%b: memref<?xf32>) kernel {
      %x = gpu.block_id x
      %y = gpu.block_id y
      %i = arith.addi %x, %y : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %b[%i] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Lane-level code has no host meaning.
module attributes {gpu.container_module} {
  func.func @host(%buf: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@lanes blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%buf : memref<?xf32>)
    return
  }
  gpu.module @k {
    gpu.func @lanes(%b: memref<?xf32>) kernel {
      // expected-error @+1 {{has no host meaning: wave-level kernels have no lanes}}
      %t = gpu.thread_id x
      %f = arith.constant 1.0 : f32
      memref.store %f, %b[%t] : memref<?xf32>
      gpu.return
    }
  }
}
