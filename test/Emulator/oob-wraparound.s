// Accesses whose address range wraps around 2^64 are reported as
// out-of-bounds (lane, address, instruction), never performed: the bounds
// check used to compare `addr + n` in 64 bits, so an address near 2^64 (an
// SGPR pair holding a v_cmp mask, say) passed it and touched host memory.
// The kernel picks the access from in0[0]; every address is in lane 0.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: %python -c "import sys; [open(sys.argv[1] + str(i),'wb').write(bytes([i,0,0,0])) for i in range(6)]" %t.sel
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel0 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=GLOBAL
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel1 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=FLAT
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel2 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel3 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=MASK
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel4 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=ATOMIC
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.sel5 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s --check-prefix=VOFF
// GLOBAL: error: wave 0 of workgroup (0,0,0): out-of-bounds global load of 16 bytes at address 0xfffffffffffffffc (lane 0) at 0x{{[0-9a-f]+}} (global_load_dwordx4 v[4:7], v3, s[10:11])
// FLAT: out-of-bounds global load of 8 bytes at address 0xfffffffffffffffc (lane 0) at 0x{{[0-9a-f]+}} (flat_load_dwordx2 v[4:5], v[12:13])
// SCALAR: out-of-bounds scalar load of 16 bytes at address 0xfffffffffffffff8 (lane 0) at 0x{{[0-9a-f]+}} (s_load_dwordx4 s[16:19], s[10:11], 0x0)
// MASK: out-of-bounds global store of 8 bytes at address 0xffffffffffffffff (lane 0) at 0x{{[0-9a-f]+}} (global_store_dwordx2 v3, v[4:5], s[12:13])
// ATOMIC: out-of-bounds global atomic of 4 bytes at address 0xfffffffffffffffe (lane 0) at 0x{{[0-9a-f]+}} (global_atomic_add v3, v4, s[14:15])
// VOFF: out-of-bounds global load of 4 bytes at address 0xfffffffffffffffe (lane 0) at 0x{{[0-9a-f]+}} (global_load_dword v4, v[12:13], off offset:1)
.include "kernel-prologue.inc"
  s_load_dword s20, s[4:5], 0x0
  v_mov_b32 v3, 0
  s_mov_b32 s10, 0xfffffffc            // s[10:11] = 2^64 - 4
  s_mov_b32 s11, -1
  v_mov_b32 v12, s10                   // v[12:13] = 2^64 - 4
  v_mov_b32 v13, s11
  v_cmp_le_u32 s[12:13], 0, v1         // all 64 lanes true: 2^64 - 1
  s_mov_b32 s14, -2                    // s[14:15] = 2^64 - 2
  s_mov_b32 s15, -1
  s_waitcnt lgkmcnt(0)
  s_cmp_eq_u32 s20, 1
  s_cbranch_scc1 .Lflat
  s_cmp_eq_u32 s20, 2
  s_cbranch_scc1 .Lscalar
  s_cmp_eq_u32 s20, 3
  s_cbranch_scc1 .Lmask
  s_cmp_eq_u32 s20, 4
  s_cbranch_scc1 .Latomic
  s_cmp_eq_u32 s20, 5
  s_cbranch_scc1 .Lvoff
  global_load_dwordx4 v[4:7], v3, s[10:11]
  s_endpgm
.Lflat:
  flat_load_dwordx2 v[4:5], v[12:13]
  s_endpgm
.Lscalar:
  s_mov_b32 s10, -8
  s_load_dwordx4 s[16:19], s[10:11], 0x0
  s_endpgm
.Lmask:
  global_store_dwordx2 v3, v[4:5], s[12:13]
  s_endpgm
.Latomic:
  v_mov_b32 v4, 1
  global_atomic_add v3, v4, s[14:15]
  s_endpgm
.Lvoff:
  v_mov_b32 v12, -3
  global_load_dword v4, v[12:13], off offset:1
  s_endpgm
.include "kernel-epilogue.inc"
