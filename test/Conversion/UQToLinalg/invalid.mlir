// RUN: uq-opt %s --convert-uq-to-linalg --split-input-file -verify-diagnostics

// Formats no lowering implements never reach the pass: MX-style FP8 (E4M3
// with UE8M0 group scales) is rejected by the attribute verifier, with a
// message that says so (docs/dialect.md). The pass still names any
// unsupported format it is handed (unsupportedFormat in UQToLinalg.cpp).

func.func @fp8_scaled(%x: tensor<2x64xf32>) -> (tensor<2x64xi8>, tensor<2x2xi8>) {
  // expected-error @+1 {{fp8_e4m3 with ue8m0 scales (MX-FP8) is not supported: no lowering or reference implements it; use fp8_e4m3 without scales or fp4_e2m1}}
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp8_e4m3, scale = ue8m0>}
      : tensor<2x64xf32> -> tensor<2x64xi8>, tensor<2x2xi8>
  return %c, %s : tensor<2x64xi8>, tensor<2x2xi8>
}
