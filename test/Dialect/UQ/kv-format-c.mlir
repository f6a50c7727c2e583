// RUN: uq-opt %s | FileCheck %s
// RUN: uq-opt %s | uq-opt | FileCheck %s
// RUN: uq-opt %s | uq-opt | uq-opt | FileCheck %s

// Every valid c prints in a form the parser takes, and reads back as the
// same double: the shortest decimal that does, always with a '.' in the
// mantissa (MLIR's float literal needs one: "1e-05" lexes as the integer 1
// and "e-05", so the printer's old "c = 1e-05" could not be read back). The
// precision-policy pass writes such values. Property test over random c:
// test/unittests/Dialect/KVFormatAttrTest.cpp.

// CHECK-LABEL: func @c_values
// CHECK-SAME: a = #uq.kv_format<fp4_e2m1, c = 1.0e-05>
// CHECK-SAME: b = #uq.kv_format<fp4_e2m1, c = 1.0e+08>
// CHECK-SAME: c = #uq.kv_format<fp4_e2m1>
// CHECK-SAME: d = #uq.kv_format<fp4_e2m1, c = 0.002232142857142857>
// CHECK-SAME: e = #uq.kv_format<fp4_e2m1, c = 1.1754943508222875e-38>
// CHECK-SAME: f = #uq.kv_format<fp4_e2m1, c = 3.4028234663852886e+38>
// CHECK-SAME: g = #uq.kv_format<fp4_e2m1, c = 100.0>
// CHECK-SAME: h = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>
// CHECK-SAME: i = #uq.kv_format<fp4_e2m1, c = 0.15600000000000003>
func.func @c_values() attributes {
  a = #uq.kv_format<fp4_e2m1, c = 0.00001>,
  b = #uq.kv_format<fp4_e2m1, c = 100000000.0>,
  // 0.156 is the default and not printed.
  c = #uq.kv_format<fp4_e2m1, c = 0.156>,
  // 1/448, the MX convention's constant.
  d = #uq.kv_format<fp4_e2m1, c = 0.002232142857142857>,
  // The smallest and the largest valid c: 2^-126 and FLT_MAX.
  e = #uq.kv_format<fp4_e2m1, c = 1.1754943508222875e-38>,
  f = #uq.kv_format<fp4_e2m1, c = 3.4028234663852886e38>,
  g = #uq.kv_format<fp4_e2m1, c = 100.0>,
  h = #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard, scale_rule = mse_search>,
  // One ulp above the default is not the default.
  i = #uq.kv_format<fp4_e2m1, c = 0.15600000000000003>
} {
  return
}
