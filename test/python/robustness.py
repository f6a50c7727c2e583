# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s | FileCheck %s

# uq.compile and uq.run_pipeline answer bad input with CompileError (located
# MLIR diagnostics), never by crashing the interpreter (docs/robustness.md).

import uq

ROTATE = """
func.func @rotate(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %r = uq.rotate %x : tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}
"""


def diagnostics(fn):
    try:
        fn()
    except uq.CompileError as e:
        return e.diagnostics
    raise AssertionError("expected CompileError")


# 5000 nested modules used to overflow the parser's stack and kill Python.
DEEP = "module {" * 5000 + "}" * 5000
print(diagnostics(lambda: uq.compile(DEEP, emit="linalg",
                                     filename="deep.mlir")))
# CHECK: deep.mlir:1:2056: error: the input nests deeper than 256 levels (brackets or regions), uq's limit (docs/robustness.md)
print(diagnostics(lambda: uq.run_pipeline(DEEP,
                                          "builtin.module(canonicalize)")))
# CHECK: input:1:2056: error: the input nests deeper than 256 levels

AFFINE = ("#m = affine_map<(d0) -> (" + " + ".join(["d0"] * 100000) +
          ")>\nfunc.func @f() attributes {m = #m} { return }")
print(diagnostics(lambda: uq.compile(AFFINE, emit="linalg",
                                     filename="affine.mlir")))
# CHECK: affine.mlir:1:5149: error: an affine expression has more than 1024 operators

# Errors that are not the verifier's are located diagnostics too.
print(diagnostics(lambda: uq.compile(ROTATE, chip="gfx942",
                                     filename="rot.mlir")))
# CHECK: rot.mlir:{{[0-9]+}}:{{[0-9]+}}: error: chip 'gfx942' is not supported
NO_UQ = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}"
print(diagnostics(lambda: uq.compile(NO_UQ, emit="kernel",
                                     filename="plain.mlir")))
# CHECK: plain.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the input has no uq op with a gfx950 kernel

# The GPU stages' errors: a wave-level kernel (detected as such) that the
# lane distribution rejects, and kernels without a launch description.
import os
INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "Target", "Inputs")
WAVE = open(os.path.join(INPUTS, "wave-no-rule.mlir")).read()
print(diagnostics(lambda: uq.compile(WAVE, emit="lanes",
                                     filename="wave.mlir")))
# CHECK: wave.mlir:15:{{[0-9]+}}: error: 'vector.transpose' op has no lane-distribution rule
NO_LAUNCH = open(os.path.join(INPUTS, "wave-no-launch.mlir")).read()
print(diagnostics(lambda: uq.compile(NO_LAUNCH, filename="nolaunch.mlir")))
# CHECK: nolaunch.mlir:2:1: error: the input's kernels have no launch description
print(diagnostics(lambda: uq.compile(ROTATE, emit="wave",
                                     filename="rot.mlir")))
# CHECK: rot.mlir:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}

# A #uq.kv_format whose c prints in exponent form reads back.
FORMAT = ("func.func @f() attributes "
          "{f = #uq.kv_format<fp4_e2m1, c = 0.00001>} { return }")
once = uq.run_pipeline(FORMAT, "builtin.module(canonicalize)")
twice = uq.run_pipeline(once, "builtin.module(canonicalize)")
assert once == twice, (once, twice)
print(twice)
# CHECK: #uq.kv_format<fp4_e2m1, c = 1.0e-05>
print("done")
# CHECK: done
