# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "uq"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".s", ".test", ".py", ".c"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.uq_obj_root, "test")
# Unit tests are their own suite (test/unittests/lit.cfg.py); helper inputs
# live in Inputs/ folders.
config.excludes = ["Inputs", "unittests", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shared", config.uq_shared_dir))
# Sanitizer builds (-DUQ_SANITIZE, docs/robustness.md): uq's own programs
# carry the sanitizer runtimes; python3 (loading _uq) and mlir-opt (loading
# the plugin) are not built here and get the ASan runtime (and libstdc++,
# for ASan's __cxa_throw interceptor) preloaded, without leak checking (the
# interpreter's own allocations are not ours to judge).
#
# allow_user_poisoning=0, for every program a test runs (uq's tools through
# config.environment, python3 and mlir-opt through their prefix, the unit
# tests in unittests/lit.cfg.py): LLVM's BumpPtrAllocator
# (llvm/Support/Allocator.h, inline) poisons each new slab and unpoisons each
# allocation only where it is compiled with ASan. uq's instrumented code
# (the uq dialect's attribute storages, ...) starts slabs of the
# MLIRContext's allocators from which Debian's uninstrumented libMLIR then
# allocates without unpoisoning, so later accesses to that live memory (the
# memcpy under StringAttr::get, uq's reads of op attributes) were reported
# as use-after-poison. uq poisons nothing itself (no
# __asan_poison_memory_region in the tree): the option drops only these
# manual-poisoning reports; ASan's own checks (overflows, use after free,
# leaks) stay on. docs/robustness.md, "Sanitizers".
sanitize = getattr(config, "uq_sanitize", "")
host_prefix = ""
if "address" in sanitize:
    config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0"
    host_prefix = ("env 'LD_PRELOAD=%s' "
                   "ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 "
                   % config.uq_asan_runtime)
if sanitize:
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    config.available_features.add("sanitize")
if "address" in sanitize:
    config.available_features.add("asan")
config.substitutions.append(("%python", host_prefix + config.python_executable))
config.substitutions.append(("%uq_src", config.uq_src_root))
# The sanitizer list of a -DUQ_SANITIZE build ("" otherwise), for tests
# that link programs against uq's static libraries (docs_examples.py).
config.substitutions.append(("%uq_sanitize", sanitize or "''"))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.uq_tools_dir, config.llvm_tools_dir]
if host_prefix:
    llvm_config.add_tool_substitutions(
        [ToolSubst("mlir-opt",
                   command=host_prefix + os.path.join(config.llvm_tools_dir,
                                                      "mlir-opt"))],
        tool_dirs)
tools = ["uq-opt", "uq-emu", "uq-run", "uq-compile", "uq-demo",
         "uq-kernel-report", "uq-fuzz-ir", "uq-fuzz-stage-ir", "uq-fuzz-codeobject",
         "uq-fuzz-npy", "uq-fuzz-policy", "llvm-mc",
         "ld.lld",
         "llvm-readelf", "llvm-objdump", "clang"]
if not host_prefix:
    tools.append("mlir-opt")
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in tools], tool_dirs)

# Features so tests can say what they need.
if os.path.isdir(os.path.join(config.uq_shared_dir, "golden")):
    config.available_features.add("golden")

# Integration: the mlir-opt plugin, the C API test program, and what
# the out-of-tree consumer test needs to configure a CMake project.
config.substitutions.append(
    ("%uq_plugin", os.path.join(config.uq_obj_root, "lib", "libUQPlugin.so")))
config.substitutions.append(("%uq_build", config.uq_obj_root))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%mlir_dir", config.mlir_dir))
config.substitutions.append(("%cxx_compiler", config.cxx_compiler))
config.substitutions.append(("%c_compiler", config.c_compiler))
llvm_config.add_tool_substitutions(
    [ToolSubst("uq-capi-test", unresolved="ignore")],
    [os.path.join(config.uq_obj_root, "test", "CAPI")])
