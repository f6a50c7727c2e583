// --timing-sample refuses a sample in which every traced workgroup was idle:
// workgroups 0..2 exit at once, only workgroup 3 loads and stores, and
// sampling 2 of the 4 traces 0 and 2. Tracing 3 of them (0, 1, 2) is as
// idle; tracing all 4, or a sample with workgroup 3 (--timing-sample 4 on a
// grid of 4 traces everything), gives a number.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: not uq-emu %t.hsaco --kernel k --grid 4 --block 64 --arg zeros:256 --arg zeros:4 --arg zeros:256 --timing --timing-sample 2 2>&1 | FileCheck %s --check-prefix=IDLE
// RUN: not uq-emu %t.hsaco --kernel k --grid 4 --block 64 --arg zeros:256 --arg zeros:4 --arg zeros:256 --timing --timing-sample 3 2>&1 | FileCheck %s --check-prefix=IDLE3
// RUN: uq-emu %t.hsaco --kernel k --grid 4 --block 64 --arg zeros:256 --arg zeros:4 --arg zeros:256 --timing --timing-sample 4 | FileCheck %s --check-prefix=ALL
// IDLE: uq-emu: error: timing model: all 2 traced workgroups of the 4 in kernel 'k' were idle (no vector memory, LDS or MFMA instruction: they exited early), so the sample says nothing about the work of the grid; trace workgroups that have work
// IDLE3: all 3 traced workgroups of the 4 in kernel 'k' were idle
// ALL: timing model: kernel 'k', 4 workgroups (4 traced)
// ALL: estimate: {{[0-9]+}} cycles
.include "kernel-prologue.inc"
  s_cmp_lt_u32 s2, 3
  s_cbranch_scc1 .Lend
  global_load_dword v2, v1, s[4:5]
  s_waitcnt vmcnt(0)
  global_store_dword v1, v2, s[8:9]
.Lend:
  s_endpgm
.include "kernel-epilogue.inc"
