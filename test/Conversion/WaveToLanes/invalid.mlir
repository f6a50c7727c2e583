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
    // expected-error @+1 {{cannot be distributed: the 16x16x64 tile is not made of whole v_mfma_scale_f32_16x16x128_f8f6f4 (16x16x128) instructions (M a multiple of 16, N of 16, K of 128)}}
    %r = uq.scaled_mma %a, %s, %a, %s, %c : vector<16x64xf8E4M3FN>, vector<16x2xf8E8M0FNU>, vector<16x64xf8E4M3FN>, vector<16x2xf8E8M0FNU>, vector<16x16xf32>
    gpu.return
  }
}

// -----

// A tile of 1024 rows is whole MFMAs but cannot live in a lane's registers:
// refused here instead of unrolled into thousands of instructions.
gpu.module @k {
  gpu.func @f(%a: vector<1024x128xf8E4M3FN>, %sa: vector<1024x4xf8E8M0FNU>, %b: vector<16x128xf4E2M1FN>, %sb: vector<16x4xf8E8M0FNU>, %c: vector<1024x16xf32>) kernel {
    // expected-error @+1 {{cannot be distributed: the 1024x16x128 tile's operands, scales and accumulator need 789 registers per lane, more than the 512 of a gfx950 lane}}
    %r = uq.scaled_mma %a, %sa, %b, %sb, %c : vector<1024x128xf8E4M3FN>, vector<1024x4xf8E8M0FNU>, vector<16x128xf4E2M1FN>, vector<16x4xf8E8M0FNU>, vector<1024x16xf32>
    gpu.return
  }
}

// -----

// K = 48 is not whole 16x16x32 MFMAs.
gpu.module @k {
  gpu.func @f(%a: vector<16x48xbf16>, %b: vector<48x16xbf16>, %c: vector<16x16xf32>) kernel {
    // expected-error @+1 {{cannot be distributed: the 16x16x48 tile is not made of whole v_mfma_f32_16x16x32 (16x16x32) instructions (M a multiple of 16, N of 16, K of 32)}}
    %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<16x48xbf16>, vector<48x16xbf16> into vector<16x16xf32>
    gpu.return
  }
}

// -----

// The 16x16x32 MFMA takes no f32 operands.
gpu.module @k {
  gpu.func @f(%a: vector<16x32xf32>, %b: vector<32x16xf32>, %c: vector<16x16xf32>) kernel {
    // expected-error @+1 {{cannot be distributed: the A operand's element type f32 is not one v_mfma_f32_16x16x32 (16x16x32) takes}}
    %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<16x32xf32>, vector<32x16xf32> into vector<16x16xf32>
    gpu.return
  }
}
