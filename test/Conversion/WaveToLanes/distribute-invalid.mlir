// RUN: uq-opt %s --split-input-file --uq-distribute-to-lanes --verify-diagnostics

// The distribution stage checks every MFMA tile against the MFMA table
// (uq/Codegen/MFMA.h) before it unrolls it: stage IR written by another
// compiler may carry any lane layout and any tile size.

// An FP8 A operand in the FP4 operand's layout (32 consecutive K per lane
// where the instruction reads two runs of 16).
gpu.module @k {
  gpu.func @f() kernel {
    %a = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 32], lane_strides = [1, 16]>} dense<0.0> : vector<16x128xf8E4M3FN>
    %s = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 1], lane_strides = [1, 16]>} dense<1.0> : vector<16x4xf8E8M0FNU>
    %b = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 32], lane_strides = [1, 16]>} dense<0.0> : vector<16x128xf4E2M1FN>
    %c = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>} dense<0.0> : vector<16x16xf32>
    // expected-error @+1 {{cannot be distributed: value 0 of the v_mfma_scale_f32_16x16x128_f8f6f4 tile has lane layout}}
    %r = uq.scaled_mma %a, %s, %b, %s, %c {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>} : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>, vector<16x128xf4E2M1FN>, vector<16x4xf8E8M0FNU>, vector<16x16xf32>
    gpu.return
  }
}

// -----

// 1024 rows in the table's layouts: each operand fits a lane's registers,
// whole instructions, but together 800-odd registers per lane; refused
// instead of unrolled.
gpu.module @k {
  gpu.func @f() kernel {
    %a = arith.constant {uq.layout = #uq.lane_layout<batch = [64, 2], threads = [16, 4], elems = [1, 16], lane_strides = [1, 16]>} dense<0.0> : vector<1024x128xf8E4M3FN>
    %sa = arith.constant {uq.layout = #uq.lane_layout<batch = [64, 1], threads = [16, 4], elems = [1, 1], lane_strides = [1, 16]>} dense<1.0> : vector<1024x4xf8E8M0FNU>
    %b = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 32], lane_strides = [1, 16]>} dense<0.0> : vector<16x128xf4E2M1FN>
    %sb = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 1], lane_strides = [1, 16]>} dense<1.0> : vector<16x4xf8E8M0FNU>
    %c = arith.constant {uq.layout = #uq.lane_layout<batch = [64, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>} dense<0.0> : vector<1024x16xf32>
    // expected-error @+1 {{cannot be distributed: the 1024x16x128 tile's operands, scales and accumulator need}}
    %r = uq.scaled_mma %a, %sa, %b, %sb, %c {uq.layout = #uq.lane_layout<batch = [64, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>} : vector<1024x128xf8E4M3FN>, vector<1024x4xf8E8M0FNU>, vector<16x128xf4E2M1FN>, vector<16x4xf8E8M0FNU>, vector<1024x16xf32>
    gpu.return
  }
}

// -----

// 4096 rows in the table's layouts: the A operand alone needs 2048
// registers per lane, so the size bound refuses it where it is made,
// before anything is unrolled.
gpu.module @k {
  gpu.func @f() kernel {
    // expected-error @+1 {{'arith.constant' op cannot be distributed: the tile vector<4096x128xf8E4M3FN> needs 2048 registers per lane in lane layout [256x16@1x1, 2x4@16x16], more than the 512 of a gfx950 lane}}
    %a = arith.constant {uq.layout = #uq.lane_layout<batch = [256, 2], threads = [16, 4], elems = [1, 16], lane_strides = [1, 16]>} dense<0.0> : vector<4096x128xf8E4M3FN>
    %sa = arith.constant {uq.layout = #uq.lane_layout<batch = [256, 1], threads = [16, 4], elems = [1, 1], lane_strides = [1, 16]>} dense<1.0> : vector<4096x4xf8E8M0FNU>
    %b = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 32], lane_strides = [1, 16]>} dense<0.0> : vector<16x128xf4E2M1FN>
    %sb = arith.constant {uq.layout = #uq.lane_layout<batch = [1, 1], threads = [16, 4], elems = [1, 1], lane_strides = [1, 16]>} dense<1.0> : vector<16x4xf8E8M0FNU>
    %c = arith.constant {uq.layout = #uq.lane_layout<batch = [256, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>} dense<0.0> : vector<4096x16xf32>
    %r = uq.scaled_mma %a, %sa, %b, %sb, %c {uq.layout = #uq.lane_layout<batch = [256, 1], threads = [4, 16], elems = [4, 1], lane_strides = [16, 1]>} : vector<4096x128xf8E4M3FN>, vector<4096x4xf8E8M0FNU>, vector<16x128xf4E2M1FN>, vector<16x4xf8E8M0FNU>, vector<4096x16xf32>
    gpu.return
  }
}
