// VALU integer / f32 / f64 / conversion semantics on lane-dependent data,
// expected values by hand for lane 0..2 (x = lane id).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:8192
// RUN: %python %S/Inputs/dump.py %t.out hex | FileCheck %s
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0                       // x
  v_cvt_f32_u32 v3, v2                          // float(x)
  v_mul_f32 v4, 0.5, v3                         // x/2
  v_fma_f32 v5, v3, v3, 1.0                     // x*x+1
  v_max3_f32 v6, v3, 2.0, -v4                   // max(x, 2, -x/2)
  v_exp_f32 v7, v3                              // 2^x
  v_rcp_f32 v8, v5                              // 1/(x*x+1)
  v_cvt_f64_f32 v[10:11], v3
  v_fma_f64 v[12:13], v[10:11], v[10:11], 0.5   // x*x + 0.5 in f64
  v_cvt_f32_f64 v9, v[12:13]
  s_mov_b32 s21, 0x11223344
  s_mov_b32 s22, 0x04050100
  v_mov_b32 v24, s22
  v_perm_b32 v14, v2, s21, v24                  // bytes
  s_brev_b32 s23, 1
  v_alignbit_b32 v15, v2, s23, 4
  s_movk_i32 s24, 0xabcd
  v_bfe_u32 v16, s24, v2, 4                     // bits x..x+3 of 0xabcd
  v_bcnt_u32_b32 v17, v2, 64
  v_add_u32 v17, 36, v17
  v_cvt_pk_bf16_f32 v18, v4, v5
  v_cvt_i32_f32 v19, -v4
  v_mov_b32 v20, 0x3f800000
  v_mov_b32_dpp v20, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf  // swap pairs
  v_readfirstlane_b32 s20, v5
  v_mov_b32 v21, s20
  v_lshlrev_b32 v22, 2, v2
  v_mov_b32 v23, 0
  .irp r, 3,4,5,6,7,8,9,14,15,16,17,18,19,20,21
  global_store_dword v22, v\r, s[8:9] offset:0
  v_add_u32 v22, 256, v22
  .endr
  s_endpgm
.include "kernel-epilogue.inc"
// Layout: value r of lane x at word 64*r + x.
// CHECK: 0: 0x00000000
// CHECK: 1: 0x3f800000
// CHECK: 2: 0x40000000
// x/2
// CHECK: 64: 0x00000000
// CHECK: 65: 0x3f000000
// x*x+1: 1, 2, 5
// CHECK: 128: 0x3f800000
// CHECK: 129: 0x40000000
// CHECK: 130: 0x40a00000
// max3: 2, 2, 2
// CHECK: 192: 0x40000000
// CHECK: 195: 0x40400000
// exp2: 1, 2, 4
// CHECK: 256: 0x3f800000
// CHECK: 258: 0x40800000
// rcp: 1, 0.5, 0.2
// CHECK: 320: 0x3f800000
// CHECK: 321: 0x3f000000
// CHECK: 322: 0x3e4ccccd
// f64 x*x+0.5 -> f32: 0.5, 1.5, 4.5
// CHECK: 384: 0x3f000000
// CHECK: 386: 0x40900000
// perm: selector 04 05 01 00 -> {x.b0, x.b1, lit.b1, lit.b0} (0-3 pick src1)
// CHECK: 448: 0x00003344
// CHECK: 450: 0x02003344
// alignbit({x, 0x80000000} >> 4)
// CHECK: 512: 0x08000000
// CHECK: 513: 0x18000000
// bfe nibble: x=0 -> d, x=1 -> (0xabcd >> 1) & 15 = 6
// CHECK: 576: 0x0000000d
// CHECK: 577: 0x00000006
// bcnt + 100
// CHECK: 640: 0x00000064
// CHECK: 643: 0x00000066
// pk_bf16(x/2, x*x+1): lane 1 = {0x3f00, 0x4000}
// CHECK: 705: 0x40003f00
// cvt_i32(-x/2): lane 3 -> -1 (truncation)
// CHECK: 771: 0xffffffff
// DPP quad_perm swap: lane 0 gets 1, lane 1 gets 0
// CHECK: 832: 0x00000001
// CHECK: 833: 0x00000000
// readfirstlane of lane 0's x*x+1
// CHECK: 896: 0x3f800000
// CHECK: 897: 0x3f800000
