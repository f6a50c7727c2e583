# -*- Python -*-
# lit runs every GoogleTest binary built under test/unittests.
import lit.formats

config.name = "uq-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = config.uq_unittest_dir
config.test_exec_root = config.uq_unittest_dir
