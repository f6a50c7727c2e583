// gfx950 transposing LDS reads feeding MFMAs: B (K x 16, N contiguous in
// LDS) is read with ds_read_b64_tr_b{16,8,4} straight into the MFMA B
// operand and multiplied with a plainly loaded A; dsreadtr_ref.py computes
// the LDS addresses from the documented lane map and checks A*B (see
// docs/emulator.md, "Transposing LDS reads", for the map and its source).
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs --defsym BITS=16 %s -o %t16.o
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs --defsym BITS=8 %s -o %t8.o
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs --defsym BITS=4 %s -o %t4.o
// RUN: ld.lld -shared %t16.o -o %t16.hsaco && ld.lld -shared %t8.o -o %t8.hsaco && ld.lld -shared %t4.o -o %t4.hsaco
// RUN: rm -rf %t.d && %python %S/Inputs/dsreadtr_ref.py gen 16 %t.d/16 --seed 3
// RUN: uq-emu %t16.hsaco --kernel k --block 64 --arg in:%t.d/16/in0.bin --arg in:%t.d/16/in1.bin --arg out:%t.d/16/out.bin:1024 --stats | FileCheck %s --check-prefix=STATS16
// RUN: %python %S/Inputs/dsreadtr_ref.py check 16 %t.d/16 %t.d/16/out.bin --seed 3 | FileCheck %s
// RUN: %python %S/Inputs/dsreadtr_ref.py gen 8 %t.d/8 --seed 4
// RUN: uq-emu %t8.hsaco --kernel k --block 64 --arg in:%t.d/8/in0.bin --arg in:%t.d/8/in1.bin --arg out:%t.d/8/out.bin:1024
// RUN: %python %S/Inputs/dsreadtr_ref.py check 8 %t.d/8 %t.d/8/out.bin --seed 4 | FileCheck %s
// RUN: %python %S/Inputs/dsreadtr_ref.py gen 4 %t.d/4 --seed 5
// RUN: uq-emu %t4.hsaco --kernel k --block 64 --arg in:%t.d/4/in0.bin --arg in:%t.d/4/in1.bin --arg out:%t.d/4/out.bin:1024
// RUN: %python %S/Inputs/dsreadtr_ref.py check 4 %t.d/4 %t.d/4/out.bin --seed 5 | FileCheck %s
// CHECK: PASS
// STATS16: LDS 3 (read 1024 B, written 1024 B)
// The ISA requires EXEC to be all ones and 8-byte aligned addresses.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs --defsym BITS=99 %s -o %terr.o
// RUN: ld.lld -shared %terr.o -o %terr.hsaco
// RUN: not uq-emu %terr.hsaco --kernel k --block 64 --arg in:%t.d/16/in0.bin --arg in:%t.d/16/in1.bin --arg out:%t.d/16/out.bin:1024 2>&1 | FileCheck %s --check-prefix=EXEC
// EXEC: ds_read_b64_tr_b16 needs EXEC all ones (CDNA4 ISA 11.4; EXEC 0x7fffffffffffffff) at {{.*}} (ds_read_b64_tr_b16 v[12:13], v21)
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs --defsym BITS=98 %s -o %talign.o
// RUN: ld.lld -shared %talign.o -o %talign.hsaco
// RUN: not uq-emu %talign.hsaco --kernel k --block 64 --arg in:%t.d/16/in0.bin --arg in:%t.d/16/in1.bin --arg out:%t.d/16/out.bin:1024 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: misaligned LDS address 0x4 (lane 0; transposing reads need 8-byte alignment) at {{.*}} (ds_read_b64_tr_b8 v[12:13], v21 offset:4)
.include "kernel-prologue.inc"
  v_and_b32 v3, 63, v0
  v_lshlrev_b32 v2, 4, v3                 // lane * 16
  global_load_dwordx4 v[4:7], v2, s[4:5]  // A lane image
  global_load_dwordx4 v[8:11], v2, s[4:5] offset:1024   // B bytes for LDS
  v_lshlrev_b32 v20, 2, v3
  global_load_dword v21, v20, s[6:7]      // address of this lane's read
  s_waitcnt vmcnt(0)
  ds_write_b128 v2, v[8:11]
  s_waitcnt lgkmcnt(0)
.if BITS == 16
  ds_read_b64_tr_b16 v[12:13], v21
  ds_read_b64_tr_b16 v[14:15], v21 offset:128
  s_waitcnt lgkmcnt(0)
  v_mfma_f32_16x16x32_bf16 v[24:27], v[4:7], v[12:15], 0
.elseif BITS == 8
  ds_read_b64_tr_b8 v[12:13], v21
  s_waitcnt lgkmcnt(0)
  v_mfma_f32_16x16x32_fp8_fp8 v[24:27], v[4:5], v[12:13], 0
.elseif BITS == 4
  ds_read_b64_tr_b4 v[12:13], v21
  ds_read_b64_tr_b4 v[14:15], v21 offset:128
  s_waitcnt lgkmcnt(0)
  v_mov_b32 v30, 0x7f7f7f7f                // E8M0 127: scale 1.0
  v_mfma_scale_f32_16x16x128_f8f6f4 v[24:27], v[4:7], v[12:15], 0, v30, v30 cbsz:4 blgp:4
.elseif BITS == 99
  s_mov_b32 exec_hi, 0x7fffffff
  ds_read_b64_tr_b16 v[12:13], v21
.else
  v_mov_b32 v21, 0
  ds_read_b64_tr_b8 v[12:13], v21 offset:4
.endif
  s_nop 7
  s_nop 7
  s_nop 7
  global_store_dwordx4 v2, v[24:27], s[8:9]
  s_endpgm
.include "kernel-epilogue.inc"
