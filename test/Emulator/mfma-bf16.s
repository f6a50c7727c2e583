// v_mfma_f32_16x16x32_bf16: lane l holds A[l%16][8(l/16)..+7] and
// B[8(l/16)..+7][l%16] (8 bf16 in 4 VGPRs, low half first); D = A*B
// accumulated twice through C (AGPR destination) = 2*A*B.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: rm -rf %t.d && %python %S/Inputs/mfma_ref.py gen bf16 %t.d --seed 2
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.d/in0.bin --arg in:%t.d/in1.bin --arg out:%t.d/out.bin:1024
// RUN: %python %S/Inputs/mfma_ref.py check bf16 %t.d %t.d/out.bin | FileCheck %s
// CHECK: PASS
.include "kernel-prologue.inc"
  v_and_b32 v3, 63, v0
  v_lshlrev_b32 v2, 5, v3
  global_load_dwordx4 v[4:7], v2, s[4:5]
  global_load_dwordx4 v[12:15], v2, s[4:5] offset:2048
  s_waitcnt vmcnt(0)
  v_mfma_f32_16x16x32_bf16 a[0:3], v[4:7], v[12:15], 0
  s_nop 7
  v_mfma_f32_16x16x32_bf16 a[0:3], v[4:7], v[12:15], a[0:3]
  s_nop 7
  s_nop 7
  v_accvgpr_read_b32 v24, a0
  v_accvgpr_read_b32 v25, a1
  v_accvgpr_read_b32 v26, a2
  v_accvgpr_read_b32 v27, a3
  v_lshlrev_b32 v2, 4, v3
  global_store_dwordx4 v2, v[24:27], s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
