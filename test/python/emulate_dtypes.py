# RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj %S/../Emulator/Inputs/kernels-json-k.s -o %t.o
# RUN: ld.lld -shared %t.o -o %t.hsaco
# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %t.hsaco %S/../Emulator/Inputs/kernels-json-k.json | FileCheck %s

# uq.emulate takes only numeric buffers, and with a kernel description (a
# CompileResult, or description=) exactly the dtypes, sizes and scalar kinds
# it gives: nothing is reinterpreted. The kernel k(n: i32, x: f32 [n, 4],
# out: i32 [2, 3]) writes out[0] = n. An object array used to be taken as
# raw bytes, so the kernel wrote over its pointers and the interpreter
# crashed; a float64 array for an f32 buffer was taken as raw bytes.

import json
import sys

import numpy as np

import uq

hsaco = open(sys.argv[1], "rb").read()
desc = json.load(open(sys.argv[2]))["kernels"][0]
res = uq.CompileResult(output=hsaco, description={"kernels": [desc]})


def attempt(name, call):
    try:
        call()
    except (ValueError, TypeError) as e:
        print(f"{name}: {type(e).__name__}: {e}")
        return
    raise AssertionError(f"{name}: expected an exception")


def good():
    return np.zeros((3, 4), np.float32), np.zeros((2, 3), np.int32)


# Non-numeric arrays are refused with or without a description.
x, out = good()
attempt("object", lambda: uq.emulate(hsaco, "k", (1,), (64,),
                                     [3, x, np.array([object()] * 6, dtype=object)]))
# CHECK: object: ValueError: argument 2: a numpy array of dtype object is not a numeric buffer
attempt("object (native)", lambda: uq.native().emulate(
    hsaco, "k", [1], [64], [3, x, np.array([object()] * 6, dtype=object)], 0, 0))
# CHECK: object (native): ValueError: argument 2 'out' (a buffer): a numpy array of dtype object is not a numeric buffer
attempt("strings", lambda: uq.emulate(hsaco, "k", (1,), (64,), [3, x, np.array(["abcd"] * 6)]))
# CHECK: strings: ValueError: argument 2: a numpy array of dtype <U4 is not a numeric buffer
attempt("structured", lambda: uq.emulate(
    hsaco, "k", (1,), (64,), [3, x, np.zeros(3, dtype=[("a", "i4"), ("o", "O")])]))
# CHECK: structured: ValueError: argument 2: a numpy array of dtype {{.*}} is not a numeric buffer
attempt("datetime", lambda: uq.emulate(
    hsaco, "k", (1,), (64,), [3, x, np.zeros(3, dtype="datetime64[s]")]))
# CHECK: datetime: ValueError: argument 2: a numpy array of dtype datetime64[s] is not a numeric buffer

# With the description: dtypes exactly, sizes from the shape, scalar kinds.
attempt("float64 for f32", lambda: uq.emulate(res, "k", (1,), (64,),
                                              [3, np.zeros((3, 4)), out]))
# CHECK: float64 for f32: ValueError: argument 1 'x' (f32): the kernel takes f32 elements, so the array must be float32 (little-endian); got float64
attempt("int32 for f32", lambda: uq.emulate(hsaco, "k", (1,), (64,),
                                            [3, np.zeros((3, 4), np.int32), out],
                                            description=desc))
# CHECK: int32 for f32: ValueError: argument 1 'x' (f32): {{.*}}got int32
attempt("big-endian", lambda: uq.emulate(res, "k", (1,), (64,),
                                         [3, np.zeros((3, 4), ">f4"), out]))
# CHECK: big-endian: ValueError: argument 1 'x' (f32): {{.*}}got >f4
attempt("uint32 for i32", lambda: uq.emulate(res, "k", (1,), (64,),
                                             [3, x, np.zeros((2, 3), np.uint32)]))
# CHECK: uint32 for i32: ValueError: argument 2 'out' (i32): {{.*}}must be int32
attempt("size", lambda: uq.emulate(res, "k", (1,), (64,), [2, x, out]))
# CHECK: size: ValueError: argument 1 'x' (f32) ['n', 4]: buffer of 48 bytes given, 32 expected
attempt("float for i32", lambda: uq.emulate(res, "k", (1,), (64,), [3.0, x, out]))
# CHECK: float for i32: ValueError: argument 0 'n' (i32): the kernel takes this scalar as i32 (an integer); got the float 3.0
attempt("np.float32 for i32", lambda: uq.emulate(res, "k", (1,), (64,),
                                                 [np.float32(3), x, out]))
# CHECK: np.float32 for i32: ValueError: argument 0 'n' (i32): the kernel takes this scalar as i32; got a numpy float32
attempt("count", lambda: uq.emulate(res, "k", (1,), (64,), [3, x]))
# CHECK: count: ValueError: kernel 'k' takes 3 arguments (its description), got 2
attempt("bad description", lambda: uq.emulate(hsaco, "k", (1,), (64,), [3, x, out],
                                              description={"args": 5}))
# CHECK: bad description: ValueError: description must be a kernel's entry

# The right arguments run, from a CompileResult or bytes + description,
# with a Python int or an np.int32 for n; a bytearray is raw bytes.
for name, n, call in [
        ("CompileResult", 3, lambda a: uq.emulate(res, "k", (1,), (64,), a)),
        ("description", np.int32(3), lambda a: uq.emulate(hsaco, "k", (1,), (64,), a,
                                                          description=desc))]:
    x, out = good()
    call([n, x, out])
    assert out[0, 0] == 3 and not out.ravel()[1:].any(), out
    print(name, "ok", int(out[0, 0]))
# CHECK: CompileResult ok 3
# CHECK: description ok 3
ob = bytearray(24)
uq.emulate(res, "k", (1,), (64,), [3, bytearray(48), ob])
assert ob[:4] == bytes([3, 0, 0, 0])
print("bytearray ok")
# CHECK: bytearray ok
