// RUN: uq-compile %s -o %t.hsaco
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t.hsaco.json'))['kernels']}; m = k['decode_0_merge']; print('chunk', m['params']['merge_chunk'], 'scratch', m['private_segment_fixed_size'])" | FileCheck %s --check-prefix=AUTO
// RUN: not uq-compile %s -o %t32.hsaco --merge-chunk=32 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: uq-compile %s -o %t8.hsaco --merge-chunk=8
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t8.hsaco.json'))['kernels']}; print('chunk', k['decode_0_merge']['params']['merge_chunk'])" | FileCheck %s --check-prefix=EIGHT
// RUN: not uq-compile %s -o %t12.hsaco --merge-chunk=12 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not uq-opt %s --convert-uq-to-wave="merge-chunk=24" 2>&1 | FileCheck %s --check-prefix=PASS

// The decode merge kernel's chunk (--merge-chunk, default 0 = automatic):
// with rotated values and v_mean at D = 128, LLVM 22 spills SGPRs of the
// merge kernel to scratch at 32 partitions per step, so the automatic
// choice compiles the input again at 16 and the code object has no scratch.
// AUTO: chunk 16 scratch 0
// A chunk the user forces is kept, and the scratch is the usual error.
// FORCED: error: kernel decode_0_merge uses scratch memory
// EIGHT: chunk 8
// RANGE: error: --merge-chunk must be 0 (automatic), 8, 16, 32 or 64, got 12
// PASS: error: 'uq.decode_attention' op merge-chunk 24 is not supported (8, 16, 32 or 64 partitions per step of the merge loop)
func.func @decode(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x2x136xi8>,
                  %bt: tensor<?x?xi32>, %lens: tensor<?xi32>,
                  %mk: tensor<2x128xf32>, %mv: tensor<2x128xf32>) -> tensor<?x8x128xf32> {
  %o = uq.decode_attention %q, %c, %bt, %lens k_mean %mk v_mean %mv scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision fp8_e4m3_scaled>}
      : (tensor<?x8x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<2x128xf32>, tensor<2x128xf32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
