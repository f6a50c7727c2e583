// RUN: uq-opt %s --convert-uq-to-linalg --split-input-file -verify-diagnostics

// Formats the reference library does not define are rejected by name.

func.func @fp8_scaled(%x: tensor<2x64xf32>) -> (tensor<2x64xi8>, tensor<2x2xi8>) {
  // expected-error @+1 {{'uq.quantize' op cannot be lowered to linalg: scaled fp8_e4m3/bf16 formats are not supported (the reference defines none)}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp8_e4m3, scale = ue8m0>}
      : tensor<2x64xf32> -> tensor<2x64xi8>, tensor<2x2xi8>
  return %c, %s : tensor<2x64xi8>, tensor<2x2xi8>
}
