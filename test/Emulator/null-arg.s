// --arg null passes a buffer argument as the null pointer (kernels with
// optional pointers test them against 0, as AITER's do). The kernel writes
// 1 to out when in1 is null, else 2.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg null --arg out:%t.null:256
// RUN: %python %S/Inputs/dump.py %t.null u32 1 | FileCheck %s --check-prefix=NULL
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg zeros:4 --arg out:%t.buf:256
// RUN: %python %S/Inputs/dump.py %t.buf u32 1 | FileCheck %s --check-prefix=BUF
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg zeros:4 --arg null:4 --arg out:%t.x:256 2>&1 | FileCheck %s --check-prefix=BAD
// NULL: 0: 1
// BUF: 0: 2
// BAD: error: bad --arg 'null:4' (kind must be in, out, inout, zeros, null,
.include "kernel-prologue.inc"
  s_or_b32 s10, s6, s7
  s_cmp_eq_u32 s10, 0
  s_cselect_b32 s11, 1, 2
  v_mov_b32 v2, s11
  global_store_dword v1, v2, s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
