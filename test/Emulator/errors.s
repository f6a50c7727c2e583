// Errors are reported, never ignored: out-of-bounds global store (address
// and lane), LDS out of bounds, unimplemented instruction. The kernel picks
// the failure from in0[0] (a one-dword selector buffer).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: %python -c "import sys; open(sys.argv[1],'wb').write(bytes([0,0,0,0]))" %t.sel0
// RUN: %python -c "import sys; open(sys.argv[1],'wb').write(bytes([1,0,0,0]))" %t.sel1
// RUN: %python -c "import sys; open(sys.argv[1],'wb').write(bytes([2,0,0,0]))" %t.sel2
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel0 --arg zeros:4 --arg out:%t.out:252 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel1 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=LDS
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel2 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=UNIMP
// The same kernel with a big enough output buffer and selector 0 succeeds.
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel0 --arg zeros:4 --arg out:%t.out:256
// OOB: error: wave 0 of workgroup (0,0,0): out-of-bounds global store of 4 bytes at address 0x300000000fc (lane 63) at 0x{{[0-9a-f]+}} (global_store_dword v1, v0, s[8:9])
// LDS: out-of-bounds LDS access of 4 bytes at address 0x1000 (lane 0) at 0x{{[0-9a-f]+}} (ds_write_b32 v2, v0)
// UNIMP: unimplemented instruction 's_rfe_b64' at {{.*}} (s_rfe_b64 s[20:21])
.include "kernel-prologue.inc"
  s_load_dword s10, s[4:5], 0x0
  s_waitcnt lgkmcnt(0)
  s_cmp_eq_u32 s10, 1
  s_cbranch_scc1 .Llds
  s_cmp_eq_u32 s10, 2
  s_cbranch_scc1 .Lunimp
  global_store_dword v1, v0, s[8:9]
  s_endpgm
.Llds:
  v_mov_b32 v2, 0x1000
  ds_write_b32 v2, v0
  s_endpgm
.Lunimp:
  s_rfe_b64 s[20:21]
  s_endpgm
.include "kernel-epilogue.inc"
