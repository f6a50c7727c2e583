// EXEC-masked control flow: odd lanes take the "then" side, even lanes the
// "else" side of an if/else built with s_and_saveexec / s_xor / s_or, and a
// uniform loop (s_cbranch_scc) runs 3 times for every lane; v_cndmask and
// VOPC/VOP3 compares writing vcc / an SGPR pair.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.out:512
// RUN: %python %S/Inputs/dump.py %t.out u32 | FileCheck %s
// lane 0 (even): 3 * 10 = 30; lane 1 (odd): 3 * 7 = 21; cndmask word: 0/1
// CHECK: 0: 30
// CHECK: 1: 21
// CHECK: 2: 30
// CHECK: 63: 21
// CHECK: 64: 5
// CHECK: 65: 9
// CHECK: 66: 5
// CHECK: 127: 9
.include "kernel-prologue.inc"
  v_and_b32 v2, 0x3ff, v0
  v_and_b32 v3, 1, v2
  v_mov_b32 v4, 0
  s_mov_b32 s10, 0
.Lloop:
  v_cmp_eq_u32 vcc, 1, v3
  s_and_saveexec_b64 s[12:13], vcc
  s_cbranch_execz .Lelse
  v_add_u32 v4, 7, v4
.Lelse:
  s_xor_b64 exec, exec, s[12:13]    // exec = saved & ~then
  s_cbranch_execz .Lend
  v_add_u32 v4, 10, v4
.Lend:
  s_or_b64 exec, exec, s[12:13]
  s_add_u32 s10, s10, 1
  s_cmp_lt_u32 s10, 3
  s_cbranch_scc1 .Lloop
  global_store_dword v1, v4, s[8:9]
  v_cmp_gt_u32_e64 s[14:15], v3, 0
  v_cndmask_b32 v5, 5, 9, s[14:15]
  global_store_dword v1, v5, s[8:9] offset:256
  s_endpgm
.include "kernel-epilogue.inc"
