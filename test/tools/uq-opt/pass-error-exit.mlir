// RUN: rm -f %t.out
// RUN: not uq-opt %S/Inputs/gpu-kernel.mlir --uq-cpu-pipeline -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out
// RUN: not uq-run %s --entry host 2>&1 | FileCheck %s --check-prefix=RUNNER

// Any error diagnostic means a non-zero exit. GPU IR (a gpu.module with LDS
// in the workgroup address space) through the CPU pipeline: upstream's
// finalize-memref-to-llvm emits an error for the address space and still
// reports success. uq-opt used to print the error, write the output and exit
// 0; now the run fails and -o is not kept.
// CHECK: error: conversion of memref memory space #gpu.address_space<workgroup> to integer address space failed
// CHECK: uq-opt: error: 1 error diagnostic(s) above came from passes that did not report failure; the run fails (an -o file is not kept)

// uq-run (CPUProgram::compile) fails the same way.
// RUNNER: uq-run: error: lowering '{{.*}}pass-error-exit.mlir' with uq-cpu-pipeline failed:
// RUNNER-NEXT: <unknown>:0: error: conversion of memref memory space #gpu.address_space<workgroup> to integer address space failed

module attributes {gpu.container_module} {
  func.func @host(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  gpu.module @kernels {
    gpu.func @k(%out: memref<64xf32>) workgroup(%lds: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %lds[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      amdgpu.lds_barrier
      memref.store %v, %out[%c0] : memref<64xf32>
      gpu.return
    }
  }
}
