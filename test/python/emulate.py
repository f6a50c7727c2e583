# RUN: clang -x hip --offload-arch=gfx950 -nogpulib -nogpuinc --cuda-device-only --no-gpu-bundle-output -O2 -ffp-contract=off -c %S/Inputs/saxpy.hip -o %t.hsaco
# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %t.hsaco | FileCheck %s

# uq.kernel_info and uq.emulate (the gfx950 emulator from Python) on a
# clang-compiled saxpy: by-value float and int arguments, buffers updated in
# place (numpy array and bytearray), statistics, and every argument error.

import sys

import numpy as np

import uq

hsaco = open(sys.argv[1], "rb").read()

# The metadata: one kernel, four explicit arguments in source order.
kernels = uq.kernel_info(hsaco)
assert [k["name"] for k in kernels] == ["saxpy"], kernels
explicit = [a for a in kernels[0]["args"] if a["explicit"]]
print("saxpy", [(a["value_kind"], a["size"]) for a in explicit])
# CHECK: saxpy [('by_value', 4), ('global_buffer', 8), ('global_buffer', 8), ('by_value', 4)]

# 4 workgroups of 64 lanes cover 256 elements; n = 250 leaves the last 6
# untouched.
rng = np.random.default_rng(0)
x = rng.standard_normal(256).astype(np.float32)
y = rng.standard_normal(256).astype(np.float32)
y0 = y.copy()
stats = uq.emulate(hsaco, "saxpy", grid=(4,), block=(64,),
                   args=[1.5, x, y, 250])
# -ffp-contract=off: the kernel multiplies and adds with two roundings, as
# numpy does, so the results are bit-identical.
expect = np.float32(1.5) * x[:250] + y0[:250]
assert np.array_equal(y[:250], expect), np.abs(y[:250] - expect).max()
assert np.array_equal(y[250:], y0[250:])
assert stats["workgroups"] == 4 and stats["waves"] == 4, stats
assert stats["global_bytes_written"] == 250 * 4, stats
print("numpy buffers OK; waves", stats["waves"])
# CHECK: numpy buffers OK; waves 4

# bytearray buffers and numpy scalars work too.
xb = bytearray(np.arange(64, dtype=np.float32).tobytes())
yb = bytearray(np.ones(64, dtype=np.float32).tobytes())
uq.emulate(hsaco, "saxpy", (1,), (64,), [np.float32(2.0), xb, yb, np.int32(64)])
assert np.array_equal(np.frombuffer(yb, np.float32),
                      2 * np.arange(64, dtype=np.float32) + 1)
print("bytearray buffers OK")
# CHECK: bytearray buffers OK

# Bad launches raise ValueError/TypeError with the reason; nothing aborts.
bad = [
    ("count", [1.5, x, y]),
    ("scalar size", [np.float64(1.5), x, y, 250]),
    ("buffer kind", [1.5, 3, y, 250]),
    ("non-contiguous", [1.5, x[::2].copy(), y[::2], 250]),
    ("int range", [1.5, x, y, 2**40]),
]
for name, args in bad:
    try:
        uq.emulate(hsaco, "saxpy", (4,), (64,), args)
        raise AssertionError(f"{name}: expected an error")
    except (ValueError, TypeError) as e:
        print(f"{name}: {type(e).__name__}: {e}")
# CHECK: count: ValueError: kernel 'saxpy' takes 4 explicit arguments, got 3
# CHECK: scalar size: ValueError: argument 0 {{.*}}numpy scalar has 8 bytes
# CHECK: buffer kind: TypeError: argument 1 {{.*}}pass a numpy array or a bytearray
# CHECK: non-contiguous: ValueError: argument 2 {{.*}}C-contiguous
# CHECK: int range: ValueError: argument 3 {{.*}}does not fit in 32 bits

for name, call in [
    ("kernel", lambda: uq.emulate(hsaco, "nope", (1,), (64,), [])),
    ("grid", lambda: uq.emulate(hsaco, "saxpy", (0,), (64,), [1.5, x, y, 1])),
    ("code object", lambda: uq.emulate(b"not elf", "saxpy", (1,), (64,), [])),
]:
    try:
        call()
        raise AssertionError(f"{name}: expected an error")
    except ValueError as e:
        print(f"{name}: {e}")
# CHECK: kernel: {{.*}}nope
# CHECK: grid: grid dimensions must be >= 1
# CHECK: code object: cannot load the code object

print("OK")
# CHECK: OK
