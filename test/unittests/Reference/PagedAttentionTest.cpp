//===- PagedAttentionTest.cpp - Prefill + decode attention reference ------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// ref::pagedAttention against an independent double-precision softmax with
// the causal mask written from its definition, against ref::decodeAttention
// (bit for bit on decode batches), chunked prefill against one call, and
// every row of the input-policy table of docs/dialect.md.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace uq::ref;

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

float bf16Round(float x) { return bf16ToFloat(floatToBf16(x)); }

/// One sequence of a batch: context length (new tokens included) and query
/// length.
struct Seq {
  int64_t len, queryLen;
};

/// A batch over a cache written by cacheWrite: sequence s's context token j
/// has K/V rows k/v[s][j]; block tables use the blocks in a shuffled order;
/// unused table entries hold out-of-range ids (never read).
struct Batch {
  Format kf = keyFormat(), vf = valueFormat();
  int64_t hq, hkv, d, bs, maxBlocks;
  std::vector<Seq> seqs;
  CacheGeometry g;
  std::vector<uint8_t> cache;
  std::vector<int32_t> tables, lens, starts;
  std::vector<std::vector<float>> k, v; // per sequence [len, hkv, d]
  std::vector<float> q, sinks;
  int64_t numTokens = 0;

  Batch(int64_t hq, int64_t hkv, int64_t d, int64_t bs, std::vector<Seq> seqsIn,
        uint64_t seed, Format kfIn = keyFormat(), Format vfIn = valueFormat())
      : kf(kfIn), vf(vfIn), hq(hq), hkv(hkv), d(d), bs(bs),
        seqs(std::move(seqsIn)) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    maxBlocks = 1;
    for (const Seq &s : seqs)
      maxBlocks = std::max<int64_t>(maxBlocks, (s.len + bs - 1) / bs);
    int64_t numSeqs = seqs.size();
    int64_t numBlocks = numSeqs * maxBlocks + 1;
    g = {numBlocks, bs, hkv, d, slotBytes(kf, vf, d)};
    cache.assign(cacheBytes(g), 0);
    std::vector<int32_t> ids(numBlocks);
    for (int64_t i = 0; i < numBlocks; ++i)
      ids[i] = static_cast<int32_t>(i);
    std::shuffle(ids.begin(), ids.end(), rng);
    tables.assign(numSeqs * maxBlocks, 0);
    starts.push_back(0);
    for (int64_t s = 0; s < numSeqs; ++s) {
      const Seq &sq = seqs[s];
      int64_t used = (sq.len + bs - 1) / bs;
      for (int64_t b = 0; b < maxBlocks; ++b)
        tables[s * maxBlocks + b] =
            b < used ? ids[s * maxBlocks + b] : (1 << 30);
      std::vector<float> ks(sq.len * hkv * d), vs(ks.size());
      for (size_t i = 0; i < ks.size(); ++i) {
        ks[i] = bf16Round(normal(rng));
        vs[i] = bf16Round(normal(rng));
      }
      std::vector<int64_t> slots(sq.len);
      for (int64_t j = 0; j < sq.len; ++j)
        slots[j] = int64_t(tables[s * maxBlocks + j / bs]) * bs + j % bs;
      EXPECT_TRUE(cacheWrite(kf, vf, g, ks.data(), vs.data(), slots.data(),
                             sq.len, cache.data())
                      .ok());
      k.push_back(std::move(ks));
      v.push_back(std::move(vs));
      lens.push_back(static_cast<int32_t>(sq.len));
      numTokens += sq.queryLen;
      starts.push_back(static_cast<int32_t>(numTokens));
    }
    q.resize(numTokens * hq * d);
    for (float &x : q)
      x = bf16Round(2.0f * normal(rng));
    sinks.resize(hq);
    for (float &x : sinks)
      x = 3.0f * normal(rng);
  }

  int64_t numSeqs() const { return seqs.size(); }

  std::vector<float> run(const AttentionParams &p, int64_t window,
                         bool withSinks) const {
    return runWith(p, window, withSinks, starts, lens, tables, q, numTokens);
  }

  std::vector<float> runWith(const AttentionParams &p, int64_t window,
                             bool withSinks, const std::vector<int32_t> &st,
                             const std::vector<int32_t> &ln,
                             const std::vector<int32_t> &tb,
                             const std::vector<float> &qs, int64_t tokens,
                             const float *sinkPtr = nullptr) const {
    std::vector<float> out(tokens * hq * d, 12345.0f);
    Status status = pagedAttention(
        kf, vf, g, cache.data(), p, window, qs.data(), tokens, hq, st.data(),
        static_cast<int64_t>(ln.size()), tb.data(), maxBlocks, ln.data(),
        sinkPtr ? sinkPtr : (withSinks ? sinks.data() : nullptr), out.data());
    EXPECT_TRUE(status.ok()) << status.message();
    return out;
  }
};

AttentionParams params(float scale, QueryPrecision qp = QueryPrecision::F32) {
  AttentionParams p;
  p.softmaxScale = scale;
  p.queryPrecision = qp;
  return p;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The output rows [hq * d] of token \p t.
std::vector<float> tokenRows(const std::vector<float> &out, int64_t t,
                             int64_t hq, int64_t d) {
  return std::vector<float>(out.begin() + t * hq * d,
                            out.begin() + (t + 1) * hq * d);
}

Format bf16Format() {
  Format f;
  f.code = ElementCode::BF16;
  return f;
}
} // namespace

// The definition, evaluated independently: bf16 K/V (stored exactly) and an
// f32 query, so decoded rows are the original values; the softmax in double
// from the original arrays with the causal (and windowed) mask written from
// the op's definition. The reference accumulates in float: bound 1e-5 of the
// largest output magnitude (a token seeing one key too many or too few
// differs by ~1e-1).
TEST(PagedAttention, MatchesIndependentCausalSoftmax) {
  for (int64_t window : {int64_t(0), int64_t(3)}) {
    for (bool withSinks : {false, true}) {
      Batch b(4, 2, 16, 4, {{7, 3}, {5, 5}, {6, 1}, {2, 0}, {9, 4}}, 7,
              bf16Format(), bf16Format());
      const float scale = 0.25f;
      std::vector<float> got = b.run(params(scale), window, withSinks);
      double maxAbs = 0, maxErr = 0;
      int64_t t = 0, group = b.hq / b.hkv;
      for (int64_t s = 0; s < b.numSeqs(); ++s) {
        const Seq &sq = b.seqs[s];
        for (int64_t i = 0; i < sq.queryLen; ++i, ++t) {
          int64_t pos = sq.len - sq.queryLen + i;
          for (int64_t h = 0; h < b.hq; ++h) {
            const float *qv = &b.q[(t * b.hq + h) * b.d];
            int64_t kvh = h / group;
            std::vector<double> logits;
            std::vector<int64_t> keys;
            for (int64_t j = 0; j <= pos; ++j) {
              if (window && j < pos - window + 1)
                continue;
              double dot = 0;
              for (int64_t c = 0; c < b.d; ++c)
                dot += double(qv[c]) * b.k[s][(j * b.hkv + kvh) * b.d + c];
              logits.push_back(dot * scale);
              keys.push_back(j);
            }
            double mx = withSinks ? b.sinks[h] : -INFINITY;
            for (double l : logits)
              mx = std::max(mx, l);
            double den = withSinks ? std::exp(b.sinks[h] - mx) : 0.0;
            for (double l : logits)
              den += std::exp(l - mx);
            for (int64_t c = 0; c < b.d; ++c) {
              double num = 0;
              for (size_t n = 0; n < keys.size(); ++n)
                num += std::exp(logits[n] - mx) *
                       b.v[s][(keys[n] * b.hkv + kvh) * b.d + c];
              double want = keys.empty() ? 0.0 : num / den;
              double g = got[(t * b.hq + h) * b.d + c];
              maxAbs = std::max(maxAbs, std::fabs(want));
              maxErr = std::max(maxErr, std::fabs(g - want));
              if (keys.empty()) {
                ASSERT_EQ(g, 0.0);
              }
            }
          }
        }
      }
      EXPECT_LT(maxErr, 1e-5 * maxAbs)
          << "window " << window << " sinks " << withSinks;
    }
  }
}

// A batch whose query lengths are all 1 is decode: pagedAttention must give
// decodeAttention's bits (both accumulations, rotated values, sinks, FP8
// queries, GQA 4, a length-0 sequence).
TEST(PagedAttention, DecodeBatchIsBitIdenticalToDecodeAttention) {
  for (bool vRotated : {false, true}) {
    Format vf = valueFormat();
    vf.rotate = vRotated;
    Batch b(8, 2, 128, 16, {{1, 1}, {50, 1}, {0, 1}, {333, 1}}, 3, keyFormat(),
            vf);
    for (bool f64 : {false, true}) {
      AttentionParams p = params(0.0883883f, QueryPrecision::FP8_E4M3);
      p.accumulateF64 = f64;
      std::vector<float> paged = b.run(p, 0, true);
      std::vector<int32_t> tables = b.tables;
      for (int32_t &id : tables) // decodeAttention rejects unused garbage ids
        if (id >= b.g.numBlocks)
          id = 0;
      std::vector<float> dec(paged.size(), -1.0f);
      Status st =
          decodeAttention(b.kf, b.vf, b.g, b.cache.data(), p, b.q.data(),
                          b.numSeqs(), b.hq, tables.data(), b.maxBlocks,
                          b.lens.data(), b.sinks.data(), dec.data());
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(sameBits(paged, dec)) << "vRotated " << vRotated;
      // A window as long as the context changes nothing either.
      EXPECT_TRUE(sameBits(b.run(p, 333, true), dec));
    }
  }
}

// Chunked prefill: write chunk 1, attend chunk 1, write chunk 2, attend
// chunk 2 gives the bits of write all, attend all (next to a decode
// sequence in the same batches).
TEST(PagedAttention, ChunkedPrefillEqualsOneCall) {
  const int64_t hq = 4, hkv = 2, d = 64, bs = 16, prefix = 40, c1 = 37, c2 = 51,
                total = prefix + c1 + c2;
  Format kf = keyFormat(), vf = valueFormat();
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t maxBlocks = (total + bs - 1) / bs;
  // Sequence 0 is the prefill; sequence 1 a decode of 20 context tokens.
  CacheGeometry g{2 * maxBlocks, bs, hkv, d, slotBytes(kf, vf, d)};
  std::vector<int32_t> tables(2 * maxBlocks);
  for (int64_t i = 0; i < 2 * maxBlocks; ++i)
    tables[i] = static_cast<int32_t>(2 * maxBlocks - 1 - i);
  auto rows = [&](int64_t n) {
    std::vector<float> x(n * hkv * d);
    for (float &e : x)
      e = bf16Round(normal(rng));
    return x;
  };
  std::vector<float> k = rows(total), v = rows(total), kd = rows(20),
                     vd = rows(20), q = rows(total * 2), qd = rows(3 * 2);
  auto slotsOf = [&](int64_t s, int64_t from, int64_t to) {
    std::vector<int64_t> slots;
    for (int64_t j = from; j < to; ++j)
      slots.push_back(int64_t(tables[s * maxBlocks + j / bs]) * bs + j % bs);
    return slots;
  };
  std::vector<uint8_t> base(cacheBytes(g), 0);
  auto decodeSlots = slotsOf(1, 0, 20);
  ASSERT_TRUE(cacheWrite(kf, vf, g, kd.data(), vd.data(), decodeSlots.data(),
                         20, base.data())
                  .ok());
  auto prefixSlots = slotsOf(0, 0, prefix);
  ASSERT_TRUE(cacheWrite(kf, vf, g, k.data(), v.data(), prefixSlots.data(),
                         prefix, base.data())
                  .ok());
  AttentionParams p = params(0.125f, QueryPrecision::FP8_E4M3);
  std::vector<float> sinks = {0.5f, -1.0f, 2.0f, 0.0f};
  // Queries: the prefill tokens prefix..total-1, then the decode token.
  auto attend = [&](const std::vector<uint8_t> &cache, int64_t from, int64_t to,
                    int64_t decodeLen) {
    int64_t n = to - from;
    std::vector<float> qs(q.begin() + from * hq * d, q.begin() + to * hq * d);
    qs.insert(qs.end(), qd.begin(), qd.begin() + hq * d);
    std::vector<int32_t> starts = {0, int32_t(n), int32_t(n + 1)};
    std::vector<int32_t> lens = {int32_t(to), int32_t(decodeLen)};
    std::vector<float> out((n + 1) * hq * d);
    Status st = pagedAttention(kf, vf, g, cache.data(), p, 0, qs.data(), n + 1,
                               hq, starts.data(), 2, tables.data(), maxBlocks,
                               lens.data(), sinks.data(), out.data());
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  };
  auto write = [&](std::vector<uint8_t> &cache, int64_t from, int64_t to) {
    auto slots = slotsOf(0, from, to);
    ASSERT_TRUE(cacheWrite(kf, vf, g, k.data() + from * hkv * d,
                           v.data() + from * hkv * d, slots.data(), to - from,
                           cache.data())
                    .ok());
  };
  std::vector<uint8_t> chunked = base, whole = base;
  write(chunked, prefix, prefix + c1);
  std::vector<float> o1 = attend(chunked, prefix, prefix + c1, 20);
  write(chunked, prefix + c1, total);
  std::vector<float> o2 = attend(chunked, prefix + c1, total, 20);
  write(whole, prefix, total);
  std::vector<float> all = attend(whole, prefix, total, 20);
  EXPECT_EQ(chunked, whole);
  std::vector<float> joined(o1.begin(), o1.begin() + c1 * hq * d);
  joined.insert(joined.end(), o2.begin(), o2.begin() + c2 * hq * d);
  std::vector<float> allPrefill(all.begin(), all.begin() + (c1 + c2) * hq * d);
  EXPECT_TRUE(sameBits(joined, allPrefill));
  // The decode token is the same in all three calls.
  EXPECT_TRUE(
      sameBits(tokenRows(o1, c1, hq, d), tokenRows(all, c1 + c2, hq, d)));
  EXPECT_TRUE(
      sameBits(tokenRows(o2, c2, hq, d), tokenRows(all, c1 + c2, hq, d)));
}

// window = 1 without sinks: each token sees only its own key, the softmax
// weight is exactly 1, so the output is the decoded value row exactly.
TEST(PagedAttention, WindowOfOneReturnsTheOwnValueRow) {
  Batch b(2, 1, 64, 8, {{30, 12}, {3, 3}}, 5);
  std::vector<float> got = b.run(params(0.125f), 1, false);
  CacheGeometry g = b.g;
  int64_t parts = codeBytes(b.kf, b.d) + scaleBytes(b.kf, b.d);
  int64_t t = 0;
  for (int64_t s = 0; s < b.numSeqs(); ++s)
    for (int64_t i = 0; i < b.seqs[s].queryLen; ++i, ++t) {
      int64_t pos = b.seqs[s].len - b.seqs[s].queryLen + i;
      int64_t slot =
          int64_t(b.tables[s * b.maxBlocks + pos / b.bs]) * b.bs + pos % b.bs;
      const uint8_t *base = b.cache.data() + slot * g.numKvHeads * g.slotBytes;
      std::vector<float> row(b.d);
      ASSERT_TRUE(
          decodeRow(b.vf, base + parts, base + parts + b.d / 2, b.d, row.data())
              .ok());
      for (int64_t h = 0; h < b.hq; ++h)
        for (int64_t c = 0; c < b.d; ++c)
          ASSERT_EQ(got[(t * b.hq + h) * b.d + c], row[c]) << t << " " << h;
    }
}

//===----------------------------------------------------------------------===//
// Input policy (docs/dialect.md): each row of the table
//===----------------------------------------------------------------------===//

namespace {
/// A small batch to perturb: 3 sequences (lengths 20, 9, 13; query lengths
/// 4, 1, 5) over FP4 K/V, GQA 2.
Batch policyBatch() {
  return Batch(4, 2, 64, 4, {{20, 4}, {9, 1}, {13, 5}}, 21);
}
} // namespace

// query_start_loc is read as its running maximum clamped to [0, T]: a
// decreasing entry, entries beyond T and negative entries mean the same as
// their sanitised array.
TEST(PagedAttentionPolicy, QueryStartLocIsItsClampedRunningMax) {
  Batch b = policyBatch();
  AttentionParams p = params(0.125f);
  const int64_t t = b.numTokens; // 10
  auto with = [&](std::vector<int32_t> st) {
    return b.runWith(p, 0, true, st, b.lens, b.tables, b.q, t);
  };
  EXPECT_TRUE(sameBits(with({0, 6, 3, 10}), with({0, 6, 6, 10})));
  EXPECT_TRUE(sameBits(with({0, 4, 5, 99}), with({0, 4, 5, 10})));
  EXPECT_TRUE(sameBits(with({-7, 4, 5, 10}), with({0, 4, 5, 10})));
  EXPECT_TRUE(sameBits(with({0, 4, 2, 1}), with({0, 4, 4, 4})));
  // Everything beyond: all sequences empty, all outputs 0.
  std::vector<float> none = with({50, 60, 70, 80});
  for (float x : none)
    ASSERT_EQ(x, 0.0f);
  // Not starting at 0: tokens 0..1 are covered by no sequence (zeros); the
  // others equal the batch of just those tokens.
  std::vector<float> shifted = with({2, 4, 5, 10});
  std::vector<float> qTail(b.q.begin() + 2 * b.hq * b.d, b.q.end());
  std::vector<float> tail =
      b.runWith(p, 0, true, {0, 2, 3, 8}, b.lens, b.tables, qTail, t - 2);
  for (int64_t i = 0; i < 2 * b.hq * b.d; ++i)
    ASSERT_EQ(shifted[i], 0.0f);
  EXPECT_TRUE(sameBits(
      std::vector<float>(shifted.begin() + 2 * b.hq * b.d, shifted.end()),
      tail));
  // Tokens after query_start_loc[S] are covered by no sequence.
  std::vector<float> shortLast = with({0, 4, 5, 8});
  for (int64_t i = 8 * b.hq * b.d; i < t * b.hq * b.d; ++i)
    ASSERT_EQ(shortLast[i], 0.0f);
  std::vector<float> full = b.run(p, 0, true);
  EXPECT_TRUE(sameBits(
      std::vector<float>(shortLast.begin(), shortLast.begin() + 5 * b.hq * b.d),
      std::vector<float>(full.begin(), full.begin() + 5 * b.hq * b.d)));
}

// seq_lens are clamped to [0, capacity]; a sequence shorter than its query
// leaves its first (query_len - seq_len) tokens without keys (zeros) and the
// others see keys 0..i - (query_len - seq_len).
TEST(PagedAttentionPolicy, SeqLensClampedAndShorterThanTheQuery) {
  Batch b = policyBatch();
  AttentionParams p = params(0.125f);
  const int64_t t = b.numTokens, row = b.hq * b.d;
  int32_t capacity = static_cast<int32_t>(b.maxBlocks * b.bs); // 20
  auto with = [&](std::vector<int32_t> lens) {
    return b.runWith(p, 0, true, b.starts, lens, b.tables, b.q, t);
  };
  EXPECT_TRUE(sameBits(with({capacity + 100, 9, 13}), with({capacity, 9, 13})));
  std::vector<float> negative = with({20, -3, 13});
  for (int64_t i = 4 * row; i < 5 * row; ++i)
    ASSERT_EQ(negative[i], 0.0f);
  // Sequence 2 (query tokens 5..9) with 2 context tokens: tokens 5..7 see
  // nothing, tokens 8 and 9 are the batch {query 2, length 2}.
  std::vector<float> shortCtx = with({20, 9, 2});
  for (int64_t i = 5 * row; i < 8 * row; ++i)
    ASSERT_EQ(shortCtx[i], 0.0f);
  std::vector<float> qLast(b.q.begin() + 8 * row, b.q.end());
  std::vector<float> last =
      b.runWith(p, 0, true, {0, 0, 0, 2}, {20, 9, 2}, b.tables, qLast, 2);
  EXPECT_TRUE(sameBits(
      std::vector<float>(shortCtx.begin() + 8 * row, shortCtx.end()), last));
}

// Block ids outside [0, num_blocks) are clamped into the cache, as the
// decode CPU path does.
TEST(PagedAttentionPolicy, BlockIdsAreClampedIntoTheCache) {
  Batch b = policyBatch();
  AttentionParams p = params(0.125f);
  std::vector<int32_t> bad = b.tables, clamped = b.tables;
  bad[0] = -5;
  clamped[0] = 0;
  bad[b.maxBlocks + 1] = static_cast<int32_t>(b.g.numBlocks + 3);
  clamped[b.maxBlocks + 1] = static_cast<int32_t>(b.g.numBlocks - 1);
  bad[2 * b.maxBlocks] = std::numeric_limits<int32_t>::min();
  clamped[2 * b.maxBlocks] = 0;
  EXPECT_TRUE(sameBits(
      b.runWith(p, 0, true, b.starts, b.lens, bad, b.q, b.numTokens),
      b.runWith(p, 0, true, b.starts, b.lens, clamped, b.q, b.numTokens)));
  EXPECT_FALSE(
      sameBits(b.runWith(p, 0, true, b.starts, b.lens, bad, b.q, b.numTokens),
               b.run(p, 0, true)));
}

// A cache without blocks holds no keys: every output is 0 (cache may be
// null).
TEST(PagedAttentionPolicy, NoBlocksMeansNoKeys) {
  Batch b = policyBatch();
  CacheGeometry g = b.g;
  g.numBlocks = 0;
  std::vector<float> out(b.numTokens * b.hq * b.d, 7.0f);
  Status st = pagedAttention(b.kf, b.vf, g, nullptr, params(0.125f), 0,
                             b.q.data(), b.numTokens, b.hq, b.starts.data(),
                             b.numSeqs(), b.tables.data(), b.maxBlocks,
                             b.lens.data(), b.sinks.data(), out.data());
  ASSERT_TRUE(st.ok()) << st.message();
  for (float x : out)
    ASSERT_EQ(x, 0.0f);
}

// NaN/Inf in queries and sinks go through the IEEE arithmetic: a NaN query
// element makes its (token, head) NaN, and only it; an Inf one becomes NaN
// through the E4M3 rounding; a NaN or +Inf sink makes its head NaN for
// tokens that see a key (exp(inf - inf)); a -Inf sink is no sink; a token
// that sees no key stays 0 whatever its query or sink.
TEST(PagedAttentionPolicy, NaNAndInfPropagate) {
  Batch b = policyBatch();
  const int64_t row = b.hq * b.d;
  std::vector<float> clean = b.run(params(0.125f), 0, true);
  std::vector<float> q = b.q;
  q[3 * row + 1 * b.d + 7] = kNaN; // token 3, head 1
  q[6 * row + 2 * b.d + 0] = kInf; // token 6, head 2 (FP8 query)
  for (QueryPrecision qp : {QueryPrecision::F32, QueryPrecision::FP8_E4M3}) {
    AttentionParams p = params(0.125f, qp);
    std::vector<float> ref = b.run(p, 0, true);
    std::vector<float> got =
        b.runWith(p, 0, true, b.starts, b.lens, b.tables, q, b.numTokens);
    for (int64_t i = 0; i < b.numTokens * row; ++i) {
      int64_t t = i / row, h = (i % row) / b.d;
      bool poisoned = (t == 3 && h == 1) ||
                      (t == 6 && h == 2 && qp == QueryPrecision::FP8_E4M3);
      if (poisoned) {
        ASSERT_TRUE(std::isnan(got[i])) << i;
      } else if (!(t == 6 && h == 2)) {
        ASSERT_EQ(got[i], ref[i]) << i;
      }
    }
  }
  // Sinks.
  AttentionParams p = params(0.125f);
  std::vector<float> sinks = b.sinks;
  sinks[0] = kNaN;
  sinks[1] = kInf;
  sinks[2] = -kInf;
  std::vector<float> got = b.runWith(p, 0, true, b.starts, b.lens, b.tables,
                                     b.q, b.numTokens, sinks.data());
  std::vector<float> noSink = b.run(p, 0, false);
  for (int64_t i = 0; i < b.numTokens * row; ++i) {
    int64_t h = (i % row) / b.d;
    if (h <= 1)
      ASSERT_TRUE(std::isnan(got[i])) << i;
    else if (h == 2)
      ASSERT_EQ(got[i], noSink[i]) << i;
    else
      ASSERT_EQ(got[i], clean[i]) << i;
  }
  // Sequence 2 shorter than its query: its first tokens see no key and stay
  // 0 even with a NaN sink and a NaN query.
  std::vector<int32_t> lens2 = {20, 9, 2};
  std::vector<float> q2 = b.q;
  q2[5 * row] = kNaN;
  std::vector<float> empty = b.runWith(p, 0, true, b.starts, lens2, b.tables,
                                       q2, b.numTokens, sinks.data());
  for (int64_t i = 5 * row; i < 8 * row; ++i)
    ASSERT_EQ(empty[i], 0.0f);
}

TEST(PagedAttention, BadArgumentsAreReportedAndWriteNothing) {
  Batch b = policyBatch();
  AttentionParams p = params(0.125f);
  std::vector<float> out(b.numTokens * b.hq * b.d, 7.0f);
  auto call = [&](int64_t hq, int64_t window, int64_t tokens, int64_t seqs,
                  const int32_t *starts, CacheGeometry g) {
    return pagedAttention(b.kf, b.vf, g, b.cache.data(), p, window, b.q.data(),
                          tokens, hq, starts, seqs, b.tables.data(),
                          b.maxBlocks, b.lens.data(), nullptr, out.data());
  };
  EXPECT_FALSE(call(3, 0, b.numTokens, 3, b.starts.data(), b.g).ok());
  EXPECT_FALSE(call(b.hq, -1, b.numTokens, 3, b.starts.data(), b.g).ok());
  EXPECT_FALSE(call(b.hq, 0, -1, 3, b.starts.data(), b.g).ok());
  EXPECT_FALSE(call(b.hq, 0, b.numTokens, -2, b.starts.data(), b.g).ok());
  EXPECT_FALSE(call(b.hq, 0, b.numTokens, 3, nullptr, b.g).ok());
  CacheGeometry small = b.g;
  small.slotBytes = 10;
  Status st = call(b.hq, 0, b.numTokens, 3, b.starts.data(), small);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("slot"), std::string::npos) << st.message();
  CacheGeometry negative = b.g;
  negative.numBlocks = -1;
  EXPECT_FALSE(call(b.hq, 0, b.numTokens, 3, b.starts.data(), negative).ok());
  for (float x : out)
    ASSERT_EQ(x, 7.0f);
}

// PagedBatch states the sanitised bounds the GPU kernels must reproduce.
TEST(PagedAttentionPolicy, PagedBatchBounds) {
  const int32_t starts[] = {-4, 3, 1, 9, 30};
  const int32_t lens[] = {5, -2, 100, 2};
  PagedBatch b(starts, lens, 4, /*numTokens=*/12, /*capacity=*/64,
               /*window=*/3);
  EXPECT_EQ(b.tokenBegin(0), 0);
  EXPECT_EQ(b.tokenEnd(0), 3);
  EXPECT_EQ(b.tokenEnd(1), 3); // 1 < 3: empty
  EXPECT_EQ(b.tokenEnd(2), 9);
  EXPECT_EQ(b.tokenEnd(3), 12); // 30 clamped to T
  EXPECT_EQ(b.seqLen(0), 5);
  EXPECT_EQ(b.seqLen(1), 0);
  EXPECT_EQ(b.seqLen(2), 64);
  EXPECT_EQ(b.seqLen(3), 2);
  // Sequence 0: query 3, length 5: positions 2, 3, 4, window 3.
  EXPECT_EQ(b.keys(0, 0).first, 0);
  EXPECT_EQ(b.keys(0, 0).count, 3);
  EXPECT_EQ(b.keys(0, 2).first, 2);
  EXPECT_EQ(b.keys(0, 2).count, 3);
  // Sequence 3: query 3, length 2: position -1 sees nothing, then 0, 1.
  EXPECT_EQ(b.keys(3, 0).count, 0);
  EXPECT_EQ(b.keys(3, 1).first, 0);
  EXPECT_EQ(b.keys(3, 1).count, 1);
  EXPECT_EQ(b.keys(3, 2).count, 2);
}
