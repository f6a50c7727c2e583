// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/paged.py make %t
// RUN: uq-run %s --entry prefill --input %t/k.npy --input %t/v.npy --input %t/slots.npy --input %t/cache.npy --input %t/q.npy --input %t/bt.npy --input %t/lens.npy --input %t/qsl.npy --input %t/sinks.npy --output %t/cache_out.npy --output %t/o.npy
// RUN: %python %S/Inputs/paged.py check %t | FileCheck %s

// One serving step end to end through .npy files, every batch size dynamic:
// uq.cache_write stores the new tokens (a padding token skipped), then
// uq.paged_attention attends a fresh prompt, a chunk over a cached prefix, a
// decode, an empty sequence and a sequence shorter than its query, with
// sinks and a 48-token window; three tokens after the last sequence. numpy
// decodes the cache bytes by the format contract and evaluates the
// definition in float64 (Inputs/paged.py).
// CHECK: OK

func.func @prefill(%k: tensor<?x2x64xbf16>, %v: tensor<?x2x64xbf16>,
                   %slots: tensor<?xi64>, %cache: tensor<?x16x2x68xi8>,
                   %q: tensor<?x4x64xbf16>, %bt: tensor<?x?xi32>,
                   %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                   %sinks: tensor<4xf32>)
    -> (tensor<?x16x2x68xi8>, tensor<?x4x64xf32>) {
  %c = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?xi64>
        into tensor<?x16x2x68xi8>
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl sinks %sinks
      scale 0.125 window 48
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>,
       query_precision = #uq<query_precision f32>}
      : (tensor<?x4x64xbf16>, tensor<?x16x2x68xi8>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<4xf32>) -> tensor<?x4x64xf32>
  return %c, %o : tensor<?x16x2x68xi8>, tensor<?x4x64xf32>
}
