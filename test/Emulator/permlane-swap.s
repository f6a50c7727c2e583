// v_permlane16_swap_b32 / v_permlane32_swap_b32 (gfx950): both operands are
// written. Semantics (AMD CDNA4 ISA as quoted by LLVM/MLIR/Rust stdarch):
// "odd rows of the first operand are swapped with even rows of the second
// operand (one row is 16 lanes)"; 32-swap: "rows 2 and 3 of the first operand
// are swapped with rows 0 and 1 of the second operand". So vdst[l+16] <->
// vsrc[l] for l in rows 0 and 2, and vdst[l+32] <-> vsrc[l] for l < 32.
// Expected values by hand (x = lane id).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:2048 --stats | FileCheck %s --check-prefix=STATS
// RUN: %python %S/Inputs/dump.py %t.out u32 | FileCheck %s
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0                       // x
  v_add_u32 v3, 100, v2                         // 100 + x
  v_mov_b32 v4, v2
  v_mov_b32 v5, v3
  v_mov_b32 v6, v2
  v_mov_b32 v7, v2
  v_mov_b32 v8, v2
  v_mov_b32 v9, v3
  v_permlane16_swap_b32 v2, v3
  v_permlane32_swap_b32 v4, v5
  v_permlane16_swap_b32 v6, v6                  // same register: rows 0<->1, 2<->3
  v_permlane32_swap_b32 v7, v7                  // same register: halves swapped
  v_permlane16_swap_b32_e64 v8, v9 bound_ctrl:1 fi:1  // VOP3 form, all lanes active
  .irp r, 2,3,4,5,6,7,8
  global_store_dword v1, v\r, s[8:9] offset:0
  v_add_u32 v1, 256, v1
  .endr
  s_endpgm
.include "kernel-epilogue.inc"
// STATS: VALU
// Layout: register r (in .irp order) of lane x at word 64*i + x.
// v2 (vdst, 16-swap): rows 0, 2 keep x; rows 1, 3 get vsrc[x-16] = 84 + x.
// CHECK: 0: 0
// CHECK: 15: 15
// CHECK: 16: 100
// CHECK: 31: 115
// CHECK: 32: 32
// CHECK: 47: 47
// CHECK: 48: 132
// CHECK: 63: 147
// v3 (vsrc, 16-swap): rows 0, 2 get vdst[x+16] = x + 16; rows 1, 3 keep 100 + x.
// CHECK: 64: 16
// CHECK: 79: 31
// CHECK: 80: 116
// CHECK: 95: 131
// CHECK: 96: 48
// CHECK: 111: 63
// CHECK: 112: 148
// CHECK: 127: 163
// v4 (vdst, 32-swap): lanes 0..31 keep x; 32..63 get vsrc[x-32] = 68 + x.
// CHECK: 128: 0
// CHECK: 159: 31
// CHECK: 160: 100
// CHECK: 191: 131
// v5 (vsrc, 32-swap): lanes 0..31 get vdst[x+32] = x + 32; 32..63 keep 100 + x.
// CHECK: 192: 32
// CHECK: 223: 63
// CHECK: 224: 132
// CHECK: 255: 163
// v6 (16-swap with itself): lane x gets x ^ 16.
// CHECK: 256: 16
// CHECK: 272: 0
// CHECK: 288: 48
// CHECK: 319: 47
// v7 (32-swap with itself): lane x gets x ^ 32.
// CHECK: 320: 32
// CHECK: 351: 63
// CHECK: 352: 0
// CHECK: 383: 31
// v8 (VOP3 form): same as v2.
// CHECK: 384: 0
// CHECK: 400: 100
// CHECK: 447: 147
