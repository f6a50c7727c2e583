// Wave-level kernels without their launch description (no uq.kernels).
module attributes {gpu.container_module} {
  gpu.module @uq_kernels {
    gpu.func @f(%b: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
