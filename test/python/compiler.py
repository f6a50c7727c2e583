# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s | FileCheck %s

# uq.compile / uq.compile_with_description / uq.run_pipeline and
# uq.CompileError from Python (python-bindings/src/CompilerBindings.cpp,
# python-bindings/uq/compiler.py).

import uq

ROTATE = """
func.func @rotate(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %r = uq.rotate %x : tensor<4x128xf32>
  %unused = uq.rotate %x : tensor<4x128xf32>
  return %r : tensor<4x128xf32>
}
"""

# Line 3, column 8 is the uq.rotate: 96 columns are not a power of two.
BAD = """
func.func @bad(%x: tensor<4x96xf32>) -> tensor<4x96xf32> {
  %r = uq.rotate %x : tensor<4x96xf32>
  return %r : tensor<4x96xf32>
}
"""


def section(name):
    print(f"=== {name}")


# run_pipeline: canonicalize erases the dead rotate and keeps the live one.
section("run_pipeline")
out = uq.run_pipeline(ROTATE, "builtin.module(func.func(canonicalize))")
assert isinstance(out, str)
assert out.count("uq.rotate") == 1, out
print(out)
# CHECK-LABEL: === run_pipeline
# CHECK: func.func @rotate
# CHECK: %[[R:.*]] = uq.rotate %{{.*}} : tensor<4x128xf32>
# CHECK-NOT: uq.rotate
# CHECK: return %[[R]]

# A pipeline naming an unknown pass raises CompileError with the parser's
# diagnostic.
section("bad pipeline")
try:
    uq.run_pipeline(ROTATE, "builtin.module(no-such-pass)")
    raise AssertionError("expected CompileError")
except uq.CompileError as e:
    assert e.diagnostics == e.args[0]
    print(e.diagnostics)
# CHECK-LABEL: === bad pipeline
# CHECK: 'no-such-pass' does not refer to a registered pass

# Textual stages come back as str; at linalg no uq op is left and there is no
# kernel description yet.
section("linalg")
res = uq.compile_with_description(ROTATE, emit="linalg")
assert isinstance(res.output, str)
assert res.description == {} and res.kernels == []
assert uq.compile(ROTATE, emit="linalg") == res.output
print(res.output)
# CHECK-LABEL: === linalg
# CHECK: func.func @rotate
# CHECK-NOT: uq.

# Bad IR raises CompileError carrying the verifier's diagnostic and location;
# `filename` names the buffer.
section("bad ir")
for name in ("<python>", "bad.mlir"):
    try:
        uq.compile(BAD, emit="linalg", filename=name)
        raise AssertionError("expected CompileError")
    except uq.CompileError as e:
        assert isinstance(e, Exception)
        print(e.diagnostics.splitlines()[0])
# CHECK-LABEL: === bad ir
# CHECK-NEXT: <python>:3:8: error: 'uq.rotate' op last dimension must be a static power of two, got 96
# CHECK-NEXT: bad.mlir:3:8: error: 'uq.rotate' op last dimension must be a static power of two, got 96

# Bad options are ValueErrors, raised before compiling.
section("bad options")
for kwargs in ({"emit": "ptx"}, {"partition_size": 0}):
    try:
        uq.compile(ROTATE, **kwargs)
        raise AssertionError("expected ValueError")
    except ValueError as e:
        print(e)
# CHECK-LABEL: === bad options
# CHECK-NEXT: unknown emit stage 'ptx'
# CHECK-NEXT: partition_size must be positive, got 0

print("OK")
# CHECK: OK
