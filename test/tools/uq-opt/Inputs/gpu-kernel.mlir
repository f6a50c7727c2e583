// A gfx950 kernel as convert-uq-to-gpu writes them (a gpu.module, LDS in the
// workgroup address space, amdgpu ops): GPU IR, not for the CPU pipeline.
module attributes {gpu.container_module} {
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
