// RUN: uq-opt %s --split-input-file --uq-assign-lane-layouts --uq-distribute-to-lanes --verify-diagnostics

// The size bound of both distribution passes (Layout.h, tileSizeError):
// every vector a kernel makes must fit a lane's 512 registers in its lane
// layout (at the lane-layout stage: spread over the 64 lanes), since every
// distribution pattern emits work per element of a lane. Tiles of 4096 or
// 2^31 keys that feed no MFMA (loads, index vectors, reductions) are
// refused where they are made instead of unrolled for minutes.

// 4096 keys of 128 bytes: 2048 registers per lane however laid out.
gpu.module @k {
  gpu.func @f(%keys: memref<?xi8>, %out: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %step = vector.step : vector<4096xindex>
    %c128 = arith.constant dense<128> : vector<4096xindex>
    %off = arith.muli %step, %c128 : vector<4096xindex>
    %all = arith.constant dense<true> : vector<4096xi1>
    // expected-error @+1 {{'uq.load_rows' op cannot be distributed: the tile vector<4096x128xi8> needs at least 2048 registers per lane spread over the 64 lanes, more than the 512 of a gfx950 lane}}
    %kb = uq.load_rows %keys[%off] mask %all : memref<?xi8>, vector<4096xindex>, vector<4096xi1> -> vector<4096x128xi8>
    %f = arith.uitofp %kb : vector<4096x128xi8> to vector<4096x128xf32>
    %z = arith.constant dense<0.0> : vector<4096xf32>
    %s = vector.multi_reduction <add>, %f, %z [1] : vector<4096x128xf32> to vector<4096xf32>
    vector.scatter %out[%c0] [%step], %all, %s : memref<?xf32>, vector<4096xindex>, vector<4096xi1>, vector<4096xf32>
    gpu.return
  }
}

// -----

// 2^31 keys: the first vector of that many index elements is refused.
gpu.module @k {
  gpu.func @f(%keys: memref<?xi8>, %out: memref<?xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'vector.broadcast' op cannot be distributed: the tile vector<2147483648xindex> needs at least 67108864 registers per lane spread over the 64 lanes, more than the 512 of a gfx950 lane}}
    %t0 = vector.broadcast %n : index to vector<2147483648xindex>
    %step = vector.step : vector<2147483648xindex>
    %tok = arith.addi %t0, %step : vector<2147483648xindex>
    %valid = arith.cmpi ult, %tok, %t0 : vector<2147483648xindex>
    %kb = uq.load_rows %keys[%tok] mask %valid : memref<?xi8>, vector<2147483648xindex>, vector<2147483648xi1> -> vector<2147483648x16xi8>
    %f = arith.uitofp %kb : vector<2147483648x16xi8> to vector<2147483648x16xf32>
    %z = arith.constant dense<0.0> : vector<2147483648xf32>
    %s = vector.multi_reduction <add>, %f, %z [1] : vector<2147483648x16xf32> to vector<2147483648xf32>
    vector.scatter %out[%c0] [%step], %valid, %s : memref<?xf32>, vector<2147483648xindex>, vector<2147483648xi1>, vector<2147483648xf32>
    gpu.return
  }
}

// -----

// A 2-D tile of 2^31 keys x 2^31 elements: the element count overflows
// 64 bits and is still refused.
gpu.module @k {
  gpu.func @f() kernel {
    // expected-error @+1 {{'arith.constant' op cannot be distributed: the tile vector<2147483648x2147483648x2147483648xf32> needs more than 2^64 bits in all}}
    %z = arith.constant dense<0.0> : vector<2147483648x2147483648x2147483648xf32>
    gpu.return
  }
}
