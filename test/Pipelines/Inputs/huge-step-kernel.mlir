// A wave-level kernel whose key tile has 2^31 elements (the second case of
// test/Conversion/WaveToLanes/tile-size-invalid.mlir): the CPU pipeline's
// vector lowering turned its vector.step into a constant of 2^31 numbers
// (LLVM ERROR: out of memory) before uq's input bound existed.
gpu.module @k {
  gpu.func @f(%keys: memref<?xi8>, %out: memref<?xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %t0 = vector.broadcast %n : index to vector<2147483648xindex>
    %step = vector.step : vector<2147483648xindex>
    %tok = arith.addi %t0, %step : vector<2147483648xindex>
    %valid = arith.cmpi ult, %tok, %t0 : vector<2147483648xindex>
    %z = arith.constant dense<0.0> : vector<2147483648xf32>
    vector.scatter %out[%c0] [%step], %valid, %z : memref<?xf32>, vector<2147483648xindex>, vector<2147483648xi1>, vector<2147483648xf32>
    gpu.return
  }
}
