//===- GoldenTest.cpp - The CPU path against vLLM's golden vectors --------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The golden vectors ($UQ_SHARED_DIR/golden, manifest.json; bf16 raw
// little-endian bit patterns, f32 raw floats, u8 raw bytes) were made by
// vLLM's UltraQuant reference. Here they go through uq ops compiled by
// uq-cpu-pipeline: encode cases through uq.quantize/uq.dequantize (bit-exact),
// attention cases through uq.cache_write + uq.decode_attention (relative L2
// below 1e-5).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "../GoldenData.h"

#include "llvm/Support/FormatVariadic.h"

#include <fstream>
#include <iterator>
#include <sstream>

using namespace uq;
using namespace uq::test;

namespace {
/// The bytes of golden file `name` (a size other than `expect` fails).
std::vector<uint8_t> fileBytes(const std::string &name, size_t expect) {
  return golden::bytes(name, expect);
}

struct EncodeCase {
  const char *name;
  bool rotate;
  int64_t rows, d;
};

struct EncodeDiff {
  int64_t codeBytes = 0, scaleBytes = 0, decoded = 0;
  std::vector<int64_t> rows;
};

EncodeDiff runEncode(const EncodeCase &c) {
  EncodeDiff diff;
  std::string fmt = c.rotate ? "#uq.kv_format<fp4_e2m1, rotation = hadamard>"
                             : "#uq.kv_format<fp4_e2m1>";
  std::string ir = llvm::formatv(R"(
func.func @main(%x: tensor<{0}x{1}xbf16>)
    -> (tensor<{0}x{2}xi8>, tensor<{0}x{3}xi8>, tensor<{0}x{1}xf32>) {{
  %c, %s = uq.quantize %x {{format = {4}}
      : tensor<{0}x{1}xbf16> -> tensor<{0}x{2}xi8>, tensor<{0}x{3}xi8>
  %d = uq.dequantize %c, %s {{format = {4}}
      : tensor<{0}x{2}xi8>, tensor<{0}x{3}xi8> -> tensor<{0}x{1}xf32>
  return %c, %s, %d : tensor<{0}x{2}xi8>, tensor<{0}x{3}xi8>, tensor<{0}x{1}xf32>
}
)",
                                 c.rows, c.d, c.d / 2, c.d / 32, fmt)
                       .str();
  auto prog = compileOrDie(ir);
  if (!prog)
    return diff;
  std::string base(c.name);
  HostTensor x = tensorOf(DType::BF16, {c.rows, c.d},
                          fileBytes(base + "_x.bin", c.rows * c.d * 2));
  auto gc = fileBytes(base + "_codes.bin", c.rows * c.d / 2);
  auto gs = fileBytes(base + "_scales.bin", c.rows * c.d / 32);
  auto gdb = fileBytes(base + "_decoded.bin", c.rows * c.d * 4);
  std::vector<float> gd(c.rows * c.d);
  std::memcpy(gd.data(), gdb.data(), gdb.size());
  auto out = runOrDie(*prog, {x});
  if (out.size() != 3)
    return diff;
  auto codes = valuesOf<uint8_t>(out[0]);
  auto scales = valuesOf<uint8_t>(out[1]);
  auto dec = valuesOf<float>(out[2]);
  for (int64_t r = 0; r < c.rows; ++r) {
    bool bad = false;
    for (int64_t i = 0; i < c.d / 2; ++i)
      if (codes[r * c.d / 2 + i] != gc[r * c.d / 2 + i]) {
        ++diff.codeBytes;
        bad = true;
      }
    for (int64_t i = 0; i < c.d / 32; ++i)
      if (scales[r * c.d / 32 + i] != gs[r * c.d / 32 + i]) {
        ++diff.scaleBytes;
        bad = true;
      }
    for (int64_t i = 0; i < c.d; ++i)
      if (!sameFloat(dec[r * c.d + i], gd[r * c.d + i])) {
        ++diff.decoded;
        bad = true;
      }
    if (bad)
      diff.rows.push_back(r);
  }
  return diff;
}

class GoldenEncode : public ::testing::TestWithParam<EncodeCase> {};
} // namespace

// Every random encode case and edge_v: codes, scales and decoded values
// bit-exact.
TEST_P(GoldenEncode, BitExact) {
  const EncodeCase &c = GetParam();
  UQ_REQUIRE_GOLDEN(c.name);
  EncodeDiff diff = runEncode(c);
  EXPECT_EQ(diff.codeBytes, 0);
  EXPECT_EQ(diff.scaleBytes, 0);
  EXPECT_EQ(diff.decoded, 0);
}

INSTANTIATE_TEST_SUITE_P(
    CPU, GoldenEncode,
    ::testing::Values(EncodeCase{"encode_k_d64", true, 512, 64},
                      EncodeCase{"encode_v_d64", false, 512, 64},
                      EncodeCase{"encode_k_d128", true, 512, 128},
                      EncodeCase{"encode_v_d128", false, 512, 128},
                      EncodeCase{"encode_k_d256", true, 512, 256},
                      EncodeCase{"encode_v_d256", false, 512, 256},
                      EncodeCase{"edge_v_d128", false, 9, 128}),
    [](const ::testing::TestParamInfo<EncodeCase> &info) {
      return std::string(info.param.name);
    });

// edge_k_d128: as for the reference library (test/unittests/Reference/
// GoldenTest.cpp), only row 2 differs: its exact rotation has channels
// 32..127 equal to 0 (zero sentinel, zero codes here), while vLLM's float32
// matrix product leaves ~1e-7 noise there that it codes with tiny scales.
// Counted: 3 scale bytes and 38 code bytes, nothing else.
TEST(GoldenEdge, EdgeKeyDiffersOnlyInTheMatmulNoiseOfRow2) {
  UQ_REQUIRE_GOLDEN("edge_k_d128");
  EncodeDiff diff = runEncode({"edge_k_d128", true, 9, 128});
  EXPECT_EQ(diff.rows, std::vector<int64_t>{2});
  EXPECT_EQ(diff.scaleBytes, 3);
  EXPECT_EQ(diff.codeBytes, 38);
}

namespace {
struct AttnGolden {
  const char *name;
  int64_t b, hq, hk, n, d;
  double scale;
  bool sinks;
};
class GoldenAttention : public ::testing::TestWithParam<AttnGolden> {};
} // namespace

// The case's K/V written by uq.cache_write (block size 16, each sequence's
// blocks in reverse order) and read by uq.decode_attention with the FP8
// query: relative L2 below 1e-5 against vLLM's output (torch's float kernels
// sum in another order; a different quantization decision would be ~1e-2).
TEST_P(GoldenAttention, QuantizedMatchesGolden) {
  const AttnGolden &c = GetParam();
  UQ_REQUIRE_GOLDEN(c.name);
  const int64_t bs = 16, perSeq = (c.n + bs - 1) / bs;
  const int64_t blocks = c.b * perSeq, slot = c.d + 2 * c.d / 32;
  const int64_t tokens = c.b * c.n;
  std::string scale = llvm::formatv("{0:e9}", static_cast<float>(c.scale));
  std::string sinkArg =
      c.sinks ? llvm::formatv(", %s: tensor<{0}xf32>", c.hq).str() : "";
  std::string sinkType =
      c.sinks ? llvm::formatv(", tensor<{0}xf32>", c.hq).str() : "";
  std::string ir =
      llvm::formatv(R"(
func.func @main(%k: tensor<{0}x{1}x{2}xbf16>, %v: tensor<{0}x{1}x{2}xbf16>,
                %slots: tensor<{0}xi64>, %cache: tensor<{3}x16x{1}x{4}xi8>,
                %q: tensor<{5}x{6}x{2}xbf16>, %bt: tensor<{5}x{7}xi32>,
                %lens: tensor<{5}xi32>{8}) -> tensor<{5}x{6}x{2}xf32> {{
  %c = uq.cache_write %k, %v, %slots into %cache
      {{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<{0}x{1}x{2}xbf16>, tensor<{0}x{1}x{2}xbf16>, tensor<{0}xi64>
        into tensor<{3}x16x{1}x{4}xi8>
  %o = uq.decode_attention %q, %c, %bt, %lens {9} scale {10}
      {{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<{5}x{6}x{2}xbf16>, tensor<{3}x16x{1}x{4}xi8>, tensor<{5}x{7}xi32>,
         tensor<{5}xi32>{11}) -> tensor<{5}x{6}x{2}xf32>
  return %o : tensor<{5}x{6}x{2}xf32>
}
)",
                    tokens, c.hk, c.d, blocks, slot, c.b, c.hq, perSeq, sinkArg,
                    c.sinks ? "sinks %s" : "", scale, sinkType)
          .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  std::string base(c.name);
  std::vector<int32_t> table(c.b * perSeq);
  for (int64_t i = 0; i < c.b * perSeq; ++i)
    table[i] = static_cast<int32_t>(blocks - 1 - i);
  std::vector<int64_t> slots(tokens);
  for (int64_t s = 0; s < c.b; ++s)
    for (int64_t t = 0; t < c.n; ++t)
      slots[s * c.n + t] = int64_t(table[s * perSeq + t / bs]) * bs + t % bs;
  std::vector<HostTensor> args = {
      tensorOf(DType::BF16, {tokens, c.hk, c.d},
               fileBytes(base + "_k.bin", tokens * c.hk * c.d * 2)),
      tensorOf(DType::BF16, {tokens, c.hk, c.d},
               fileBytes(base + "_v.bin", tokens * c.hk * c.d * 2)),
      tensorOf(DType::I64, {tokens}, slots),
      HostTensor::zeros(DType::I8, {blocks, bs, c.hk, slot}),
      tensorOf(DType::BF16, {c.b, c.hq, c.d},
               fileBytes(base + "_q.bin", c.b * c.hq * c.d * 2)),
      tensorOf(DType::I32, {c.b, perSeq}, table),
      tensorOf(DType::I32, {c.b},
               std::vector<int32_t>(c.b, static_cast<int32_t>(c.n)))};
  if (c.sinks)
    args.push_back(
        tensorOf(DType::F32, {c.hq}, fileBytes(base + "_sinks.bin", c.hq * 4)));
  auto out = runOrDie(*prog, args);
  ASSERT_EQ(out.size(), 1u);
  auto gb = fileBytes(base + "_out.bin", c.b * c.hq * c.d * 4);
  std::vector<float> gold(c.b * c.hq * c.d);
  std::memcpy(gold.data(), gb.data(), gb.size());
  EXPECT_LT(relL2(valuesOf<float>(out[0]), gold), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    CPU, GoldenAttention,
    ::testing::Values(AttnGolden{"attn_b2_hq16_hk2_n300_d128", 2, 16, 2, 300,
                                 128, 0.08838834764831843, false},
                      AttnGolden{"attn_b1_hq12_hk2_n1000_d128_sinks", 1, 12, 2,
                                 1000, 128, 0.08838834764831843, true},
                      AttnGolden{"attn_b1_hq16_hk1_n77_d256", 1, 16, 1, 77, 256,
                                 0.0625, false},
                      AttnGolden{"attn_b3_hq8_hk8_n64_d64", 3, 8, 8, 64, 64,
                                 0.125, false},
                      AttnGolden{"attn_b1_hq6_hk1_n4097_d128", 1, 6, 1, 4097,
                                 128, 0.08838834764831843, false}),
    [](const ::testing::TestParamInfo<AttnGolden> &info) {
      return std::string(info.param.name);
    });
