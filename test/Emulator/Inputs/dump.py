"""Prints a binary file as little-endian words for FileCheck.

usage: dump.py FILE [u32|i32|f32|u16|u8|f64|hex] [COUNT]
One value per line, prefixed by its index: "3: 0x0000002a".
"""
import sys
import numpy as np

data = open(sys.argv[1], "rb").read()
kind = sys.argv[2] if len(sys.argv) > 2 else "hex"
dt = {"u32": "<u4", "i32": "<i4", "f32": "<f4", "u16": "<u2", "u8": "u1",
      "f64": "<f8", "hex": "<u4"}[kind]
a = np.frombuffer(data[: len(data) // np.dtype(dt).itemsize * np.dtype(dt).itemsize], dtype=dt)
if len(sys.argv) > 3:
    a = a[: int(sys.argv[3])]
for i, v in enumerate(a):
    if kind == "hex":
        print(f"{i}: 0x{int(v):08x}")
    elif kind.startswith("f"):
        print(f"{i}: {float(v)!r}")
    else:
        print(f"{i}: {int(v)}")
