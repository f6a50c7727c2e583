// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/npytool.py make uint16 %t/q.npy 2 64
// RUN: %python %S/Inputs/npytool.py make uint8 %t/c.npy 9 16 1 68
// RUN: %python %S/Inputs/npytool.py make float32 %t/qf32.npy 2 64
// RUN: %python %S/Inputs/npytool.py make uint16 %t/q3.npy 3 64
// RUN: %python %S/Inputs/npytool.py make bad-magic %t/bad.npy
// RUN: %python %S/Inputs/npytool.py make truncated %t/short.npy 2 64

// Every user error is a clear message and a non-zero exit, never a crash.

// RUN: not uq-run %s --entry nope --input %t/q.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: uq-run: error: no function @nope in '{{.*}}errors.mlir' (functions: @rot, @two)

// RUN: not uq-run %s --entry rot --input %t/missing.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: uq-run: error: cannot read '{{.*}}missing.npy': {{.*}}

// RUN: not uq-run %s --entry rot --input %t/qf32.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: uq-run: error: argument 0 (tensor<2x64xbf16>): '{{.*}}qf32.npy' holds float32 ('<f4'), expected uint16 ('<u2') (bf16 travels as uint16 bit patterns)

// RUN: not uq-run %s --entry rot --input %t/q3.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: uq-run: error: argument 0 (tensor<2x64xbf16>): '{{.*}}q3.npy' has shape (3, 64), expected (2, 64)

// RUN: not uq-run %s --entry rot --input %t/bad.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=MAGIC
// MAGIC: uq-run: error: malformed .npy file '{{.*}}bad.npy': missing the \x93NUMPY magic

// RUN: not uq-run %s --entry rot --input %t/short.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: uq-run: error: malformed .npy file '{{.*}}short.npy': expected 512 data bytes for shape (2, 64) of '<f4', found 508

// RUN: not uq-run %s --entry two --input %t/q.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=NINPUTS
// NINPUTS: uq-run: error: @two takes 2 argument(s) but 1 --input file(s) were given

// RUN: not uq-run %s --entry rot --input %t/q.npy 2>&1 | FileCheck %s --check-prefix=NOUTPUTS
// NOUTPUTS: uq-run: error: @rot returns 1 result(s) but 0 --output file(s) were given

// RUN: not uq-run %s --entry two --input %t/q.npy --input %t/q.npy --output %t/o.npy 2>&1 | FileCheck %s --check-prefix=ARG1
// ARG1: uq-run: error: argument 1 (tensor<9x16x1x68xi8>): '{{.*}}q.npy' holds uint16 ('<u2'), expected uint8 ('|u1') or int8 ('|i1')

// A good run for contrast: no output on stderr, the result file exists.
// RUN: uq-run %s --entry two --input %t/q.npy --input %t/c.npy --output %t/o.npy
// RUN: %python -c "import numpy as np; a = np.load('%t/o.npy'); assert a.dtype == np.uint16 and a.shape == (2, 64); print('OK')" | FileCheck %s --check-prefix=GOOD
// GOOD: OK

func.func @rot(%q: tensor<2x64xbf16>) -> tensor<2x64xbf16> {
  %r = uq.rotate %q : tensor<2x64xbf16>
  return %r : tensor<2x64xbf16>
}

func.func @two(%q: tensor<2x64xbf16>, %c: tensor<9x16x1x68xi8>) -> tensor<2x64xbf16> {
  %r = uq.rotate %q : tensor<2x64xbf16>
  return %r : tensor<2x64xbf16>
}
