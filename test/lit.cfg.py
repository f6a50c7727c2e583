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
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%uq_src", config.uq_src_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.uq_tools_dir, config.llvm_tools_dir]
tools = ["uq-opt", "uq-emu", "uq-run", "uq-compile", "uq-demo",
         "uq-kernel-report", "llvm-mc",
         "ld.lld",
         "llvm-readelf", "llvm-objdump", "clang", "mlir-opt"]
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in tools], tool_dirs)

# Features so tests can say what they need.
if os.path.isdir(os.path.join(config.uq_shared_dir, "golden")):
    config.available_features.add("golden")

# Integration (issue 6): the mlir-opt plugin, the C API test program, and what
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
