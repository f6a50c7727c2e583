// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=4' | FileCheck %s --check-prefix=DEFAULT
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=1' | FileCheck %s --check-prefix=FP8
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=5' 2>&1 | FileCheck %s --check-prefix=MIXED

// The policy pass sets uq.paged_attention's formats (and query precision)
// together with the cache write's, so the attention reads the cache in the
// format it was written in.

// DEFAULT-LABEL: func @layer
// DEFAULT: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>{{.*}}v_format = #uq.kv_format<fp4_e2m1, c = 0.196, scale_rule = mse_search>
// DEFAULT: uq.paged_attention {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>, layout = #uq.cache_layout<vllm_slot>, v_format = #uq.kv_format<fp4_e2m1, c = 0.196, scale_rule = mse_search>}

// FP8: uq.cache_write {{.*}}k_format = #uq.kv_format<fp8_e4m3>{{.*}}v_format = #uq.kv_format<fp8_e4m3>}
// FP8: uq.paged_attention {{.*}}k_format = #uq.kv_format<fp8_e4m3>, layout = #uq.cache_layout<vllm_slot>, query_precision = #uq<query_precision f32>, v_format = #uq.kv_format<fp8_e4m3>}

// MIXED: error: uq-apply-precision-policy: the policy gives layer 5's KV heads different formats
func.func @layer(%k: tensor<?x2x128xbf16>, %v: tensor<?x2x128xbf16>, %s: tensor<?xi64>,
                 %cache: tensor<?x16x2x512xi8>, %q: tensor<?x4x128xbf16>,
                 %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>)
    -> (tensor<?x16x2x512xi8>, tensor<?x4x128xf32>) {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?xi64> into tensor<?x16x2x512xi8>
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x4x128xbf16>, tensor<?x16x2x512xi8>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>) -> tensor<?x4x128xf32>
  return %c, %o : tensor<?x16x2x512xi8>, tensor<?x4x128xf32>
}
