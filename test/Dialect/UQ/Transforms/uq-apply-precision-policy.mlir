// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=4' | FileCheck %s --check-prefix=DEFAULT
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=2' | FileCheck %s --check-prefix=UQ
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=3' | FileCheck %s --check-prefix=OPTS
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=1' | FileCheck %s --check-prefix=FP8
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=0' | FileCheck %s --check-prefix=BF16
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy-fp8-heads.json layer=1' | FileCheck %s --check-prefix=FP8
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=5' 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy-fp8-heads.json layer=0' 2>&1 | FileCheck %s --check-prefix=MIXED2
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=6' | FileCheck %s --check-prefix=ROTV
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=8' 2>&1 | FileCheck %s --check-prefix=QBF16
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=7' 2>&1 | FileCheck %s --check-prefix=INT4
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=9' | FileCheck %s --check-prefix=E4M3
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=10' | FileCheck %s --check-prefix=SPLIT
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=11' | FileCheck %s --check-prefix=SPLIT2
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=12' 2>&1 | FileCheck %s --check-prefix=SPLIT3
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=13' 2>&1 | FileCheck %s --check-prefix=KMEAN
// RUN: uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/policy.json layer=14' | FileCheck %s --check-prefix=QS32
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/missing.json' 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not uq-opt %s --uq-apply-precision-policy='policy=%S/Inputs/not-a-policy.json' 2>&1 | FileCheck %s --check-prefix=SCHEMA

// A precision policy written by the accuracy study (docs/precision-policy.md)
// sets the formats of one layer's cache write and attention. The cache has
// 512-byte slots, enough for every format.

// DEFAULT-LABEL: func @layer
// DEFAULT: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>{{.*}}v_format = #uq.kv_format<fp4_e2m1, c = 0.196, scale_rule = mse_search>
// DEFAULT: uq.decode_attention {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>, layout = #uq.cache_layout<vllm_slot>, v_format

// UQ: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>{{.*}}v_format = #uq.kv_format<fp4_e2m1>}

// OPTS: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.16666666666666666, rounding = nearest_even>{{.*}}v_format = #uq.kv_format<fp4_e2m1, c = 0.2, rounding = nearest_even>}

// FP8: uq.cache_write {{.*}}k_format = #uq.kv_format<fp8_e4m3>{{.*}}v_format = #uq.kv_format<fp8_e4m3>}
// FP8: uq.decode_attention {{.*}}query_precision = #uq<query_precision f32>{{.*}}v_format = #uq.kv_format<fp8_e4m3>}

// BF16: uq.cache_write {{.*}}k_format = #uq.kv_format<bf16>{{.*}}v_format = #uq.kv_format<bf16>}

// MIXED: error: uq-apply-precision-policy: the policy gives layer 5's KV heads different formats ('uq:c=0.196,search', 'fp8'); a uq cache has one format per layer
// MIXED2: error: uq-apply-precision-policy: the policy gives layer 0's KV heads different formats ('uq', 'fp8')
// ROTV: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>{{.*}}v_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>}
// QBF16: error: uq-apply-precision-policy: option 'q=bf16' of format 'uq:q=bf16' is not expressible in #uq.kv_format (q=bf16
// INT4: error: uq-apply-precision-policy: format 'int4' has no uq dialect equivalent
// E4M3: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>{{.*}}v_format = #uq.kv_format<fp4_e2m1, scale = e4m3, rotation = hadamard, scale_rule = mse_search>}
// E4M3: uq.decode_attention {{.*}}v_format = #uq.kv_format<fp4_e2m1, scale = e4m3, rotation = hadamard, scale_rule = mse_search>}
// SPLIT: uq.cache_write {{.*}}k_format = #uq.kv_format<fp8_e4m3>{{.*}}v_format = #uq.kv_format<fp4_e2m1, scale = e4m3, group = 16, rotation = hadamard, scale_rule = mse_search>}
// SPLIT: uq.decode_attention {{.*}}query_precision = #uq<query_precision f32>
// SPLIT2: uq.cache_write {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>{{.*}}v_format = #uq.kv_format<fp8_e4m3>}
// SPLIT2: uq.decode_attention {{.*}}k_format = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>, layout = #uq.cache_layout<vllm_slot>, v_format = #uq.kv_format<fp8_e4m3>}
// SPLIT3: error: uq-apply-precision-policy: format 'uq|fp8|bf16': 'KSPEC|VSPEC' takes exactly two specs
// KMEAN: error: uq-apply-precision-policy: option 'kmean' of format 'uq:kmean' is not a #uq.kv_format field: channel means are the k_mean / v_mean operands
// QS32: uq.decode_attention {{.*}}query_precision = #uq<query_precision fp8_e4m3_scaled>
// MISSING: error: uq-apply-precision-policy: cannot read '{{.*}}missing.json'
// SCHEMA: error: uq-apply-precision-policy: policy '{{.*}}not-a-policy.json' is not a uq.precision-policy/1 document
func.func @layer(%k: tensor<3x2x128xbf16>, %v: tensor<3x2x128xbf16>, %s: tensor<3xi64>,
                 %cache: tensor<8x16x2x512xi8>, %q: tensor<1x4x128xbf16>,
                 %bt: tensor<1x8xi32>, %lens: tensor<1xi32>)
    -> (tensor<8x16x2x512xi8>, tensor<1x4x128xf32>) {
  %c = uq.cache_write %k, %v, %s into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<3x2x128xbf16>, tensor<3x2x128xbf16>, tensor<3xi64> into tensor<8x16x2x512xi8>
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.088
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<1x4x128xbf16>, tensor<8x16x2x512xi8>, tensor<1x8xi32>, tensor<1xi32>) -> tensor<1x4x128xf32>
  return %c, %o : tensor<8x16x2x512xi8>, tensor<1x4x128xf32>
}
