// v_mfma_scale_f32_16x16x128_f8f6f4: FP8 A x FP4 B with random data and a
// different E8M0 scale per (row, K-block), checked against a float64 matrix
// product of the logical matrices placed by gfx950-notes.md's lane tables.
// The check also proves the data would NOT match if FP8 were read as 32
// contiguous K per lane.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: rm -rf %t.d && %python %S/Inputs/mfma_ref.py gen scale16 %t.d --fa fp8 --fb fp4 --opsel-a 1 --opsel-b 2 --seed 7
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.d/in0.bin --arg in:%t.d/in1.bin --arg out:%t.d/out.bin:1024 --stats | FileCheck %s --check-prefix=STATS
// RUN: %python %S/Inputs/mfma_ref.py check scale16 %t.d %t.d/out.bin --fa fp8 --fb fp4 --opsel-a 1 --opsel-b 2 | FileCheck %s
// CHECK: PASS
// CHECK: contiguous-K FP8 layout gives a different result: yes
// STATS: MFMA 1 [v_mfma_scale_f32_16x16x128_f8f6f4 1]
.include "kernel-prologue.inc"
  v_and_b32 v3, 63, v0
  v_lshlrev_b32 v2, 5, v3           // 32 bytes per lane
  global_load_dwordx4 v[4:7], v2, s[4:5]
  global_load_dwordx4 v[8:11], v2, s[4:5] offset:16
  global_load_dwordx4 v[12:15], v2, s[4:5] offset:2048
  global_load_dwordx4 v[16:19], v2, s[4:5] offset:2064
  global_load_dword v20, v1, s[6:7]
  global_load_dword v21, v1, s[6:7] offset:256
  s_waitcnt vmcnt(0)
  v_mfma_scale_f32_16x16x128_f8f6f4 v[24:27], v[4:11], v[12:15], 0, v20, v21 op_sel:[1,0,0] op_sel_hi:[0,1,0] blgp:4
  s_nop 15
  v_lshlrev_b32 v2, 4, v3
  global_store_dwordx4 v2, v[24:27], s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
