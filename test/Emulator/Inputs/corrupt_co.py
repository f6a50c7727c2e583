#!/usr/bin/env python3
"""Corrupted gfx950 code objects, made from a valid one, and a harness that
runs uq-emu on each: every malformed input must give a clean error (exit 1
with `uq-emu: error:`) or a clean run, never a signal or a hang.

    corrupt_co.py VALID.hsaco OUTDIR UQ_EMU [--runs ARGS...]

Variants (deterministic):
  - truncations at fixed and proportional lengths;
  - the AMDGPU metadata note with one-byte type confusions in place (a map
    key that is an array or a map, a size that is a string/nil/bool/array,
    a string header claiming 4 GiB), and with random byte flips (seeded);
  - the metadata re-encoded with absurd values (huge sizes, offsets beyond
    the kernarg segment, negative numbers, nested arrays 100000 deep, a
    missing .args) and appended to the file, the PT_NOTE header pointed at it;
  - ELF headers with absurd sizes and offsets (PT_LOAD p_memsz 2^63,
    p_filesz > p_memsz, p_offset and e_phoff/e_shoff near 2^64, a symbol
    table whose size overruns the file, a descriptor symbol outside the
    image, an entry offset outside the image).
Each variant is written to OUTDIR and run twice: `--list`, and a launch
with the arguments after `--runs`.
"""

import os
import random
import re
import struct
import subprocess
import sys

# --------------------------------------------------------------------------
# A minimal msgpack codec (the subset AMDGPU metadata uses), so the script
# needs nothing beyond the standard library.


def mp_decode(b, i=0):
    t = b[i]
    if t <= 0x7F:
        return t, i + 1
    if 0x80 <= t <= 0x8F or t in (0xDE, 0xDF):
        if t <= 0x8F:
            n, i = t & 15, i + 1
        elif t == 0xDE:
            n, i = struct.unpack_from(">H", b, i + 1)[0], i + 3
        else:
            n, i = struct.unpack_from(">I", b, i + 1)[0], i + 5
        d = []
        for _ in range(n):
            k, i = mp_decode(b, i)
            v, i = mp_decode(b, i)
            d.append((k, v))
        return dict(d), i
    if 0x90 <= t <= 0x9F or t in (0xDC, 0xDD):
        if t <= 0x9F:
            n, i = t & 15, i + 1
        elif t == 0xDC:
            n, i = struct.unpack_from(">H", b, i + 1)[0], i + 3
        else:
            n, i = struct.unpack_from(">I", b, i + 1)[0], i + 5
        a = []
        for _ in range(n):
            v, i = mp_decode(b, i)
            a.append(v)
        return a, i
    if 0xA0 <= t <= 0xBF or t in (0xD9, 0xDA, 0xDB):
        if t <= 0xBF:
            n, i = t & 31, i + 1
        elif t == 0xD9:
            n, i = b[i + 1], i + 2
        elif t == 0xDA:
            n, i = struct.unpack_from(">H", b, i + 1)[0], i + 3
        else:
            n, i = struct.unpack_from(">I", b, i + 1)[0], i + 5
        return b[i:i + n].decode(), i + n
    if t == 0xC0:
        return None, i + 1
    if t in (0xC2, 0xC3):
        return t == 0xC3, i + 1
    fmts = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b",
            0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
    if t in fmts:
        return struct.unpack_from(fmts[t], b, i + 1)[0], i + 1 + struct.calcsize(fmts[t])
    if t >= 0xE0:
        return t - 256, i + 1
    raise ValueError("unsupported msgpack byte 0x%02x" % t)


def mp_encode(v):
    if v is None:
        return b"\xc0"
    if isinstance(v, bool):
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v <= 0x7F:
            return bytes([v])
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, str):
        e = v.encode()
        return b"\xdb" + struct.pack(">I", len(e)) + e
    if isinstance(v, (list, tuple)):
        return b"\xdd" + struct.pack(">I", len(v)) + b"".join(map(mp_encode, v))
    if isinstance(v, dict):
        out = b"\xdf" + struct.pack(">I", len(v))
        for k, x in v.items():
            out += mp_encode(k) + mp_encode(x)
        return out
    if isinstance(v, Raw):
        return v.data
    raise TypeError(type(v))


class Raw:
    """Pre-encoded msgpack bytes (for shapes a dict cannot hold)."""

    def __init__(self, data):
        self.data = data


# --------------------------------------------------------------------------
# ELF64 little-endian helpers.

EHDR = "<16sHHIQQQIHHHHHH"
PHDR = "<IIQQQQQQ"
SHDR = "<IIQQQQIIQQ"
SYM = "<IBBHQQ"


def ehdr(b):
    return list(struct.unpack_from(EHDR, b, 0))


def phdrs(b):
    e = ehdr(b)
    return [(e[5] + k * e[9], list(struct.unpack_from(PHDR, b, e[5] + k * e[9])))
            for k in range(e[10])]


def shdrs(b):
    e = ehdr(b)
    return [(e[6] + k * e[11], list(struct.unpack_from(SHDR, b, e[6] + k * e[11])))
            for k in range(e[12])]


def note_desc(b):
    """(phdr offset, phdr, desc offset, desc size) of the AMDGPU metadata."""
    for off, p in phdrs(b):
        if p[0] != 4:  # PT_NOTE
            continue
        i, end = p[2], p[2] + p[5]
        while i + 12 <= end:
            namesz, descsz, typ = struct.unpack_from("<III", b, i)
            name = b[i + 12:i + 12 + namesz]
            d = i + 12 + ((namesz + 3) & ~3)
            if name.rstrip(b"\0") == b"AMDGPU" and typ == 32:
                return off, p, d, descsz
            i = d + ((descsz + 3) & ~3)
    raise SystemExit("no AMDGPU metadata note in the input")


def with_metadata(b, blob):
    """Appends a new NT_AMDGPU_METADATA note holding `blob` and points the
    PT_NOTE program header at it."""
    off, p, _, _ = note_desc(b)
    b = bytearray(b)
    b += bytes((-len(b)) % 8)
    name = b"AMDGPU\0"
    note = struct.pack("<III", len(name), len(blob), 32) + name + b"\0"
    note += blob + bytes((-len(blob)) % 4)
    p[2], p[5], p[6] = len(b), len(note), len(note)
    b += note
    struct.pack_into(PHDR, b, off, *p)
    return bytes(b)


def patch(b, fmt, off, *vals):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, *vals)
    return bytes(b)


# --------------------------------------------------------------------------


def variants(valid):
    v = {}
    n = len(valid)
    for L in (0, 4, 16, 63, 64, 100, n // 4, n // 2, n - 64, n - 1):
        v["trunc-%d" % L] = valid[:L]

    _, _, d, dsz = note_desc(valid)
    blob = valid[d:d + dsz]

    def in_place(pos, byte):
        b = bytearray(valid)
        b[d + pos] = byte
        return bytes(b)

    # One-byte type confusions at the first occurrence of some keys: the key
    # header itself (a map key that is an array / a map / nil), or the value
    # right after the key.
    for key in (b".kernarg_segment_size", b".args", b".name", b".offset",
                b".value_kind", b"amdhsa.kernels", b".vgpr_count"):
        k = blob.find(key)
        if k < 1:
            continue
        tag = key.decode().strip(".")
        for what, byte in (("array", 0x91), ("map", 0x81), ("nil", 0xC0)):
            v["key-%s-%s" % (tag, what)] = in_place(k - 1, byte)
        val = k + len(key)
        for what, byte in (("nil", 0xC0), ("true", 0xC3), ("str", 0xA0),
                           ("array", 0x9F), ("map", 0x8F), ("neg", 0xFF),
                           ("str4g", 0xDB), ("arr4g", 0xDD), ("map4g", 0xDF)):
            v["val-%s-%s" % (tag, what)] = in_place(val, byte)
    v["root-array"] = in_place(0, 0x91)
    v["root-str4g"] = in_place(0, 0xDB)
    rng = random.Random(1234)
    for r in range(40):
        b = bytearray(valid)
        for _ in range(rng.choice((1, 2, 4, 8))):
            b[d + rng.randrange(dsz)] = rng.randrange(256)
        v["flip-%02d" % r] = bytes(b)

    # Re-encoded metadata with absurd values.
    meta, _ = mp_decode(blob)

    def meta_variant(name, edit):
        import copy
        m = copy.deepcopy(meta)
        edit(m, m["amdhsa.kernels"][0])
        v["meta-" + name] = with_metadata(valid, mp_encode(m))

    big = 2**64 - 1
    for field, val in ((".kernarg_segment_size", big),
                       (".kernarg_segment_size", 2**40),
                       (".group_segment_fixed_size", 2**32 - 1),
                       (".private_segment_fixed_size", 2**31),
                       (".vgpr_count", 100000), (".agpr_count", 2**33),
                       (".sgpr_count", -5), (".wavefront_size", 32),
                       (".max_flat_workgroup_size", 0),
                       (".max_flat_workgroup_size", 2**40),
                       (".name", 7), (".symbol", "nope.kd"), (".symbol", ""),
                       (".args", "x"), (".args", [1, 2, 3])):
        meta_variant("%s=%s" % (field.strip("."), str(val)[:12]),
                     lambda m, k, f=field, x=val: k.__setitem__(f, x))
    meta_variant("no-args", lambda m, k: k.pop(".args"))
    meta_variant("no-kernels", lambda m, k: m.pop("amdhsa.kernels"))
    meta_variant("kernels-map", lambda m, k: m.__setitem__("amdhsa.kernels", {}))
    for field, val in ((".offset", 2**32 - 4), (".offset", big),
                       (".size", 2**32 - 1), (".size", 0), (".offset", -8),
                       (".value_kind", 3), (".value_kind", "by_value")):
        meta_variant("arg%s=%s" % (field, str(val)[:12]),
                     lambda m, k, f=field, x=val: k[".args"][0].__setitem__(f, x))
    meta_variant("arg-hidden-huge", lambda m, k: k[".args"].append(
        {".offset": 2**32 - 2, ".size": 8, ".value_kind": "hidden_block_count_x"}))
    meta_variant("deep-nesting", lambda m, k: k.__setitem__(
        ".args", Raw(b"\x91" * 100000 + b"\x90")))
    v["meta-empty"] = with_metadata(valid, b"")
    v["meta-garbage"] = with_metadata(valid, bytes(range(256)) * 4)

    # ELF headers.
    e = ehdr(valid)
    for off, p in phdrs(valid):
        if p[0] == 1:  # PT_LOAD
            q = list(p)
            q[6] = 2**63
            v["load-memsz-2^63"] = patch(valid, PHDR, off, *q)
            q = list(p)
            q[5], q[6] = q[6] + 4096, q[6]
            v["load-filesz>memsz"] = patch(valid, PHDR, off, *q)
            q = list(p)
            q[2] = 2**64 - 16
            v["load-offset-2^64"] = patch(valid, PHDR, off, *q)
            q = list(p)
            q[3] = 2**64 - 16
            v["load-vaddr-2^64"] = patch(valid, PHDR, off, *q)
            break
    for off, p in phdrs(valid):
        if p[0] == 4:
            q = list(p)
            q[2] = 2**64 - 8
            v["note-offset-2^64"] = patch(valid, PHDR, off, *q)
            q = list(p)
            q[5] = 2**40
            v["note-size-huge"] = patch(valid, PHDR, off, *q)
    ee = list(e)
    ee[5] = 2**64 - 16
    v["ehdr-phoff-2^64"] = patch(valid, EHDR, 0, *ee)
    ee = list(e)
    ee[6] = 2**64 - 16
    v["ehdr-shoff-2^64"] = patch(valid, EHDR, 0, *ee)
    ee = list(e)
    ee[10] = 0xFFFF
    v["ehdr-phnum-max"] = patch(valid, EHDR, 0, *ee)
    for off, s in shdrs(valid):
        if s[1] in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            q = list(s)
            q[5] = 2**62
            v["symtab-size-huge-%d" % s[1]] = patch(valid, SHDR, off, *q)
            q = list(s)
            q[4] = 2**64 - 24
            v["symtab-offset-2^64-%d" % s[1]] = patch(valid, SHDR, off, *q)
            # Every symbol's value near 2^64 / just past the image.
            for k in range(s[5] // 24):
                so = s[4] + 24 * k
                sym = list(struct.unpack_from(SYM, valid, so))
                for tag, val in (("2^64", 2**64 - 32), ("past", 1 << 30)):
                    name = "sym%d-%d-value-%s" % (s[1], k, tag)
                    sym2 = list(sym)
                    sym2[4] = val
                    v[name] = patch(valid, SYM, so, *sym2)
                sym2 = list(sym)
                sym2[0] = 2**32 - 1
                v["sym%d-%d-name-huge" % (s[1], k)] = patch(valid, SYM, so, *sym2)
    return v


def kernel_descriptor_variants(valid):
    """Entry offsets outside the image: found through the .kd symbol the
    loader uses (read from `uq-emu --list` would need the loader itself, so
    the symbol table is read here)."""
    v = {}
    for _, s in shdrs(valid):
        if s[1] != 2:
            continue
        strtab = shdrs(valid)[s[6]][1]
        for k in range(s[5] // 24):
            sym = struct.unpack_from(SYM, valid, s[4] + 24 * k)
            nm = valid[strtab[4] + sym[0]:].split(b"\0")[0]
            if not nm.endswith(b".kd"):
                continue
            # The descriptor's file offset: its vaddr within a PT_LOAD.
            for _, p in phdrs(valid):
                if p[0] == 1 and p[3] <= sym[4] < p[3] + p[5]:
                    fo = p[2] + sym[4] - p[3]
                    for tag, val in (("huge", 2**62), ("neg", -2**40),
                                     ("past", 1 << 30)):
                        v["entry-%s" % tag] = patch(valid, "<q", fo + 16, val)
    return v


def main():
    valid_path, outdir, uq_emu = sys.argv[1:4]
    runs = sys.argv[sys.argv.index("--runs") + 1:] if "--runs" in sys.argv else []
    valid = open(valid_path, "rb").read()
    os.makedirs(outdir, exist_ok=True)
    vs = variants(valid)
    vs.update(kernel_descriptor_variants(valid))
    crashes, errors, ok = [], 0, 0
    for name, data in sorted(vs.items()):
        path = os.path.join(outdir, re.sub(r"[^A-Za-z0-9._=-]", "_", name) +
                            ".hsaco")
        with open(path, "wb") as f:
            f.write(data)
        for cmd in ([uq_emu, path, "--list"],
                    [uq_emu, path, "--max-insts", "100000"] + runs):
            try:
                r = subprocess.run(cmd, capture_output=True, timeout=60)
            except subprocess.TimeoutExpired:
                crashes.append("%s: timeout (%s)" % (name, cmd[2]))
                continue
            if r.returncode == 0:
                ok += 1
            elif r.returncode in (1, 2) and b"uq-emu: error: " in r.stderr:
                errors += 1
            else:
                crashes.append("%s: exit %d (%s) %s" % (
                    name, r.returncode, cmd[2],
                    r.stderr.decode(errors="replace")[-300:]))
    print("%d variants: %d clean errors, %d clean runs, %d crashes" %
          (len(vs), errors, ok, len(crashes)))
    for c in crashes:
        print("CRASH", c)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
