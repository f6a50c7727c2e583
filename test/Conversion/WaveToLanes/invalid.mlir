// RUN: uq-opt %s --split-input-file --uq-assign-lane-layouts --verify-diagnostics
// RUN: not uq-opt %s --split-input-file --uq-assign-lane-layouts='chip=gfx942' 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not uq-opt %s --split-input-file --uq-distribute-to-lanes 2>&1 | FileCheck %s --check-prefix=NOLAYOUT

// Diagnostics of the distribution stage.
// CHIP: error: uq-assign-lane-layouts: chip 'gfx942' is not supported (the lane layouts are gfx950's: its scaled MFMA v_mfma_scale_f32_16x16x128_f8f6f4)
// NOLAYOUT: error: 'vector.load' op has a vector value without a lane layout (run uq-assign-lane-layouts first)

gpu.module @k {
  gpu.func @f(%b: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %x = vector.load %b[%c0] : memref<?xf32>, vector<64xf32>
    %y = vector.shape_cast %x : vector<64xf32> to vector<8x8xf32>
    // expected-error @+1 {{has no lane-distribution rule}}
    %t = vector.transpose %y, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
    gpu.return
  }
}

// -----

gpu.module @k {
  gpu.func @f(%a: vector<16x64xf8E4M3FN>, %s: vector<16x2xf8E8M0FNU>, %c: vector<16x16xf32>) kernel {
    // expected-error @+1 {{cannot be distributed: 16x16x128 MFMA tiles need M, N multiples of 16 and K of 128}}
    %r = uq.scaled_mma %a, %s, %a, %s, %c : vector<16x64xf8E4M3FN>, vector<16x2xf8E8M0FNU>, vector<16x64xf8E4M3FN>, vector<16x2xf8E8M0FNU>, vector<16x16xf32>
    gpu.return
  }
}
