# -*- Python -*-
# lit runs every GoogleTest binary built under test/unittests.
import lit.formats

config.name = "uq-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = config.uq_unittest_dir
config.test_exec_root = config.uq_unittest_dir

# Sanitizer builds: the unit tests link Debian's uninstrumented libMLIR, and
# LLVM's BumpPtrAllocator slabs started by uq's instrumented code are handed
# out poisoned by it; allow_user_poisoning=0 drops those false use-after-poison
# reports only (the reason in full: test/lit.cfg.py, docs/robustness.md).
if "address" in getattr(config, "uq_sanitize", ""):
    config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0"
