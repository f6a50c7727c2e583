// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/npytool.py merge-inputs %t
// RUN: uq-run %s --entry merge --input %t/o.npy --input %t/m.npy --input %t/l.npy --input %t/sinks.npy --output %t/r.npy
// RUN: %python %S/Inputs/npytool.py check-merge %t %t/r.npy | FileCheck %s

// uq.merge_partitions with sinks, an empty partition and an all-empty row
// against the formula of its description evaluated by numpy in float64.
// CHECK: OK

func.func @merge(%o: tensor<2x4x3x64xf32>, %m: tensor<2x4x3xf32>, %l: tensor<2x4x3xf32>,
                 %sinks: tensor<4xf32>) -> tensor<2x4x64xf32> {
  %r = uq.merge_partitions %o, %m, %l sinks %sinks
      : (tensor<2x4x3x64xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<4xf32>) -> tensor<2x4x64xf32>
  return %r : tensor<2x4x64xf32>
}
