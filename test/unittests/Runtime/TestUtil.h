//===- TestUtil.h - Helpers of the CPU-path unit tests ----------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_RUNTIME_TESTUTIL_H
#define UQ_TEST_UNITTESTS_RUNTIME_TESTUTIL_H

#include "uq/Reference/Reference.h"
#include "uq/Runtime/CPURunner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace uq {
namespace test {

using runtime::CPUProgram;
using runtime::DType;
using runtime::HostTensor;

/// Compiles \p ir (entry @main) or fails the test.
inline std::unique_ptr<CPUProgram>
compileOrDie(const std::string &ir, const runtime::CPURunOptions &opts = {}) {
  auto p = CPUProgram::compile(ir, "main", opts);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError()) << "\nIR:\n" << ir;
    return nullptr;
  }
  return std::move(*p);
}

/// Runs \p p or fails the test (empty result).
inline std::vector<HostTensor> runOrDie(CPUProgram &p,
                                        std::vector<HostTensor> args) {
  auto r = p.run(args);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return {};
  }
  return std::move(*r);
}

template <typename T>
HostTensor tensorOf(DType dt, std::vector<int64_t> shape,
                    const std::vector<T> &values) {
  HostTensor t = HostTensor::zeros(dt, std::move(shape));
  EXPECT_EQ(t.data.size(), values.size() * sizeof(T));
  // (An empty tensor has no data pointer: memcpy's arguments must not be
  // null even for 0 bytes, which UBSan reports.)
  size_t bytes = std::min(t.data.size(), values.size() * sizeof(T));
  if (bytes)
    std::memcpy(t.data.data(), values.data(), bytes);
  return t;
}

inline HostTensor f32Tensor(std::vector<int64_t> shape,
                            const std::vector<float> &v) {
  return tensorOf(DType::F32, std::move(shape), v);
}

/// bf16 tensor from floats that are exactly bf16 values.
inline HostTensor bf16Tensor(std::vector<int64_t> shape,
                             const std::vector<float> &v) {
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = ref::floatToBf16(v[i]);
  return tensorOf(DType::BF16, std::move(shape), bits);
}

template <typename T> std::vector<T> valuesOf(const HostTensor &t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

/// Equal as values, or both NaN.
inline bool sameFloat(float a, float b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

inline double relL2(const std::vector<float> &a, const std::vector<float> &r) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double e = static_cast<double>(a[i]) - r[i];
    num += e * e;
    den += static_cast<double>(r[i]) * r[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

/// Deterministic pseudo-random numbers (xorshift), independent of libstdc++.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 2654435761u + 88172645463325252ull) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  /// Uniform in [0, 1).
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Approximately normal (sum of 4 uniforms), scaled.
  float normal(float sigma = 1.0f) {
    double x = uniform() + uniform() + uniform() + uniform() - 2.0;
    return static_cast<float>(x * 1.7320508 * sigma);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % n); }
};

/// Rounds to a bf16 value (so bf16 and f32 inputs mean the same).
inline float bf16Round(float x) {
  return ref::bf16ToFloat(ref::floatToBf16(x));
}

} // namespace test
} // namespace uq

#endif // UQ_TEST_UNITTESTS_RUNTIME_TESTUTIL_H
