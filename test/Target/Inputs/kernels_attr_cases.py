"""Malformed `uq.kernels` launch descriptions, one per line of output.

Usage:
  kernels_attr_cases.py cli UQ_COMPILE STAGE WORKDIR   (uq-compile --from=STAGE)
  kernels_attr_cases.py python                         (uq.compile, auto stage)

Each case replaces the launch description of one small wave-level kernel
(`k(x: memref<?xf32>, n: i32)`) with a broken one, compiles it and prints
`CASE <name> rc=<exit code>: <first error line>` (the Python mode prints
rc=1 for a CompileError, with its first diagnostic line), or for a
successful compilation rc=0 and the kernel JSON on one line. A run that dies of a signal, exits
0, or prints LLVM's crash banner is reported as such: the test's CHECK lines
then fail. The first case, `valid`, is the description unbroken and must
compile.
"""
import os
import subprocess
import sys

X_FIELDS = [("name", '"x"'), ("kind", '"global_buffer"'), ("dtype", '"f32"'),
            ("shape", '["n", 4]'), ("access", '"read_write"'),
            ("meaning", '"data"')]


def dictionary(fields):
    return "{%s}" % ", ".join("%s = %s" % kv for kv in fields)


ARG_X = dictionary(X_FIELDS)
ARG_N = ('{name = "n", kind = "by_value", dtype = "i32", shape = [], '
         'access = "value", meaning = "rows"}')


def kernel(name='"k"', op='"test"', grid='["n", 1, 1]', rule='"(n, 1, 1)"',
           block="array<i64: 64, 1, 1>", params="{d = 4}", args=None,
           drop=()):
    fields = [("name", name), ("op", op), ("grid", grid), ("grid_rule", rule),
              ("block", block), ("params", params),
              ("args", args if args is not None else "[%s, %s]" % (ARG_X,
                                                                   ARG_N))]
    return dictionary([kv for kv in fields if kv[0] not in drop])


def arg_x(**over):
    """The arguments with x's fields replaced (None: left out)."""
    fields = [(k, over.get(k, v)) for k, v in X_FIELDS]
    return "[%s, %s]" % (dictionary([kv for kv in fields if kv[1] is not None]),
                         ARG_N)


CASES = [
    ("valid", "[%s]" % kernel()),
    ("not_array", kernel()),
    ("entry_not_dict", "[1]"),
    ("no_name", "[%s]" % kernel(drop=("name",))),
    ("name_not_string", "[%s]" % kernel(name="3")),
    ("no_op", "[%s]" % kernel(drop=("op",))),
    ("op_not_string", "[%s]" % kernel(op="[1]")),
    ("no_grid_rule", "[%s]" % kernel(drop=("grid_rule",))),
    ("grid_rule_not_string", "[%s]" % kernel(rule="7")),
    ("no_meaning", "[%s]" % kernel(args=arg_x(meaning=None))),
    ("meaning_not_string", "[%s]" % kernel(args=arg_x(meaning="1.0"))),
    ("no_grid", "[%s]" % kernel(drop=("grid",))),
    ("grid_not_array", "[%s]" % kernel(grid='"n"')),
    ("grid_float", "[%s]" % kernel(grid="[1.5, 1, 1]")),
    ("grid_negative", "[%s]" % kernel(grid="[-1, 1, 1]")),
    ("grid_names_buffer", "[%s]" % kernel(grid='["x", 1, 1]')),
    ("grid_four", "[%s]" % kernel(grid="[1, 1, 1, 1]")),
    ("no_block", "[%s]" % kernel(drop=("block",))),
    ("block_not_array", "[%s]" % kernel(block='"x"')),
    ("block_zero", "[%s]" % kernel(block="array<i64: 0, 0, 0>")),
    ("block_too_wide", "[%s]" % kernel(block="[4096, 1024, 1]")),
    ("block_too_many_items", "[%s]" % kernel(block="[1024, 2, 1]")),
    ("no_args", "[%s]" % kernel(drop=("args",))),
    ("args_not_array", "[%s]" % kernel(args='"x"')),
    ("arg_not_dict", "[%s]" % kernel(args="[1, %s]" % ARG_N)),
    ("no_shape", "[%s]" % kernel(args=arg_x(shape=None))),
    ("shape_not_array", "[%s]" % kernel(args=arg_x(shape="3"))),
    ("shape_float", "[%s]" % kernel(args=arg_x(shape="[2.5]"))),
    ("shape_unknown_name", "[%s]" % kernel(args=arg_x(shape='["m"]'))),
    ("args_too_many", "[%s]" % kernel(
        args="[%s, %s, %s]" % (ARG_X, ARG_N, ARG_N.replace('"n"', '"n2"')))),
    ("kind_bogus", "[%s]" % kernel(args=arg_x(kind='"bogus"'))),
    ("kind_mismatch", "[%s]" % kernel(
        args=arg_x(kind='"by_value"', shape="[]", access='"value"'))),
    ("dtype_q7", "[%s]" % kernel(args=arg_x(dtype='"q7"'))),
    ("scalar_with_shape", "[%s]" % kernel(
        args="[%s, %s]" % (ARG_X, ARG_N.replace("shape = []", "shape = [1]")))),
    ("access_bogus", "[%s]" % kernel(args=arg_x(access='"sometimes"'))),
    ("params_string", "[%s]" % kernel(params='{x = "s"}')),
    ("params_not_dict", "[%s]" % kernel(params="[1]")),
    ("unknown_kernel", "[%s]" % kernel(name='"other"')),
    ("described_twice", "[%s, %s]" % (kernel(), kernel())),
]

# The kernel at the wave stage; at the lane stage (after uq-lower-kernel-abi)
# its buffer is a bare global pointer.
MODULE = """module attributes {gpu.container_module, uq.kernels = %s} {
  gpu.module @uq_kernels {
    gpu.func @k(%%x: BUFFER, %%n: i32) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
}
"""
BUFFER = {"wave": "memref<?xf32>", "lanes": "!llvm.ptr<1>"}


def module(kernels, stage):
    return (MODULE % kernels).replace("BUFFER", BUFFER[stage])


def first_error(text):
    for line in text.splitlines():
        if "error:" in line:
            return line
    return text.splitlines()[0] if text.strip() else "(no output)"


def cli(tool, stage, workdir):
    os.makedirs(workdir, exist_ok=True)
    crashes = written = 0
    for name, kernels in CASES:
        path = os.path.join(workdir, name + ".mlir")
        with open(path, "w") as f:
            f.write(module(kernels, stage))
        out = os.path.join(workdir, name + ".hsaco")
        p = subprocess.run([tool, path, "--from=" + stage, "-o", out],
                           capture_output=True, text=True, timeout=120)
        text = p.stdout + p.stderr
        if p.returncode < 0 or "PLEASE submit a bug report" in text:
            print("CASE %s CRASH rc=%d" % (name, p.returncode))
            crashes += 1
            continue
        if p.returncode == 0:
            with open(out + ".json") as f:
                print("CASE %s rc=0: %s" % (name, " ".join(f.read().split())))
            continue
        print("CASE %s rc=%d: %s" % (name, p.returncode, first_error(text)))
        if os.path.exists(out) or os.path.exists(out + ".json"):
            print("CASE %s wrote an output file" % name)
            written += 1
    print("SUMMARY crashes=%d written=%d" % (crashes, written))


def python():
    """uq.compile_with_description; rc=1 stands for a CompileError."""
    import json
    import uq
    for name, kernels in CASES:
        try:
            r = uq.compile_with_description(module(kernels, "wave"),
                                            filename=name + ".mlir")
            text = json.dumps(r.description, indent=2, sort_keys=True)
            print("CASE %s rc=0: %s" % (name, " ".join(text.split())))
        except uq.CompileError as e:
            print("CASE %s rc=1: %s" % (name, first_error(e.diagnostics)))


if __name__ == "__main__":
    if sys.argv[1] == "cli":
        cli(*sys.argv[2:5])
    else:
        python()
