//===- AttentionBound.h - Error bound of approximate attention --*- C++ -*-===//
//
// The per-element error bound of an attention kernel whose one deliberate
// approximation is the rounding of the softmax probabilities P before the
// PV product (bf16: relative 2^-9, FP8 E4M3: 2^-4), computed from the
// reference library's decoded cache. Shared by the GPU-path tests (the
// wave-level stage on the CPU, the emulated gfx950 kernels).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_ATTENTIONBOUND_H
#define UQ_TEST_UNITTESTS_ATTENTIONBOUND_H

#include "uq/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace uq::test {

/// Relative error of one rounded probability, with room for v_exp_f32's
/// 1 ulp and the f32 rescaling of the online softmax: bf16 has 8
/// significant bits (rounding error <= 2^-9), E4M3 4 (<= 2^-4).
inline double probabilityError(const ref::Format &vf) {
  return vf.code == ref::ElementCode::FP8_E4M3 ? std::ldexp(1.0, -4) +
                                                     std::ldexp(1.0, -8)
                                               : std::ldexp(1.0, -8);
}

/// Bounds [seqs, hq, D] for decode attention over \p cache: for each output
/// element `(err + 1e-5) * sum_t w_t |v_t| / (sum_t w_t + sink) + 1e-6`,
/// `w` the reference's softmax weights (1e-5 covers the f32 accumulation
/// order). With rotated values the output is rotated back by H/sqrt(D),
/// which mixes the errors of all dims: each is bounded by sum_i b_i /
/// sqrt(D). Block ids outside the cache are clamped into it, as the kernels
/// do.
inline std::vector<double>
attentionBounds(const ref::Format &kf, const ref::Format &vf,
                const ref::CacheGeometry &g, const uint8_t *cache,
                const std::vector<float> &q, int64_t seqs, int64_t hq,
                const std::vector<int32_t> &tables, int64_t maxBlocks,
                const std::vector<int32_t> &lens, const float *sinks,
                float softmaxScale, double err) {
  const int64_t d = g.headDim, group = hq / g.numKvHeads;
  const int64_t kCodes = ref::codeBytes(kf, d);
  const int64_t kScales = ref::scaleBytes(kf, d);
  const int64_t vCodes = ref::codeBytes(vf, d);
  std::vector<double> bounds(seqs * hq * d, 0.0);
  std::vector<float> qr(d), kr(d), vr(d);
  for (int64_t s = 0; s < seqs; ++s) {
    int64_t len = std::clamp<int64_t>(lens[s], 0, maxBlocks * g.blockSize);
    if (g.numBlocks <= 0)
      len = 0;
    auto slotOf = [&](int64_t t) {
      int64_t blk = tables[s * maxBlocks + t / g.blockSize];
      blk = std::clamp<int64_t>(blk, 0, g.numBlocks - 1);
      return cache + ((blk * g.blockSize + t % g.blockSize) * g.numKvHeads) *
                         g.slotBytes;
    };
    for (int64_t h = 0; h < hq; ++h) {
      std::copy_n(&q[(s * hq + h) * d], d, qr.data());
      if (kf.rotate)
        (void)ref::hadamardRotate(qr.data(), d);
      for (float &x : qr)
        x = ref::fp8e4m3Decode(ref::fp8e4m3Encode(x));
      const int64_t kvh = h / group;
      std::vector<double> logits(len);
      double m = sinks ? sinks[h] : -INFINITY;
      for (int64_t t = 0; t < len; ++t) {
        const uint8_t *slot = slotOf(t) + kvh * g.slotBytes;
        (void)ref::decodeRow(kf, slot, slot + kCodes, d, kr.data());
        double dot = 0;
        for (int64_t i = 0; i < d; ++i)
          dot += double(qr[i]) * kr[i];
        logits[t] = dot * softmaxScale;
        m = std::max(m, logits[t]);
      }
      double denom = sinks ? std::exp(sinks[h] - m) : 0.0;
      std::vector<double> weighted(d, 0.0);
      for (int64_t t = 0; t < len; ++t) {
        const uint8_t *slot = slotOf(t) + kvh * g.slotBytes;
        const uint8_t *vc = slot + kCodes + kScales;
        (void)ref::decodeRow(vf, vc, vc + vCodes, d, vr.data());
        double w = std::exp(logits[t] - m);
        denom += w;
        for (int64_t i = 0; i < d; ++i)
          weighted[i] += w * std::fabs(vr[i]);
      }
      double *b = &bounds[(s * hq + h) * d];
      double sum = 0;
      for (int64_t i = 0; i < d; ++i) {
        b[i] = denom > 0 ? (err + 1e-5) * weighted[i] / denom : 0.0;
        sum += b[i];
      }
      if (vf.rotate)
        std::fill(b, b + d, sum / std::sqrt(double(d)));
      for (int64_t i = 0; i < d; ++i)
        b[i] += 1e-6;
    }
  }
  return bounds;
}

/// Elements of \p got outside \p bounds around \p want (NaN where the
/// reference is not NaN, or the other way round, counts as outside).
inline int64_t countOutside(const std::vector<float> &got,
                            const std::vector<float> &want,
                            const std::vector<double> &bounds) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isnan(got[i])) {
      bad += std::isnan(want[i]) != std::isnan(got[i]);
      continue;
    }
    bad += !(std::fabs(double(got[i]) - want[i]) <= bounds[i]);
  }
  return bad;
}

} // namespace uq::test

#endif // UQ_TEST_UNITTESTS_ATTENTIONBOUND_H
