// RUN: uq-compile %s -o %t.hsaco
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t.hsaco.json'))['kernels']}; print('vgpr', k['decode_0_partial']['vgpr_count'], 'spill', k['decode_0_partial']['vgpr_spill_count'])" | FileCheck %s --check-prefix=HINT
// RUN: uq-compile %s -o %t0.hsaco --waves-per-simd=0
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t0.hsaco.json'))['kernels']}; print('vgpr', k['decode_0_partial']['vgpr_count'])" | FileCheck %s --check-prefix=NOHINT
// RUN: uq-compile %s -o %t5.hsaco --waves-per-simd=5
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t5.hsaco.json'))['kernels']}; print('vgpr', k['decode_0_partial']['vgpr_count'], 'spill', k['decode_0_partial']['vgpr_spill_count'])" | FileCheck %s --check-prefix=FALLBACK
// RUN: not uq-compile %s -o %t9.hsaco --waves-per-simd=9 2>&1 | FileCheck %s --check-prefix=RANGE

// Occupancy (--waves-per-simd, default 4): the D = 128 decode partition
// kernel fits 512 / 4 = 128 VGPRs per lane with the hint, without spills
// (VGPR count at most 128: 4 waves per SIMD) ...
// HINT: vgpr {{([0-9]|[0-9][0-9]|1[01][0-9]|12[0-8])}} spill 0
// ... and uses more without it (3 waves per SIMD).
// NOHINT: vgpr {{(129|1[3-9][0-9]|2[0-9][0-9])}}
// 5 waves (at most 512 / 5 VGPRs) makes LLVM 22 spill 184 bytes per lane to
// scratch (checked with llc on --emit=llvmir): the kernel is compiled again
// without the hint, and the code object has no spills.
// FALLBACK: vgpr {{(6[5-9]|[7-9][0-9]|[1-2][0-9][0-9])}} spill 0
// RANGE: error: --waves-per-simd must be 0 (no hint) or 1 to 8, got 9
func.func @decode(%q: tensor<2x8x128xbf16>, %cache: tensor<64x16x1x136xi8>,
                  %bt: tensor<2x32xi32>, %lens: tensor<2xi32>) -> tensor<2x8x128xf32> {
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<2x8x128xbf16>, tensor<64x16x1x136xi8>, tensor<2x32xi32>, tensor<2xi32>) -> tensor<2x8x128xf32>
  return %o : tensor<2x8x128xf32>
}
