// s_barrier across 4 waves: every work-item writes its id to LDS, waits at
// the barrier, then reads the slot of the work-item 64 ahead (wrapping), so
// each wave reads what ANOTHER wave wrote before the barrier.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --grid 2 --block 256 --arg zeros:4 --arg zeros:4 --arg out:%t.out:2048 --stats | FileCheck %s --check-prefix=STATS
// RUN: %python %S/Inputs/dump.py %t.out u32 | FileCheck %s
// STATS: workgroups 2  waves 8
// STATS: barriers 8
// CHECK: 0: 1064
// CHECK: 1: 1065
// CHECK: 63: 1127
// CHECK: 64: 1128
// CHECK: 191: 1255
// CHECK: 192: 1000
// CHECK: 255: 1063
// CHECK: 256: 2064
// CHECK: 511: 2063
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0           // tid
  s_add_u32 s10, s2, 1
  s_mul_i32 s10, s10, 1000          // 1000 * (group + 1)
  v_add_u32 v3, s10, v2             // value = 1000*(g+1) + tid
  ds_write_b32 v1, v3
  s_waitcnt lgkmcnt(0)
  s_barrier
  v_add_u32 v4, 64, v2
  v_and_b32 v4, 255, v4
  v_lshlrev_b32 v4, 2, v4
  ds_read_b32 v5, v4
  s_lshl_b32 s11, s2, 10            // group * 1024 bytes
  v_add_u32 v6, s11, v1
  s_waitcnt lgkmcnt(0)
  global_store_dword v6, v5, s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
