// v_bitop3_b32 / v_bitop3_b16 (gfx950): bit i of the result is bit
// (s0 << 2 | s1 << 1 | s2) of the bitop3 table, src0 the MSB of the index.
// Source: LLVM's BitOp3_Op (AMDGPUISelDAGToDAG.cpp) gives src0, src1, src2
// the tables 0xf0, 0xcc, 0xaa, and llc -mcpu=gfx950 selects
// `(a & ~b) ^ c` as `v_bitop3_b32 v0, a, c, b bitop3:0x9c` and
// `(a ^ b) | c` (i16) as `v_bitop3_b16 v0, a, c, b bitop3:0xde`.
// So with sources 0xf0f0f0f0, 0xcccccccc, 0xaaaaaaaa any table T gives
// 0xTTTTTTTT. Expected values by hand.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:4096
// RUN: %python %S/Inputs/dump.py %t.out hex | FileCheck %s
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0                       // x
  v_mov_b32 v10, 0xf0f0f0f0
  v_mov_b32 v11, 0xcccccccc
  v_mov_b32 v12, 0xaaaaaaaa
  v_bitop3_b32 v13, v10, v11, v12 bitop3:0x9c
  v_bitop3_b32 v14, v10, v11, v12 bitop3:0x1
  v_bitop3_b32 v15, v10, v11, v12 bitop3:0x80
  v_bitop3_b32 v16, v10, v11, v12 bitop3:0xe8
  // Lane data: (x & ~0x0f) ^ 0x55 in llc's operand order (a, c, b).
  v_mov_b32 v17, 0x55
  v_mov_b32 v18, 15
  v_bitop3_b32 v19, v2, v17, v18 bitop3:0x9c
  // Pass-through tables: 0xf0 = src0, 0xcc = src1, 0xaa = src2 (s, inline).
  s_mov_b32 s20, 0x12345678
  v_bitop3_b32 v20, v2, s20, -1 bitop3:0xf0
  v_bitop3_b32 v21, v2, s20, -1 bitop3:0xcc
  v_bitop3_b32 v22, v2, s20, 7 bitop3:0xaa
  // b16: low half written, high half of vdst kept; op_sel picks halves.
  v_mov_b32 v23, 0x5555aaaa
  v_bitop3_b16 v23, v10, v11, v12 bitop3:0xde    // -> 0x5555dede
  v_mov_b32 v24, 0x12345678
  v_mov_b32 v25, 0xabcd0000
  v_mov_b32 v26, 0x11112222
  v_bitop3_b16 v26, v24, v25, v2 bitop3:0xf0 op_sel:[1,0,0,1]  // hi <- v24.hi
  v_mov_b32 v27, 0x11112222
  v_bitop3_b16 v27, v24, v25, v2 bitop3:0xcc op_sel:[0,1,0,0]  // lo <- v25.hi
  v_mov_b32 v28, 0x0000ffff
  v_bitop3_b16 v28, v2, v28, v12 bitop3:0x96                   // x ^ 0xffff ^ 0xaaaa
  .irp r, 13,14,15,16,19,20,21,22,23,26,27,28
  global_store_dword v1, v\r, s[8:9] offset:0
  v_add_u32 v1, 256, v1
  .endr
  s_endpgm
.include "kernel-epilogue.inc"
// Layout: value i (in .irp order) of lane x at word 64*i + x.
// CHECK: 0: 0x9c9c9c9c
// CHECK: 64: 0x01010101
// CHECK: 128: 0x80808080
// CHECK: 192: 0xe8e8e8e8
// (x & ~15) ^ 0x55: x = 0 -> 0x55, x = 0x13 -> 0x45, x = 0x3f -> 0x65
// CHECK: 256: 0x00000055
// CHECK: 275: 0x00000045
// CHECK: 319: 0x00000065
// CHECK: 323: 0x00000003
// CHECK: 384: 0x12345678
// CHECK: 448: 0x00000007
// CHECK: 512: 0x5555dede
// CHECK: 576: 0x12342222
// CHECK: 640: 0x1111abcd
// x ^ 0x5555 in the low half, high half of v28 (0) kept: x = 3 -> 0x5556
// CHECK: 704: 0x00005555
// CHECK: 707: 0x00005556
