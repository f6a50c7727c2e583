// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/robust.py zero-tokens %t
// RUN: uq-run %s --entry dynamic --input %t/k.npy --input %t/v.npy --input %t/slots.npy --input %t/cache.npy --output %t/out.npy
// RUN: %python %S/Inputs/robust.py check-same %t/cache.npy %t/out.npy | FileCheck %s
// RUN: uq-run %s --entry static --input %t/k.npy --input %t/v.npy --input %t/slots.npy --input %t/cache.npy --output %t/out0.npy
// RUN: %python %S/Inputs/robust.py check-same %t/cache.npy %t/out0.npy | FileCheck %s

// uq.cache_write of no token at all, with a dynamic and a static token
// count, is a no-op on the CPU path: every cache byte comes back as it was.
// (The static form used to fail in convert-uq-to-linalg with an
// out-of-bounds tensor.extract_slice.)
// CHECK: OK

func.func @dynamic(%k: tensor<?x2x64xf32>, %v: tensor<?x2x64xf32>, %slots: tensor<?xi64>,
                   %cache: tensor<4x16x2x68xi8>) -> tensor<4x16x2x68xi8> {
  %r = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64> into tensor<4x16x2x68xi8>
  return %r : tensor<4x16x2x68xi8>
}

func.func @static(%k: tensor<0x2x64xf32>, %v: tensor<0x2x64xf32>, %slots: tensor<0xi64>,
                  %cache: tensor<4x16x2x68xi8>) -> tensor<4x16x2x68xi8> {
  %r = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<0x2x64xf32>, tensor<0x2x64xf32>, tensor<0xi64> into tensor<4x16x2x68xi8>
  return %r : tensor<4x16x2x68xi8>
}
