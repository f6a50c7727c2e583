// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/robust.py mixed %t
// RUN: uq-run %s --entry mixed --input %t/x.npy --input %t/y.npy --input %t/w.npy --output %t/s.npy --output %t/mm.npy
// RUN: %python %S/Inputs/robust.py check-mixed %t %t/s.npy %t/mm.npy | FileCheck %s

// uq ops next to ordinary tensor code: elementwise arith/math on whole
// tensors (converted to linalg by the CPU pipeline's
// convert-elementwise-to-linalg; they used to stop bufferization with "op
// was not bufferized"), tensor.empty, linalg.fill and linalg.matmul.
// CHECK: OK

func.func @mixed(%x: tensor<2x64xf32>, %y: tensor<2x64xf32>, %w: tensor<64x8xf32>)
    -> (tensor<2x64xf32>, tensor<2x8xf32>) {
  %m = arith.mulf %x, %y : tensor<2x64xf32>
  %a = math.absf %m : tensor<2x64xf32>
  %r = uq.rotate %a : tensor<2x64xf32>
  %s = arith.addf %r, %x : tensor<2x64xf32>
  %e = tensor.empty() : tensor<2x8xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  %mm = linalg.matmul ins(%s, %w : tensor<2x64xf32>, tensor<64x8xf32>)
                      outs(%f : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s, %mm : tensor<2x64xf32>, tensor<2x8xf32>
}
