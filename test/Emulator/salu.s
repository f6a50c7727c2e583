// Scalar ALU: arithmetic, carries, shifts, bit fields, compares, selects.
// Each result goes to out[i] through lane 0; expected values by hand.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --grid 1 --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:128
// RUN: %python %S/Inputs/dump.py %t.out hex | FileCheck %s
.include "kernel-prologue.inc"
  s_mov_b32 s10, 0xfffffffe
  s_add_u32 s11, s10, 3            // 1, carry
  s_addc_u32 s12, 0, 0             // scc=1 -> 1
  s_sub_u32 s13, 5, 7              // 0xfffffffe
  s_mul_i32 s14, -3, 7             // -21
  s_lshl_b32 s15, 1, 31
  s_lshr_b32 s16, s15, 4
  s_ashr_i32 s17, s15, 4
  s_mov_b32 s41, 0x12345678
  s_bfe_u32 s18, s41, 0x80004   // offset 4 width 8 -> 0x67
  s_movk_i32 s41, 0xf0
  s_bfe_i32 s19, s41, 0x40004   // offset 4 width 4 -> -1
  s_cmp_lt_i32 -1, 1
  s_cselect_b32 s20, 11, 22        // 11
  s_cmp_lt_u32 -1, 1
  s_cselect_b32 s21, 11, 22        // 22
  s_movk_i32 s22, 0x8001           // sign-extended 0xffff8001
  s_min_i32 s23, -5, 3
  s_max_u32 s24, -5, 3
  s_mov_b32 s41, 0xff00ff
  s_and_b32 s25, s41, 0xf0f0f0f0
  s_xor_b32 s26, s41, 0xf0f0f0f0
  s_bcnt1_i32_b32 s27, 0xf0f0
  s_ff1_i32_b32 s28, 0x100
  s_lshl2_add_u32 s29, 3, 100      // 112
  s_mov_b64 s[30:31], -1
  s_lshr_b64 s[30:31], s[30:31], 60  // 15, 0
  s_mul_hi_u32 s32, 0x80000000, 6  // 3
  s_sext_i32_i8 s33, 0x80
  s_add_i32 s34, 0x7fffffff, 1     // overflow -> scc 1
  s_cselect_b32 s35, 1, 0
  s_movk_i32 s41, 0x1234
  s_pack_ll_b32_b16 s36, s41, 0xabcd
  s_bitcmp1_b32 0x10, 4
  s_cselect_b32 s37, 7, 8          // 7
  s_sub_i32 s38, 0x7fffffff, -1
  s_cselect_b32 s39, 9, 10         // overflow -> 9
  s_mov_b32 s40, 0
  v_mov_b32 v2, 0
.irp r, 11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,35,36,37,39
  v_mov_b32 v3, s\r
  global_store_dword v2, v3, s[8:9]
  v_add_u32 v2, 4, v2
.endr
  s_endpgm
.include "kernel-epilogue.inc"

// CHECK: 0: 0x00000001
// CHECK: 1: 0x00000001
// CHECK: 2: 0xfffffffe
// CHECK: 3: 0xffffffeb
// CHECK: 4: 0x80000000
// CHECK: 5: 0x08000000
// CHECK: 6: 0xf8000000
// CHECK: 7: 0x00000067
// CHECK: 8: 0xffffffff
// CHECK: 9: 0x0000000b
// CHECK: 10: 0x00000016
// CHECK: 11: 0xffff8001
// CHECK: 12: 0xfffffffb
// CHECK: 13: 0xfffffffb
// CHECK: 14: 0x00f000f0
// CHECK: 15: 0xf00ff00f
// CHECK: 16: 0x00000008
// CHECK: 17: 0x00000008
// CHECK: 18: 0x00000070
// CHECK: 19: 0x0000000f
// CHECK: 20: 0x00000000
// CHECK: 21: 0x00000003
// CHECK: 22: 0xffffff80
// CHECK: 23: 0x00000001
// CHECK: 24: 0xabcd1234
// CHECK: 25: 0x00000007
// CHECK: 26: 0x00000009
