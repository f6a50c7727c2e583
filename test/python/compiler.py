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
# (The location prints as `file:3:8` or `loc("file":3:8)`.)
# CHECK-NEXT: {{(<python>:3:8|loc\("<python>":3:8\))}}: error: 'uq.rotate' op last dimension must be a static power of two, got 96
# CHECK-NEXT: {{(bad.mlir:3:8|loc\("bad.mlir":3:8\))}}: error: 'uq.rotate' op last dimension must be a static power of two, got 96

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

# hsaco: the code object of a decode-attention op (GQA 4: 8 query heads on 2
# KV heads, head_dim 128, vLLM blocks of 16 tokens) and its description.
section("hsaco")
ref = uq.native()
slot = ref.slot_bytes(128)
DECODE = f"""
func.func @decode(%q: tensor<1x8x128xbf16>, %cache: tensor<8x16x2x{slot}xi8>,
                  %bt: tensor<1x4xi32>, %lens: tensor<1xi32>)
    -> tensor<1x8x128xbf16> {{
  %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.0883883
      {{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
        v_format = #uq.kv_format<fp4_e2m1>,
        layout = #uq.cache_layout<vllm_slot>}}
      : (tensor<1x8x128xbf16>, tensor<8x16x2x{slot}xi8>, tensor<1x4xi32>,
         tensor<1xi32>) -> tensor<1x8x128xbf16>
  return %o : tensor<1x8x128xbf16>
}}
"""
res = uq.compile_with_description(DECODE, partition_size=32)
assert isinstance(res.output, bytes) and res.output[:4] == b"\x7fELF"
assert uq.compile(DECODE, partition_size=32) == res.output
assert res.description["chip"] == "gfx950"
for k in res.kernels:
    assert res.kernel(k["name"]) is k
    print(k["name"], [(a["name"], a["dtype"], a["shape"]) for a in k["args"]])
# The query kernel reads the bf16 query; the partial kernel reads its FP8
# output and the cache, sized by the scalar arguments they name; the merge
# kernel writes the bf16 output.
# CHECK-LABEL: === hsaco
# CHECK: decode_0_query [('query', 'bf16', ['num_seqs', 8, 128]), ('query_prepared', 'u8', ['num_seqs', 8, 128]), ('num_seqs', 'i32', [])]
# CHECK: decode_0_partial [('query_prepared', 'u8', ['num_seqs', 8, 128]), ('cache', 'u8', ['num_blocks', 16, 2, 136])
# CHECK: ('out', 'bf16', ['num_seqs', 8, 128])

# The description's argument offsets and sizes agree with the metadata note
# as the emulator's loader reads it (an independent parser).
if ref.HAVE_EMULATOR:
    notes = {k["name"]: k for k in uq.kernel_info(res.output)}
    for k in res.kernels:
        md = [a for a in notes[k["name"]]["args"] if a["explicit"]]
        assert [(a["offset"], a["size"]) for a in k["args"]] == \
            [(a["offset"], a["size"]) for a in md], (k["args"], md)
    print("offsets agree with the metadata note")
else:
    print("offsets agree with the metadata note (emulator not built: skipped)")
# CHECK: offsets agree with the metadata note

print("OK")
# CHECK: OK
