// v_fmac_f32 (D = S0 * S1 + D: the old vdst is the addend), v_div_scale_f32
// and the f32 division sequence that llc -mcpu=gfx950 emits for `fdiv float`
// (copied from llc's output for a plain kernel, not from uq's compiler), and
// v_maximum3_f32 / v_minimum3_f32 / v_pk_maximum3_f16 (IEEE 754-2019
// maximum/minimum: NaN in -> NaN out, -0 < +0; llc selects llvm.maximum.f32
// as v_maximum3_f32 a, b, b). Expected values by hand; the quotients are the
// correctly rounded f32 quotients (IEEE division, e.g. numpy float32).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:4096
// RUN: %python %S/Inputs/dump.py %t.out hex | FileCheck %s
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0                       // x
  v_cvt_f32_u32 v3, v2                          // float(x)
  v_add_f32 v20, 1.0, v3                        // n = x + 1
  v_sub_f32 v21, 0x40e00000, v3                 // d = 7 - x
  // fmac: v22 = 2 * x + 1; e64 form with a negated source: v23 = -(x) * 4 + 0.5
  v_mov_b32 v22, 1.0
  v_fmac_f32 v22, 2.0, v3
  v_mov_b32 v23, 0.5
  v_fmac_f32_e64 v23, -v3, 4.0
  // n / d, llc's sequence
  v_div_scale_f32 v4, s[0:1], v21, v21, v20
  v_rcp_f32_e32 v5, v4
  v_div_scale_f32 v6, vcc, v20, v21, v20
  v_fma_f32 v7, -v4, v5, 1.0
  v_fmac_f32_e32 v5, v7, v5
  v_mul_f32_e32 v7, v6, v5
  v_fma_f32 v8, -v4, v7, v6
  v_fmac_f32_e32 v7, v8, v5
  v_fma_f32 v4, -v4, v7, v6
  v_div_fmas_f32 v4, v4, v5, v7
  v_div_fixup_f32 v24, v4, v21, v20
  // maximum3 / minimum3
  v_mov_b32 v9, 0x7fc00000                      // NaN
  v_mov_b32 v10, 0x80000000                     // -0
  v_mov_b32 v11, 0                              // +0
  v_maximum3_f32 v25, 1.0, v9, 2.0              // NaN
  v_maximum3_f32 v26, v10, v11, v10             // +0
  v_minimum3_f32 v27, v11, v10, v11             // -0
  v_maximum3_f32 v28, -v3, -2.0, -4.0           // max(-x, -2)
  v_minimum3_f32 v29, v3, 2.0, 4.0              // min(x, 2)
  v_mov_b32 v12, 0x3c00bc00                     // f16 {lo -1.0, hi 1.0}
  v_mov_b32 v13, 0x7e008000                     // f16 {lo -0, hi NaN}
  v_pk_maximum3_f16 v30, v12, v13, v13          // {lo -0, hi NaN}
  v_pk_minimum3_f16 v31, v12, v12, v12          // {lo -1.0, hi 1.0}
  .irp r, 22,23,24,25,26,27,28,29,30,31
  global_store_dword v1, v\r, s[8:9] offset:0
  v_add_u32 v1, 256, v1
  .endr
  s_endpgm
.include "kernel-epilogue.inc"
// Layout: value i (in .irp order) of lane x at word 64*i + x.
// fmac 2x+1: 1, 3, 5
// CHECK: 0: 0x3f800000
// CHECK: 1: 0x40400000
// CHECK: 2: 0x40a00000
// fmac -4x + 0.5: 0.5, -3.5
// CHECK: 64: 0x3f000000
// CHECK: 65: 0xc0600000
// (x+1)/(7-x): 1/7, 2/6, 3/5, 7/1, 8/0 = inf, 9/-1, 11/-3, 64/-56
// CHECK: 128: 0x3e124925
// CHECK: 129: 0x3eaaaaab
// CHECK: 130: 0x3f19999a
// CHECK: 134: 0x40e00000
// CHECK: 135: 0x7f800000
// CHECK: 136: 0xc1100000
// CHECK: 138: 0xc06aaaab
// CHECK: 191: 0xbf924925
// CHECK: 192: 0x7fc00000
// CHECK: 256: 0x00000000
// CHECK: 320: 0x80000000
// max(-x, -2): -0 at x = 0 (-0 > -2), -1, -2, -2
// CHECK: 384: 0x80000000
// CHECK: 385: 0xbf800000
// CHECK: 386: 0xc0000000
// CHECK: 387: 0xc0000000
// min(x, 2): 0, 1, 2, 2
// CHECK: 448: 0x00000000
// CHECK: 449: 0x3f800000
// CHECK: 450: 0x40000000
// CHECK: 451: 0x40000000
// CHECK: 512: 0x7e008000
// CHECK: 576: 0x3c00bc00
