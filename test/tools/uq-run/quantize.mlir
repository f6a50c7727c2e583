// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/npytool.py ties %t
// RUN: uq-run %s --entry codec --input %t/x.npy --output %t/c.npy --output %t/s.npy --output %t/d.npy
// RUN: %python %S/Inputs/npytool.py check-ties %t/c.npy %t/s.npy %t/d.npy | FileCheck %s

// bf16 rows (uint16 .npy) through uq.quantize/uq.dequantize: the format
// doc's tie examples (+0.25 -> 0, -0.25 -> -0.5, 2.5 -> 2, -2.5 -> -3, ...),
// scale byte 127 for max 6, and the zero sentinel for a zero group and a
// group holding an Inf; codes and scales come back as uint8 arrays.
// CHECK: OK

func.func @codec(%x: tensor<3x32xbf16>) -> (tensor<3x16xi8>, tensor<3x1xi8>, tensor<3x32xf32>) {
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>}
      : tensor<3x32xbf16> -> tensor<3x16xi8>, tensor<3x1xi8>
  %d = uq.dequantize %c, %s {format = #uq.kv_format<fp4_e2m1>}
      : tensor<3x16xi8>, tensor<3x1xi8> -> tensor<3x32xf32>
  return %c, %s, %d : tensor<3x16xi8>, tensor<3x1xi8>, tensor<3x32xf32>
}
