# RUN: rm -rf %t && mkdir -p %t
# RUN: env PYTHONPATH=%uq_build/python-bindings UQ_SANITIZE=%uq_sanitize %python %s %uq_src %uq_build %t | FileCheck %s

# The code examples of docs/integration.md, docs/runtime.md and README.md,
# run as printed, in document order, in a scratch folder where `build`,
# `include`, `docs`, `test` and `python-bindings` link to the build and the
# source tree (the docs' commands run from the repository root):
#  - python blocks run in one namespace per document (later blocks continue
#    earlier ones);
#  - c/cpp blocks whose first line names a file (`/* compile.c: ...`,
#    `// run.cpp: ...`) are written to it;
#  - sh blocks run with bash -e;
#  - blocks listed in NOT_RUN are skipped, each with its reason printed
#    (FileCheck below pins the list, so a new block cannot be skipped
#    silently).

import contextlib
import io
import os
import re
import subprocess
import sys

src, build, tmp = sys.argv[1:4]
for name in ("include", "docs", "test", "python-bindings"):
    os.symlink(os.path.join(src, name), os.path.join(tmp, name))
os.symlink(build, os.path.join(tmp, "build"))
os.chdir(tmp)

# In a sanitizer build (UQ_SANITIZE: -DUQ_SANITIZE's list, empty
# otherwise) uq's static libraries are instrumented, so a program the docs
# link against them must be linked with the same sanitizers: `c++` and `cc`
# of the sh blocks are wrappers that add the flags (the commands still run
# as printed).
sanitize = os.environ.get("UQ_SANITIZE", "")
if sanitize:
    wrappers = os.path.join(tmp, "sanitize-bin")
    os.mkdir(wrappers)
    for cc in ("c++", "cc"):
        path = os.path.join(wrappers, cc)
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\nexec /usr/bin/{cc} -fsanitize={sanitize} '
                    f'-fno-sanitize=vptr "$@"\n')
        os.chmod(path, 0o755)
    os.environ["PATH"] = wrappers + os.pathsep + os.environ["PATH"]

# How a skipped block's first line starts -> why it is not run here.
NOT_RUN = {
    "bash .ci/install-deps":
        "installs packages and builds everything (CI runs it as .ci/run)",
    "cmake -G Ninja -S . -B build":
        "configures and builds the project: the build this test runs in",
    "build/bin/uq-opt file.mlir":
        "README's command reference: placeholder inputs, minutes of work",
    "cmake --install build --component uq-dev --prefix /opt/uq":
        "writes to /opt; test/Consumer/consumer.test installs to a scratch "
        "prefix",
    "cmake_minimum_required(VERSION 3.20)":
        "the find_package(UQ) consumer (CMake configure and build of an MLIR "
        "program); test/Consumer/consumer.test builds its own",
    '#include "uq/Dialect/UQ/IR/UQ.h"': "the same consumer's main.cpp",
    "cmake -G Ninja -S consumer":
        "the same consumer's build",
}

FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)


def blocks(path):
    text = open(os.path.join(src, path)).read()
    for m in FENCE.finditer(text):
        indent, lang, body = m.group(1), m.group(2), m.group(3)
        lines = [ln[len(indent):] if ln.startswith(indent) else ln
                 for ln in body.splitlines()]
        yield lang, "\n".join(lines) + "\n"


def show(text):
    """A block's output, indented under its header (for the CHECKs of what
    the docs' comments say a line prints)."""
    for line in text.splitlines():
        print("  | " + line)


summary, summaries = [], []
for doc in ("docs/integration.md", "docs/runtime.md", "README.md"):
    namespace = {"__name__": "__doc_example__"}
    for i, (lang, code) in enumerate(blocks(doc)):
        first = code.splitlines()[0] if code.strip() else ""
        where = f"{doc} block {i} ({lang})"
        skip = [why for start, why in NOT_RUN.items()
                if first.startswith(start)]
        if skip:
            print(f"{where}: not run: {skip[0]}")
            summary.append(f"{lang}:skipped")
            continue
        summary.append(f"{lang}:run")
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, where, "exec"), namespace)
            print(f"{where}: ran")
            show(out.getvalue())
        elif lang in ("c", "cpp"):
            m = re.match(r"(?:/\*|//) *([\w.-]+\.(?:c|cpp)):", first)
            assert m, f"{where}: the first line must name the file"
            open(m.group(1), "w").write(code)
            print(f"{where}: written to {m.group(1)}")
        elif lang == "sh":
            r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"{where} failed:\n{code}\n{r.stderr}"
            print(f"{where}: ran")
            show(r.stdout)
        else:
            raise AssertionError(f"{where}: no rule for a '{lang}' block")

    summaries.append(f"{doc}: {' '.join(summary)}")
    summary = []
for line in summaries:
    print(line)

# What the docs' comments say the examples print:
# CHECK: docs/integration.md block 1 (python): ran
# CHECK-NEXT: | (4, 8, 64) (4, 8, 4)
# CHECK: docs/integration.md block 2 (python): ran
# CHECK-NEXT: | (4, 32, 128) uint16
# CHECK: docs/integration.md block 5 (sh): ran
# CHECK: docs/runtime.md block 1 (python): ran
# CHECK-NEXT: | (2, 8, 64) (6, 8, 64)
# CHECK: docs/runtime.md block 3 (sh): ran
# CHECK-NEXT: | f32 [2, 8, 64] 0.000000e+00
# CHECK: docs/runtime.md block 4 (sh): ran
# CHECK: | summary: steps=6

# Every block, in order: run or skipped (a new block changes these lines).
# CHECK: docs/integration.md: sh:skipped python:run python:run python:run c:run sh:run sh:run sh:skipped cmake:skipped cpp:skipped sh:skipped
# CHECK: docs/runtime.md: sh:run python:run cpp:run sh:run sh:run
# CHECK: README.md: sh:skipped sh:skipped sh:skipped
