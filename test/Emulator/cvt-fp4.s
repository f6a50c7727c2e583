// v_cvt_scalef32_pk_{bf16,f32}_fp4 with every op_sel byte and random codes
// and scales, and v_cvt_scalef32_pk_fp4_f32 round trip, against
// Inputs/cvt_ref.py (FP4 E2M1 table and E8M0 from the OCP MX spec).
// in0: 64 random dwords (8 FP4 codes each); in1: 64 random E8M0 bytes << 23.
// out: per lane 4 bf16 pairs (sel 0..3), 2 f32 (sel 1), 1 re-quantised dword.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: rm -rf %t.d && mkdir %t.d && %python %S/Inputs/cvt_ref.py gen %t.d
// RUN: uq-emu %t.hsaco --kernel k --block 64 --arg in:%t.d/in0.bin --arg in:%t.d/in1.bin --arg out:%t.d/out.bin:2048
// RUN: %python %S/Inputs/cvt_ref.py check %t.d | FileCheck %s
// CHECK: bf16 sel0 PASS
// CHECK: bf16 sel1 PASS
// CHECK: bf16 sel2 PASS
// CHECK: bf16 sel3 PASS
// CHECK: f32 sel1 PASS
// CHECK: fp4 roundtrip PASS
.include "kernel-prologue.inc"
  global_load_dword v2, v1, s[4:5]
  global_load_dword v3, v1, s[6:7]
  s_waitcnt vmcnt(0)
  v_cvt_scalef32_pk_bf16_fp4 v10, v2, v3
  v_cvt_scalef32_pk_bf16_fp4 v11, v2, v3 op_sel:[1,0,0]
  v_cvt_scalef32_pk_bf16_fp4 v12, v2, v3 op_sel:[0,1,0]
  v_cvt_scalef32_pk_bf16_fp4 v13, v2, v3 op_sel:[1,1,0]
  v_cvt_scalef32_pk_f32_fp4 v[14:15], v2, v3 op_sel:[1,0,0]
  // Re-quantise byte 1's values with the same scale into byte 2 of v2 copy.
  v_mov_b32 v16, v2
  v_cvt_scalef32_pk_fp4_f32 v16, v14, v15, v3 op_sel:[0,0,0,1]
  v_and_b32 v17, 0x3f, v0
  v_lshlrev_b32 v17, 5, v17            // 32 bytes per lane
  global_store_dwordx4 v17, v[10:13], s[8:9]
  global_store_dwordx3 v17, v[14:16], s[8:9] offset:16
  s_endpgm
.include "kernel-epilogue.inc"
