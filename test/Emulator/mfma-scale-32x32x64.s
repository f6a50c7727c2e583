// v_mfma_scale_f32_32x32x64_f8f6f4: BF8 A x FP4 B, random data and scales,
// lane tables of gfx950-notes.md ("32x32x64 variant") and the 32x32 output
// layout (VGPR i of lane l = D[8(i/4) + 4(l/32) + i%4][l%32]).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: rm -rf %t.d && %python %S/Inputs/mfma_ref.py gen scale32 %t.d --fa bf8 --fb fp4 --opsel-a 2 --opsel-b 0 --seed 11
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.d/in0.bin --arg in:%t.d/in1.bin --arg out:%t.d/out.bin:4096
// RUN: %python %S/Inputs/mfma_ref.py check scale32 %t.d %t.d/out.bin --fa bf8 --fb fp4 --opsel-a 2 --opsel-b 0 | FileCheck %s
// CHECK: PASS
// CHECK: contiguous-K FP8 layout gives a different result: yes
.include "kernel-prologue.inc"
  v_and_b32 v3, 63, v0
  v_lshlrev_b32 v2, 5, v3
  global_load_dwordx4 v[4:7], v2, s[4:5]
  global_load_dwordx4 v[8:11], v2, s[4:5] offset:16
  global_load_dwordx4 v[12:15], v2, s[4:5] offset:2048
  global_load_dwordx4 v[16:19], v2, s[4:5] offset:2064
  global_load_dword v20, v1, s[6:7]
  global_load_dword v21, v1, s[6:7] offset:256
  s_waitcnt vmcnt(0)
  v_mfma_scale_f32_32x32x64_f8f6f4 v[32:47], v[4:11], v[12:15], 0, v20, v21 op_sel:[0,0,0] op_sel_hi:[1,0,0] cbsz:1 blgp:4
  s_nop 15
  s_nop 15
  v_lshlrev_b32 v2, 6, v3
  global_store_dwordx4 v2, v[32:35], s[8:9]
  global_store_dwordx4 v2, v[36:39], s[8:9] offset:16
  global_store_dwordx4 v2, v[40:43], s[8:9] offset:32
  global_store_dwordx4 v2, v[44:47], s[8:9] offset:48
  s_endpgm
.include "kernel-epilogue.inc"
