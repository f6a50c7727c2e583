# RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj -I %S/../Emulator/Inputs %S/../Emulator/oob-wraparound.s -o %t.o
# RUN: ld.lld -shared %t.o -o %t.hsaco
# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %t.hsaco %S/../Emulator/Inputs | FileCheck %s

# uq.emulate never kills the interpreter (docs/robustness.md): an access whose
# address wraps around 2^64, corrupted and truncated code objects, bad
# geometry and a huge dynamic LDS request all raise Python exceptions, and
# the interpreter keeps working afterwards.

import sys

import numpy as np

import uq

hsaco = open(sys.argv[1], "rb").read()
sys.path.insert(0, sys.argv[2])
import corrupt_co  # noqa: E402  (the corpus generator of test/Emulator)


def attempt(name, call):
    try:
        call()
    except (ValueError, TypeError, MemoryError) as e:
        print(f"{name}: {type(e).__name__}: {str(e)[:160]}")
        return
    raise AssertionError(f"{name}: expected an exception")


def run(code, sel, block=(64,), dyn=0):
    return uq.emulate(code, "k", (1,), block,
                      [np.array([sel], np.uint32), np.zeros(1, np.uint32),
                       np.zeros(64, np.uint32)], dynamic_lds=dyn)


# Selector 0: global_load_dwordx4 from 2^64 - 4 (16 bytes wrap around).
attempt("wrap", lambda: run(hsaco, 0))
# CHECK: wrap: ValueError: emulation of 'k' failed: {{.*}}out-of-bounds global load of 16 bytes at address 0xfffffffffffffffc (lane 0)
# Selector 3: a store through an SGPR pair holding a v_cmp mask.
attempt("mask", lambda: run(hsaco, 3))
# CHECK: mask: ValueError: {{.*}}out-of-bounds global store of 8 bytes at address 0xffffffffffffffff (lane 0)

variants = corrupt_co.variants(hsaco)
for name in ("key-args-array", "key-kernarg_segment_size-map",
             "meta-deep-nesting", "meta-kernarg_segment_size=184467440737",
             "load-memsz-2^63", "trunc-100", "flip-07"):
    data = variants[name]
    attempt(name, lambda: run(data, 0))
# CHECK: key-args-array: ValueError: cannot load the code object: malformed AMDGPU metadata: a map key is an array, not a string
# CHECK: key-kernarg_segment_size-map: ValueError: cannot load the code object: malformed AMDGPU metadata
# CHECK: meta-deep-nesting: ValueError: cannot load the code object: AMDGPU metadata nested more than 32 levels deep
# CHECK: meta-kernarg_segment_size=184467440737: ValueError: {{.*}}exceeds the limit 65536
# CHECK: load-memsz-2^63: ValueError: {{.*}}beyond the image limit
# CHECK: trunc-100: ValueError: cannot load the code object
# CHECK: flip-07: ValueError

attempt("partial wave", lambda: run(hsaco, 0, block=(32,)))
# CHECK: partial wave: ValueError: {{.*}}not a whole number of 64-lane waves
attempt("dynamic lds", lambda: run(hsaco, 0, dyn=2**31))
# CHECK: dynamic lds: ValueError: {{.*}}exceeds 160 KiB
attempt("kernel info", lambda: uq.kernel_info(variants["meta-deep-nesting"]))
# CHECK: kernel info: ValueError: cannot load the code object

# The interpreter is still alive and the valid code object still loads.
print("kernels", [k["name"] for k in uq.kernel_info(hsaco)])
# CHECK: kernels ['k']
