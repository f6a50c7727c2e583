//===- KVFormatAttrTest.cpp - #uq.kv_format c: verify, print, parse -------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The constant c of #uq.kv_format: the verifier takes exactly the finite,
// positive, normal f32 values ([2^-126, FLT_MAX] as doubles), and for every
// one of them parse(print(c)) == c bit for bit. Random c are drawn from the
// whole valid range (random exponents and mantissa bits of doubles, random
// f32 values widened to double, values next to the limits).
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;
using namespace uq;

namespace {

class KVFormatC : public ::testing::Test {
protected:
  KVFormatC() {
    ctx.loadDialect<UQDialect>();
    // Keep expected verifier errors off the test output.
    handler = ctx.getDiagEngine().registerHandler([this](Diagnostic &d) {
      lastError = d.str();
      return success();
    });
  }
  ~KVFormatC() override { ctx.getDiagEngine().eraseHandler(handler); }

  /// The format with c, or null when the verifier rejects it.
  KVFormatAttr make(double c) {
    return KVFormatAttr::getChecked(
        [&] { return emitError(UnknownLoc::get(&ctx)); }, &ctx,
        ElementCode::fp4_e2m1, 32u, ScaleEncoding::ue8m0, llvm::APFloat(c),
        Rotation::none, Rounding::ties_down, ScaleRule::log_round);
  }

  /// print, then parse: the c that comes back (NaN if parsing failed).
  double roundTrip(KVFormatAttr f, std::string *text) {
    text->clear();
    llvm::raw_string_ostream os(*text);
    Attribute(f).print(os);
    Attribute parsed = parseAttribute(*text, &ctx);
    auto back = dyn_cast_or_null<KVFormatAttr>(parsed);
    if (!back)
      return std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(back, f) << *text;
    return back.getCValue();
  }

  void expectRoundTrip(double c) {
    KVFormatAttr f = make(c);
    ASSERT_TRUE(f) << "rejected c = " << c << ": " << lastError;
    std::string text;
    double back = roundTrip(f, &text);
    uint64_t a, b;
    std::memcpy(&a, &c, 8);
    std::memcpy(&b, &back, 8);
    EXPECT_EQ(a, b) << "c = " << c << " printed as " << text << " parsed as "
                    << back << " " << lastError;
  }

  MLIRContext ctx;
  DiagnosticEngine::HandlerID handler;
  std::string lastError;
};

const double kMin = std::numeric_limits<float>::min(); // 2^-126
const double kMax = std::numeric_limits<float>::max();

TEST_F(KVFormatC, VerifierTakesExactlyPositiveNormalF32Values) {
  for (double c :
       {kMin, kMax, 0.156, 0.196, 1e-5, 1e8, 1.0 / 448, 1.0, 6.0 / 448})
    EXPECT_TRUE(make(c)) << c << ": " << lastError;
  const double inf = std::numeric_limits<double>::infinity();
  for (double c : {0.0, -0.0, -0.156, -kMin, std::nextafter(kMin, 0.0),
                   kMin / 2, 1e-45, 1e-300, std::nextafter(kMax, inf), 1e39,
                   1e300, inf, -inf, std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::denorm_min()}) {
    lastError.clear();
    EXPECT_FALSE(make(c)) << c;
    EXPECT_NE(lastError.find("c must be a finite, positive, normal f32 value"),
              std::string::npos)
        << c << ": " << lastError;
  }
}

TEST_F(KVFormatC, ChosenValuesRoundTrip) {
  // The examples, the defaults, the limits and their neighbours.
  for (double c :
       {1e-5, 1e8, 0.156, 1.0 / 448, 0.196, 0.1666, 1.0 / 6, 100.0, 1.0, 2.0,
        0.5, kMin, kMax, std::nextafter(kMin, 1.0), std::nextafter(kMax, 0.0),
        1.5e-38, 3e38, 123456789.0, 0.15600000000000003})
    expectRoundTrip(c);
}

TEST_F(KVFormatC, RandomDoublesRoundTrip) {
  std::mt19937_64 rng(20240607);
  std::uniform_int_distribution<int> exponent(-126, 127);
  int done = 0;
  while (done < 20000) {
    // A random 52-bit mantissa under a random exponent of the valid range.
    double c =
        std::ldexp(1.0 + std::ldexp(double(rng() >> 12), -52), exponent(rng));
    if (!KVFormatAttr::isValidScaleConstant(c))
      continue;
    expectRoundTrip(c);
    if (HasFailure())
      return;
    ++done;
  }
}

TEST_F(KVFormatC, RandomF32ValuesRoundTrip) {
  // What a user writing an f32 constant (or Python passing one) produces.
  std::mt19937 rng(7);
  int done = 0;
  while (done < 20000) {
    uint32_t bits = rng() & 0x7FFFFFFFu;
    float f;
    std::memcpy(&f, &bits, 4);
    if (!KVFormatAttr::isValidScaleConstant(f))
      continue;
    expectRoundTrip(f);
    if (HasFailure())
      return;
    ++done;
  }
}

TEST_F(KVFormatC, ShortDecimalsRoundTrip) {
  // Decimals with few digits over all magnitudes: the cases where the
  // shortest form has no '.' of its own ("1e-05", "3e+38", "100").
  for (int e = -37; e <= 38; ++e)
    for (int m = 1; m <= 9; ++m) {
      double c = std::stod(std::to_string(m) + "e" + std::to_string(e));
      if (KVFormatAttr::isValidScaleConstant(c))
        expectRoundTrip(c);
    }
}

TEST(KVFormatCText, PrintedFormHasADotInTheMantissa) {
  EXPECT_EQ(KVFormatAttr::formatScaleConstant(1e-5), "1.0e-05");
  EXPECT_EQ(KVFormatAttr::formatScaleConstant(1e8), "1.0e+08");
  EXPECT_EQ(KVFormatAttr::formatScaleConstant(100.0), "100.0");
  EXPECT_EQ(KVFormatAttr::formatScaleConstant(0.156), "0.156");
  EXPECT_EQ(KVFormatAttr::formatScaleConstant(3.4028234663852886e38),
            "3.4028234663852886e+38");
}

} // namespace
