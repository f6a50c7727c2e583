// The decoder refuses any operand or modifier it does not model, naming the
// instruction text and the token, instead of running the instruction with
// the token dropped (as it once dropped `lds` and read the remaining
// operands shifted by one). `lds` on a sub-dword buffer load is such a
// token: only the dword, dwordx3 and dwordx4 LDS-DMA forms are modelled.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: not uq-emu %t.hsaco --kernel k --block 64 --arg zeros:1024 --arg zeros:4 --arg out:%t.out:256 2>&1 | FileCheck %s
// CHECK: uq-emu: error: wave 0 of workgroup (0,0,0): 'buffer_load_ubyte': unmodelled operand or modifier 'lds' at 0x{{[0-9a-f]+}} (buffer_load_ubyte v1, s[12:15], 0 offen lds)
.include "kernel-prologue.inc"
  s_mov_b32 s12, s4
  s_and_b32 s13, s5, 0xffff
  s_movk_i32 s14, 0x400
  s_mov_b32 s15, 0x27000
  s_mov_b32 m0, 0
  buffer_load_ubyte v1, s[12:15], 0 offen lds
  s_endpgm
.include "kernel-epilogue.inc"
