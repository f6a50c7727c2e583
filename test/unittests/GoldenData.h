//===- GoldenData.h - Reading the golden vectors in unit tests --*- C++ -*-===//
//
// The golden vectors ($UQ_SHARED_DIR/golden, described by manifest.json) were
// produced by vLLM's UltraQuant reference: bf16 files are raw little-endian
// bf16 bit patterns, f32 raw little-endian floats, u8 raw bytes. Shared by
// the reference, CPU-path and GPU-path tests.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_GOLDENDATA_H
#define UQ_TEST_UNITTESTS_GOLDENDATA_H

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace uq::test::golden {

/// The golden folder, with a trailing slash.
inline std::string dir() { return std::string(UQ_SHARED_DIR) + "/golden/"; }

/// The bytes of golden file `name`; a missing file or a size other than
/// `expectBytes` is a test failure (the result is then resized to it).
inline std::vector<uint8_t> bytes(const std::string &name, size_t expectBytes) {
  std::ifstream in(dir() + name, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read golden file " << name;
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  EXPECT_EQ(b.size(), expectBytes) << name;
  b.resize(expectBytes, 0);
  return b;
}

/// `count` bf16 values, widened to float (bf16 is the top half of an f32).
inline std::vector<float> bf16(const std::string &name, size_t count) {
  std::vector<uint8_t> b = bytes(name, 2 * count);
  std::vector<float> f(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = (uint32_t(b[2 * i + 1]) << 24) | (uint32_t(b[2 * i]) << 16);
    std::memcpy(&f[i], &bits, 4);
  }
  return f;
}

/// `count` f32 values.
inline std::vector<float> f32(const std::string &name, size_t count) {
  std::vector<uint8_t> b = bytes(name, 4 * count);
  std::vector<float> f(count);
  std::memcpy(f.data(), b.data(), 4 * count);
  return f;
}

/// Relative L2 error of `a` against `ref`.
inline double relL2(const std::vector<float> &a,
                    const std::vector<float> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    double e = static_cast<double>(a[i]) - ref[i];
    num += e * e;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

} // namespace uq::test::golden

/// Skips the calling test when the golden folder is absent; fails when the
/// manifest does not know `caseName`.
#define UQ_REQUIRE_GOLDEN(caseName)                                            \
  do {                                                                         \
    std::ifstream manifest(::uq::test::golden::dir() + "manifest.json");       \
    if (!manifest)                                                             \
      GTEST_SKIP() << "no golden data at " << ::uq::test::golden::dir();       \
    std::stringstream text;                                                    \
    text << manifest.rdbuf();                                                  \
    ASSERT_NE(text.str().find("\"" + std::string(caseName) + "\""),            \
              std::string::npos)                                               \
        << "manifest.json has no case " << caseName;                           \
  } while (0)

#endif // UQ_TEST_UNITTESTS_GOLDENDATA_H
