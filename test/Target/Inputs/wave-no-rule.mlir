// A wave-level kernel (as another compiler would hand it over, with its
// launch description) with an op that has no lane-distribution rule.
module attributes {gpu.container_module, uq.kernels = [
  {name = "f", op = "handwritten", grid = [1, 1, 1],
   grid_rule = "one workgroup", block = array<i64: 64, 1, 1>, params = {},
   args = [
     {name = "b", kind = "global_buffer", dtype = "f32", shape = [64],
      access = "read", meaning = "input"}]}]} {
  gpu.module @uq_kernels {
    gpu.func @f(%b: memref<?xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = vector.load %b[%c0] : memref<?xf32>, vector<64xf32>
      %y = vector.shape_cast %x : vector<64xf32> to vector<8x8xf32>
      %t = vector.transpose %y, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
      gpu.return
    }
  }
}
