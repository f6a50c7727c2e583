//===- AttentionBound.h - Error bound of approximate attention --*- C++ -*-===//
//
// The per-element error bound of an attention kernel whose one deliberate
// approximation is the rounding of the softmax probabilities P before the
// PV product (bf16: relative 2^-9, FP8 E4M3: 2^-4), from
// ref::attentionErrorBounds. Shared by the GPU-path tests (the wave-level
// stage on the CPU, the emulated gfx950 kernels).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_TEST_UNITTESTS_ATTENTIONBOUND_H
#define UQ_TEST_UNITTESTS_ATTENTIONBOUND_H

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

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

/// Bounds [seqs, hq, D] for decode attention over \p cache
/// (ref::attentionErrorBounds with one query token per sequence).
inline std::vector<double>
attentionBounds(const ref::Format &kf, const ref::Format &vf,
                const ref::CacheGeometry &g, const uint8_t *cache,
                const std::vector<float> &q, int64_t seqs, int64_t hq,
                const std::vector<int32_t> &tables, int64_t maxBlocks,
                const std::vector<int32_t> &lens, const float *sinks,
                float softmaxScale, double err) {
  std::vector<int32_t> qsl(seqs + 1);
  for (int64_t s = 0; s <= seqs; ++s)
    qsl[s] = static_cast<int32_t>(s);
  ref::AttentionParams p;
  p.softmaxScale = softmaxScale;
  std::vector<double> bounds(seqs * hq * g.headDim);
  ref::Status st = ref::attentionErrorBounds(
      kf, vf, g, cache, p, 0, q.data(), seqs, hq, qsl.data(), seqs,
      tables.data(), maxBlocks, lens.data(), sinks, err, bounds.data());
  EXPECT_TRUE(st.ok()) << st.message();
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
