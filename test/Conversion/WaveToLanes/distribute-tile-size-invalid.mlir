// RUN: uq-opt %s --split-input-file --uq-distribute-to-lanes --verify-diagnostics

// The distribution stage checks the size bound (Layout.h, tileSizeError)
// against each value's own lane layout: stage IR written by another
// compiler may replicate a tile over the lanes, so a lane holds all of it.

// 4096 keys of f32 in every lane: 4096 registers per lane.
gpu.module @k {
  gpu.func @f() kernel {
    // expected-error @+1 {{'arith.constant' op cannot be distributed: the tile vector<4096xf32> needs 4096 registers per lane in lane layout [4096x1@1x1], more than the 512 of a gfx950 lane}}
    %z = arith.constant {uq.layout = #uq.lane_layout<batch = [4096], threads = [1], elems = [1], lane_strides = [1]>} dense<0.0> : vector<4096xf32>
    gpu.return
  }
}

// -----

// 2^31 keys over the 64 lanes: 2^25 elements in each lane.
gpu.module @k {
  gpu.func @f() kernel {
    // expected-error @+1 {{'vector.step' op cannot be distributed: the tile vector<2147483648xindex> needs 67108864 registers per lane in lane layout [33554432x64@1x1], more than the 512 of a gfx950 lane}}
    %s = vector.step {uq.layout = #uq.lane_layout<batch = [33554432], threads = [64], elems = [1], lane_strides = [1]>} : vector<2147483648xindex>
    gpu.return
  }
}

// -----

// A loop-carried tile of 4096 keys in one lane: refused at the loop.
gpu.module @k {
  gpu.func @f(%n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant {uq.layout = #uq.lane_layout<batch = [64], threads = [64], elems = [1], lane_strides = [1]>} dense<0.0> : vector<4096xf32>
    // expected-error @+1 {{'scf.for' op cannot be distributed: result 0: the tile vector<4096xf32> needs 4096 registers per lane in lane layout [4096x1@1x1], more than the 512 of a gfx950 lane}}
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (vector<4096xf32>) {
      scf.yield %a : vector<4096xf32>
    } {uq.layouts = [#uq.lane_layout<batch = [4096], threads = [1], elems = [1], lane_strides = [1]>]}
    gpu.return
  }
}
