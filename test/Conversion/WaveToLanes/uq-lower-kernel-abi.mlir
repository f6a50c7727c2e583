// RUN: uq-opt %s --uq-lower-kernel-abi | FileCheck %s

// Buffer arguments become global pointers (8 bytes in the kernarg
// segment); the body sees a memref descriptor built from each; scalars stay.
// Host launches pass the buffers' pointers.
// CHECK-LABEL: func.func @host
// CHECK: %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<?xf32> to !llvm.ptr<1>
// CHECK: gpu.launch_func @k::@scale blocks in ({{.*}}) threads in ({{.*}}) args(%[[P]] : !llvm.ptr<1>, %{{.*}} : i32)
// CHECK: gpu.func @scale(%[[ARG:.*]]: !llvm.ptr<1>, %[[N:.*]]: i32) kernel
// CHECK: %[[FLAT:.*]] = llvm.addrspacecast %[[ARG]] : !llvm.ptr<1> to !llvm.ptr
// CHECK: llvm.insertvalue %[[FLAT]], %{{.*}}[0]
// CHECK: llvm.insertvalue %[[FLAT]], %{{.*}}[1]
// CHECK: %[[M:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<?xf32>
// CHECK: memref.load %[[M]]
module attributes {gpu.container_module} {
  func.func @host(%b: memref<?xf32>, %n: i32) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%b : memref<?xf32>, %n : i32)
    return
  }
  gpu.module @k {
    gpu.func @scale(%b: memref<?xf32>, %n: i32) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %b[%c0] : memref<?xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
}
