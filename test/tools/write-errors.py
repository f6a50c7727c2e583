# RUN: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj %S/../Emulator/Inputs/kernels-json-k.s -o %t.o
# RUN: ld.lld -shared %t.o -o %t.hsaco
# RUN: cp %S/../Emulator/Inputs/kernels-json-k.json %t.hsaco.json
# RUN: %python %s %uq_build/bin %t.hsaco %S/Inputs %t.d

# Output files that cannot be written: a full device (/dev/full), a write
# that fails half-way (a file-size limit of 4 KiB: EFBIG), standard output
# on a full device. Every tool that writes files (uq-compile, uq-opt,
# uq-emu, uq-run) prints its own one-line `error:` (no "LLVM ERROR: IO
# failure on output stream", no crash), exits 1, and leaves no file of the
# failed run behind: no partial file, no temporary, and none of the other
# outputs of the same run.
import os
import resource
import shutil
import signal
import subprocess
import sys

import numpy as np

bin_dir, hsaco, inputs, tmp = sys.argv[1:5]
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
cache_write = os.path.join(inputs, "cache-write.mlir")
identity = os.path.join(inputs, "identity.mlir")
x_npy = os.path.join(tmp, "x.npy")
np.save(x_npy, np.arange(4, dtype=np.float32))
x48 = os.path.join(tmp, "x48.bin")
with open(x48, "wb") as f:
    f.write(bytes(48))


def small_files():
    # Writes past 4 KiB fail with EFBIG instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def run(tool, *args, stdout=subprocess.PIPE, limit=False):
    p = subprocess.run([os.path.join(bin_dir, tool), *args], stdout=stdout,
                       stderr=subprocess.PIPE, text=True, timeout=300,
                       preexec_fn=small_files if limit else None)
    return p.returncode, p.stderr


def fails(name, tool, args, expect, stdout=subprocess.PIPE, limit=False, absent=()):
    """The run fails with one `TOOL: error: ...EXPECT` line and exit 1, and
    leaves none of the files in `absent` (nor any other new file in
    their folders)."""
    before = {d: set(os.listdir(d)) for d in {os.path.dirname(a) for a in absent}}
    rc, err = run(tool, *args, stdout=stdout, limit=limit)
    lines = err.strip().splitlines()
    assert rc == 1, (name, rc, err)
    assert "LLVM ERROR" not in err, (name, err)
    if limit:
        # The kernel raises SIGXFSZ with EFBIG; LLVM's signal handler (every
        # LLVM tool installs it) prints a stack dump for it and returns, the
        # write then fails like any other.
        lines = lines[-1:]
    else:
        assert "Stack dump" not in err, (name, err)
    assert len(lines) == 1 and lines[0].startswith(f"{tool}: error: ") \
        and expect in lines[0], (name, expect, err)
    for a in absent:
        assert not os.path.exists(a), (name, a)
    for d, files in before.items():
        assert set(os.listdir(d)) == files, (name, set(os.listdir(d)) - files)
    print(f"{name}: {lines[0].replace(tmp, 'TMP')}")


full = "cannot write '/dev/full': No space left on device"
big = "File too large"
d = tmp
with open("/dev/full", "w") as devfull:
    # uq-compile: -o, --kernels-json, a textual stage on stdout.
    fails("compile -o", "uq-compile", [cache_write, "-o", "/dev/full"], full)
    fails("compile --kernels-json", "uq-compile",
          [cache_write, "-o", f"{d}/a.hsaco", "--kernels-json", "/dev/full"], full,
          absent=[f"{d}/a.hsaco"])
    fails("compile -o past a size limit", "uq-compile",
          [cache_write, "--emit=wave", "-o", f"{d}/w.mlir"], big, limit=True,
          absent=[f"{d}/w.mlir"])
    fails("compile to full stdout", "uq-compile", [cache_write, "--emit=wave"],
          "cannot write standard output: No space left on device", stdout=devfull)
    # uq-opt: -o, stdout.
    fails("opt -o", "uq-opt", [cache_write, "-o", "/dev/full"], full)
    fails("opt -o past a size limit", "uq-opt",
          [cache_write, "--convert-uq-to-wave", "-o", f"{d}/o.mlir"], big, limit=True,
          absent=[f"{d}/o.mlir"])
    fails("opt to full stdout", "uq-opt", [cache_write],
          "cannot write standard output: No space left on device", stdout=devfull)
    # uq-emu: an output buffer, the timing JSON; the other outputs of the
    # run are not written either.
    emu = [hsaco, "--arg", "i32:3", "--arg", f"in:{x48}"]
    fails("emu --arg out", "uq-emu", emu + ["--arg", "out:/dev/full:24"], full)
    fails("emu --timing-json", "uq-emu",
          emu + ["--arg", f"out:{d}/o1.bin:24", "--timing-json", "/dev/full"], full,
          absent=[f"{d}/o1.bin"])
    fails("emu .npy past a size limit", "uq-emu",
          [hsaco, "--no-kernels-json", "--arg", "i32:3", "--arg", f"in:{x48}",
           "--arg", f"out:{d}/o2.npy:8192"], big, limit=True, absent=[f"{d}/o2.npy"])
    # uq-run: two outputs, the second fails: neither is written.
    fails("run --output", "uq-run",
          [identity, "--entry", "twice", "--input", x_npy, "--output", f"{d}/r1.npy",
           "--output", "/dev/full"], full, absent=[f"{d}/r1.npy"])

# The same commands with writable outputs succeed and write every file.
assert run("uq-compile", cache_write, "-o", f"{d}/a.hsaco")[0] == 0
assert os.path.getsize(f"{d}/a.hsaco") > 0 and os.path.getsize(f"{d}/a.hsaco.json") > 0
assert run("uq-emu", *emu, "--arg", f"out:{d}/o1.bin:24", "--timing-json",
           f"{d}/t.json")[0] == 0
assert open(f"{d}/o1.bin", "rb").read()[:4] == bytes([3, 0, 0, 0])
assert run("uq-run", identity, "--entry", "twice", "--input", x_npy, "--output",
           f"{d}/r1.npy", "--output", f"{d}/r2.npy")[0] == 0
assert (np.load(f"{d}/r2.npy") == np.arange(4)).all()
print("writable outputs OK")
