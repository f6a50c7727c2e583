// The LDS-DMA form of buffer_load (`lds`: no data register), the gfx9 range
// rule of raw buffers whose descriptor has a non-zero stride field, DPP
// row_newbcast, and VOP3 v_add_i32 / v_sub_i32 (with and without clamp).
// Sources (docs/emulator.md): CDNA3/CDNA4 ISA section 9.1.9 "Memory Buffer
// Load to LDS" (LDS_ADDR = M0 + inst_offset + lane * size; inst_offset also
// moves the memory address), the buffer range checks (raw: bytes against
// num_records, per dword), LLVM's DppCtrl ROW_NEWBCAST (0x150 + n: lane n of
// the lane's row). Expected values by hand (x = lane id).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:1024 --arg zeros:4 --arg out:%t.out:3328 --stats | FileCheck %s --check-prefix=STATS
// RUN: %python %S/Inputs/dump.py %t.out u32 | FileCheck %s
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0                       // x
  // in0 dword i = 1000 + i, i = 0..255.
  v_add_u32 v3, 1000, v2
  global_store_dword v1, v3, s[4:5]
  v_add_u32 v3, 64, v3
  global_store_dword v1, v3, s[4:5] offset:256
  v_add_u32 v3, 64, v3
  global_store_dword v1, v3, s[4:5] offset:512
  v_add_u32 v3, 64, v3
  global_store_dword v1, v3, s[4:5] offset:768
  s_waitcnt vmcnt(0)
  // Raw buffer over in0: stride field 4 (as AITER's kernels set it), no
  // swizzle, no idxen, num_records 600 bytes (dwords 0..149 in range).
  s_mov_b32 s12, s4
  s_and_b32 s13, s5, 0xffff
  s_or_b32 s13, s13, 0x40000
  s_movk_i32 s14, 0x258
  s_mov_b32 s15, 0x27000
  // LDS-DMA dwords: lane x -> LDS[256 + 4x] = dword x, then with offset:256
  // both sides move: dword 64 + x -> LDS[512 + 4x].
  s_movk_i32 m0, 0x100
  buffer_load_dword v1, s[12:15], 0 offen lds
  buffer_load_dword v1, s[12:15], 0 offen offset:256 lds
  // LDS-DMA dwordx4: lane x reads dwords 4x..4x+3 -> LDS[768 + 16x];
  // dwords >= 150 are out of range and write 0 (lane 37: 148, 149 kept).
  v_lshlrev_b32 v4, 4, v2
  s_movk_i32 m0, 0x300
  buffer_load_dwordx4 v4, s[12:15], 0 offen lds
  // Plain load past the stride: dword 100 + x, in range for x < 50.
  v_add_u32 v6, 0x190, v1
  buffer_load_dword v7, v6, s[12:15], 0 offen
  s_waitcnt vmcnt(0)
  // Copy LDS[256..2048) to out[0..448) dwords.
  v_mov_b32 v10, v1
  v_add_u32 v11, 0x100, v1
  .rept 7
  ds_read_b32 v12, v11
  s_waitcnt lgkmcnt(0)
  global_store_dword v10, v12, s[8:9]
  v_add_u32 v10, 0x100, v10
  v_add_u32 v11, 0x100, v11
  .endr
  // out[448 + x] = the plain load.
  global_store_dword v10, v7, s[8:9]
  v_add_u32 v10, 0x100, v10
  // out[512 + x] = lane (x & ~15) + 5 of x + 7 (row_newbcast:5).
  v_add_u32 v13, 7, v2
  v_mov_b32 v14, 0
  v_mov_b32_dpp v14, v13 row_newbcast:5 row_mask:0xf bank_mask:0xf
  global_store_dword v10, v14, s[8:9]
  v_add_u32 v10, 0x100, v10
  // out[576 + x] = v_add_i32 0x7ffffff0 + x clamp (saturates at x >= 15);
  // out[640 + x] = v_sub_i32 x - 5 (wraps); out[704 + x] = v_sub_i32
  // 0x80000005 - x clamp (saturates at x >= 5); out[768 + x] = v_add_i32
  // 0x7ffffff0 + x without clamp (wraps).
  v_mov_b32 v15, 0x7ffffff0
  v_add_i32 v16, v15, v2 clamp
  global_store_dword v10, v16, s[8:9]
  v_add_u32 v10, 0x100, v10
  v_sub_i32 v16, v2, 5
  global_store_dword v10, v16, s[8:9]
  v_add_u32 v10, 0x100, v10
  v_mov_b32 v15, 0x80000005
  v_sub_i32 v16, v15, v2 clamp
  global_store_dword v10, v16, s[8:9]
  v_add_u32 v10, 0x100, v10
  v_mov_b32 v15, 0x7ffffff0
  v_add_i32 v16, v15, v2
  global_store_dword v10, v16, s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
// STATS: LDS {{[0-9]+}} (read {{[0-9]+}} B, written 1536 B)
// LDS[256 + 4x] = 1000 + x.
// CHECK: 0: 1000
// CHECK: 63: 1063
// LDS[512 + 4x] = 1064 + x (inst offset on both sides).
// CHECK: 64: 1064
// CHECK: 127: 1127
// LDS[768 + 16x + 4k] = 1000 + 4x + k while 4x + k < 150, else 0.
// CHECK: 128: 1000
// CHECK: 275: 1147
// CHECK-NEXT: 276: 1148
// CHECK-NEXT: 277: 1149
// CHECK-NEXT: 278: 0
// CHECK-NEXT: 279: 0
// CHECK-NEXT: 280: 0
// CHECK: 383: 0
// Plain raw load past the stride field: 1100 + x for x < 50, then 0.
// CHECK: 448: 1100
// CHECK: 497: 1149
// CHECK-NEXT: 498: 0
// CHECK: 511: 0
// row_newbcast:5: lanes 0..15 get 12, 16..31 get 28, 48..63 get 60.
// CHECK: 512: 12
// CHECK: 527: 12
// CHECK-NEXT: 528: 28
// CHECK: 575: 60
// v_add_i32 clamp: 0x7ffffff0 + x up to 2147483647.
// CHECK: 576: 2147483632
// CHECK: 590: 2147483646
// CHECK-NEXT: 591: 2147483647
// CHECK: 639: 2147483647
// v_sub_i32 x - 5 wraps: lane 0 = 2^32 - 5.
// CHECK: 640: 4294967291
// CHECK: 645: 0
// v_sub_i32 0x80000005 - x clamp: 2147483653 - x down to INT32_MIN.
// CHECK: 704: 2147483653
// CHECK: 708: 2147483649
// CHECK-NEXT: 709: 2147483648
// CHECK-NEXT: 710: 2147483648
// CHECK: 767: 2147483648
// v_add_i32 without clamp wraps: lane 16 = 0x80000000.
// CHECK: 783: 2147483647
// CHECK-NEXT: 784: 2147483648
