// A valid program for tests whose inputs are the problem.
func.func @rot(%q: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %r = uq.rotate %q : tensor<2x64xf32>
  return %r : tensor<2x64xf32>
}
