// A splat constant of 2^31 f32: a few bytes of text, 8 GiB in the host
// program (uq-run ran out of memory translating it to LLVM IR).
func.func @f() -> tensor<2147483648xf32> {
  %c = arith.constant dense<1.0> : tensor<2147483648xf32>
  return %c : tensor<2147483648xf32>
}
