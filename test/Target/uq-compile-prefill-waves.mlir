// RUN: uq-compile %s -o %t.hsaco
// RUN: FileCheck %s --check-prefix=JSON < %t.hsaco.json
// RUN: uq-compile %s --prefill-waves=1 -o %t.1.hsaco
// RUN: FileCheck %s --check-prefix=JSON1 < %t.1.hsaco.json
// RUN: not uq-compile %s --prefill-waves=0 -o %t.0.hsaco 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: test ! -e %t.0.hsaco
// The 4-wave prefill kernel cannot reach the default occupancy hint
// (--waves-per-simd 4); LLVM's warning about it is expected and dropped:
// a successful compile prints nothing.
// RUN: uq-compile %s -o %t.quiet.hsaco 2>&1 | count 0
// The paged merge kernel's chunk (--prefill-merge-chunk, default 8; the
// decode merge's --merge-chunk does not apply to it):
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t.hsaco.json'))['kernels']}; print('chunk', k['paged_0_merge']['params']['merge_chunk'])" | FileCheck %s --check-prefix=CHUNK8
// RUN: uq-compile %s --prefill-merge-chunk=32 --merge-chunk=8 -o %t.32.hsaco
// RUN: %python -c "import json; k = {x['name']: x for x in json.load(open('%t.32.hsaco.json'))['kernels']}; print('chunk', k['paged_0_merge']['params']['merge_chunk'])" | FileCheck %s --check-prefix=CHUNK32
// RUN: not uq-compile %s --prefill-merge-chunk=5 -o %t.5.hsaco 2>&1 | FileCheck %s --check-prefix=CHUNKERR
// RUN: not uq-opt %s --convert-uq-to-wave="prefill-merge-chunk=24" 2>&1 | FileCheck %s --check-prefix=CHUNKPASS
// CHUNK8: chunk 8
// CHUNK32: chunk 32
// CHUNKERR: error: --prefill-merge-chunk must be 8, 16, 32 or 64, got 5
// CHUNKPASS: error: 'uq.paged_attention' op prefill-merge-chunk 24 is not supported (8, 16, 32 or 64 partitions per step of the merge loop)

// uq-compile --prefill-waves W (default 4): the paged prefill kernel's
// workgroup is W waves, which the JSON gives as its `block` (the launch
// size the harness and uq-emu use), with the grid rule's tokens per
// workgroup; the code object's workgroup limit and LDS agree.
// JSON: "name": "paged_0_query"
// JSON: "block": [
// JSON-NEXT: 256,
// JSON-NEXT: 1,
// JSON-NEXT: 1
// JSON-NEXT: ],
// JSON: "grid_rule": "(num_query_tiles, num_kv_heads, num_partitions); num_query_tiles >= num_tokens / tokens_per_tile + num_seqs + 2
// JSON: "group_segment_fixed_size": {{[1-9][0-9]*}},
// JSON: "max_flat_workgroup_size": 256,
// JSON-NEXT: "name": "paged_0_prefill",
// JSON: "tokens_per_tile": 8,
// JSON-NEXT: "tokens_per_wave": 2,
// JSON-NEXT: "waves_per_workgroup": 4,
// JSON1: "name": "paged_0_query"
// JSON1: "block": [
// JSON1-NEXT: 64,
// JSON1: "max_flat_workgroup_size": 64,
// JSON1-NEXT: "name": "paged_0_prefill",
// JSON1: "tokens_per_tile": 2,
// JSON1-NEXT: "tokens_per_wave": 2,
// JSON1-NEXT: "waves_per_workgroup": 1,
// ERR: uq-compile-prefill-waves.mlir:[[# @LINE + 2]]:8: error: 'uq.paged_attention' op prefill-waves 0 is not supported (1, 2, 4 or 8 waves per workgroup
func.func @paged(%q: tensor<?x8x128xbf16>, %c: tensor<?x16x1x136xi8>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> tensor<?x8x128xf32> {
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.0883883 {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>} : (tensor<?x8x128xbf16>, tensor<?x16x1x136xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  return %o : tensor<?x8x128xf32>
}
