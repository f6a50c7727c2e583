// v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16 and v_cvt_pk_f16_f32,
// the instructions llc -mcpu=gfx950 emits for fma with f16 sources or f16
// results and for fptrunc <2 x float> to <2 x half>. Expected values by hand:
// v1 = {lo 1.5 (0x3e00), hi -2.0 (0xc000)}, v2 = 0.25f, v3 = 0.33333334f.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:3072
// RUN: %python %S/Inputs/dump.py %t.out hex | FileCheck %s
.include "kernel-prologue.inc"
  v_mov_b32 v1, 0xc0003e00
  v_mov_b32 v2, 0x3e800000
  v_mov_b32 v3, 0x3eaaaaab
  v_mov_b32 v19, 0xc0300000
  // f16 lo x f16 hi + f32: 1.5 * -2 + 0.25 = -2.75
  v_fma_mix_f32 v10, v1, v1, v2 op_sel:[0,1,0] op_sel_hi:[1,1,0]
  // -(hi) * |hi| + 0.25 = 2 * 2 + 0.25 = 4.25
  v_fma_mix_f32 v11, -v1, |v1|, v2 op_sel:[1,1,0] op_sel_hi:[1,1,0]
  // all f32: 0.25 * 0.25 + 0.25 = 0.3125
  v_fma_mix_f32 v12, v2, v2, v2 op_sel_hi:[0,0,0]
  // an inline constant is an f16 value: 1.5 * 2.0 + 0.25 = 3.25
  v_fma_mix_f32 v13, v1, 2.0, v2 op_sel_hi:[1,0,0]
  // mixlo keeps the high half: -2.75 = f16 0xc180
  v_mov_b32 v14, 0x12345678
  v_fma_mixlo_f16 v14, v1, v1, v2 op_sel:[0,1,0] op_sel_hi:[1,1,0]
  // mixhi keeps the low half: 4.25 = f16 0x4440
  v_mov_b32 v15, 0x12345678
  v_fma_mixhi_f16 v15, v1, v1, v2 op_sel:[1,1,0] op_sel_hi:[1,1,0]
  // rounding to f16: 0.33333334 * 1.0 + 0 -> 0x3555 (0.33325195; 0x3556
  // is 0.33349609, farther away)
  v_mov_b32 v16, 0
  v_fma_mixlo_f16 v16, v3, 1.0, 0 op_sel_hi:[0,1,1]
  // clamp: 4.25 -> 1.0 (0x3c00)
  v_mov_b32 v17, 0
  v_fma_mixlo_f16 v17, v1, v1, v2 op_sel:[1,1,0] op_sel_hi:[1,1,0] clamp
  // v_cvt_pk_f16_f32: {f16(0.25) = 0x3400, f16(-2.75) = 0xc180}
  v_cvt_pk_f16_f32 v18, v2, v19
  v_and_b32 v20, 63, v0
  v_lshlrev_b32 v22, 2, v20
  .irp r, 10,11,12,13,14,15,16,17,18
  global_store_dword v22, v\r, s[8:9]
  v_add_u32 v22, 256, v22
  .endr
  s_endpgm
.include "kernel-epilogue.inc"
// Layout: value r of lane x at word 64*r + x.
// CHECK: 0: 0xc0300000
// CHECK: 63: 0xc0300000
// CHECK: 64: 0x40880000
// CHECK: 128: 0x3ea00000
// CHECK: 192: 0x40500000
// CHECK: 256: 0x1234c180
// CHECK: 320: 0x44405678
// CHECK: 384: 0x00003555
// CHECK: 448: 0x00003c00
// CHECK: 512: 0xc1803400
// CHECK: 575: 0xc1803400
