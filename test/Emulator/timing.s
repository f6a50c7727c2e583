// uq-emu --timing / --timing-json / --timing-sample: the timing model's
// report for a launch (docs/timing-model.md). Eight scaled FP4 x FP4 MFMAs
// per one-wave workgroup: 8 x 4 passes x 4 cycles = 128 MFMA cycles each.
// RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/Inputs %s -o %t.o
// RUN: ld.lld -shared %t.o -o %t.hsaco
// RUN: uq-emu %t.hsaco --kernel k --grid 512 --arg zeros:4 --arg zeros:4 --arg zeros:256 --timing | FileCheck %s
// CHECK: timing model: kernel 'k', 512 workgroups (512 traced), 2 on the busiest CU
// The kernel's 64 arch VGPRs and 64 AGPRs (accum_offset 64, next_free_vgpr
// 128) are .vgpr_count 128 with .agpr_count 64, LLVM's unified count:
// 512 / 128 = 4 waves per SIMD.
// CHECK: occupancy: 1 waves per workgroup; waves/SIMD by registers 4, by SGPRs 8; workgroups/CU by registers 16, by LDS 40 -> 16 resident (4 waves/SIMD, limited by registers)
// Two workgroups on the busiest CU land on two SIMDs: 128 MFMA cycles.
// CHECK: cycles (busiest CU): VALU {{[0-9]+}}  MFMA 128
// CHECK: lower bound: {{[0-9]+}} cycles = {{[0-9.]+}} us (model), bound by
// CHECK: estimate: {{[0-9]+}} cycles = {{[0-9.]+}} us (model)
// CHECK: assumptions: model, not measured: gfx950 at 2.40 GHz, 256 CUs
// Sampling 4 workgroups of 512 gives the same per-workgroup figures.
// RUN: uq-emu %t.hsaco --kernel k --grid 512 --arg zeros:4 --arg zeros:4 --arg zeros:256 --timing-sample 4 --timing-json %t.json
// RUN: %python -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['traced_workgroups'] == 4 and d['workgroups'] == 512, d; assert d['cycles']['mfma'] == 128, d; assert d['estimate_cycles'] >= d['bound_cycles'] > 0, d; print('JSON OK', d['bound_resource'])" %t.json | FileCheck %s --check-prefix=JSON
// JSON: JSON OK
// RUN: not uq-emu %t.hsaco --kernel k --arg zeros:4 --arg zeros:4 --arg zeros:256 --timing-sample 4 2>&1 | FileCheck %s --check-prefix=NEEDS
// NEEDS: error: --timing-sample needs --timing or --timing-json
.include "kernel-prologue.inc"
  .rept 8
  v_mfma_scale_f32_16x16x128_f8f6f4 v[24:27], v[4:7], v[12:15], 0, v20, v21 cbsz:4 blgp:4
  .endr
  s_endpgm
.include "kernel-epilogue.inc"
