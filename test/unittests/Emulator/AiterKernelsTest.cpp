//===- AiterKernelsTest.cpp - AMD's AITER attention kernels in the emulator ===//
//
// The six gfx950 code objects of AMD's AITER library in
// $UQ_SHARED_DIR/peers/aiter (README.md there: sources, launch facts,
// published MI355X figures) run in the emulator on small shapes and are
// compared with a float64 attention computed here from the same inputs:
// the forward kernels (BF16 and FP8, causal and not) and the two
// paged-attention decode kernels (BF16 cache, FP8 cache with per-token
// scales). The kernel arguments are placed by their offsets in AITER's host
// structs (`fmha_fwd_v3_args` in csrc/include/mha_fwd.h filled by
// csrc/cpp_itfs/mha_fwd.cu; `KernelArgs` in csrc/py_itfs_cu/asm_pa.cu), and
// each offset is checked against the code object's own metadata. The tests
// skip when the shared folder is missing.
//
//===----------------------------------------------------------------------===//

#include "AiterLaunch.h"

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

using namespace uq::emu;
using namespace uq::emu::test;

namespace {

/// Float64 attention of one query row over `n` keys: softmax(scale q.k) v.
void attendRow(const double *q, const std::vector<const double *> &keys,
               const std::vector<const double *> &vals, double scale,
               unsigned d, double *out) {
  std::vector<double> s(keys.size());
  double m = -INFINITY;
  for (size_t j = 0; j < keys.size(); ++j) {
    double dot = 0;
    for (unsigned c = 0; c < d; ++c)
      dot += q[c] * keys[j][c];
    s[j] = dot * scale;
    m = std::max(m, s[j]);
  }
  double sum = 0;
  for (double &x : s)
    sum += (x = std::exp(x - m));
  for (unsigned c = 0; c < d; ++c) {
    double acc = 0;
    for (size_t j = 0; j < keys.size(); ++j)
      acc += s[j] * vals[j][c];
    out[c] = acc / sum;
  }
}

double relL2(const std::vector<double> &got, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = got[i] - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

std::vector<double> bf16Values(const std::vector<uint8_t> &b) {
  std::vector<double> v(b.size() / 2);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = uq::ref::bf16ToFloat((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
  return v;
}

/// Random values: bf16 bytes, or FP8 E4M3 bytes, with their exact values.
struct Tensor {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};
Tensor randomTensor(size_t n, bool fp8, std::mt19937 &rng, double range) {
  std::uniform_real_distribution<float> u(-range, range);
  Tensor t;
  t.values.resize(n);
  t.bytes.resize(n * (fp8 ? 1 : 2));
  for (size_t i = 0; i < n; ++i) {
    float x = u(rng);
    if (fp8) {
      uint8_t c = uq::ref::fp8e4m3Encode(x, uq::ref::Fp8Overflow::Saturate);
      t.bytes[i] = c;
      t.values[i] = uq::ref::fp8e4m3Decode(c);
    } else {
      uint16_t h = uq::ref::floatToBf16(x);
      t.bytes[2 * i] = (uint8_t)h;
      t.bytes[2 * i + 1] = (uint8_t)(h >> 8);
      t.values[i] = uq::ref::bf16ToFloat(h);
    }
  }
  return t;
}

std::vector<uint8_t> floatBytes(const std::vector<float> &f) {
  std::vector<uint8_t> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

//===----------------------------------------------------------------------===//
// Forward attention (fmha_fwd_v3), batch mode, layout BSHD
//===----------------------------------------------------------------------===//

struct FwdCase {
  const char *file;
  bool fp8, causal;
  unsigned b, hq, hk, sq, sk;
};

void runForward(const FwdCase &c) {
  std::string path = aiterDir() + c.file;
  if (!aiterAvailable())
    GTEST_SKIP() << "no AITER code objects at " << aiterDir();
  const unsigned D = 128;
  std::mt19937 rng(1234 + c.b * 7 + c.sq);
  Tensor q = randomTensor((size_t)c.b * c.sq * c.hq * D, c.fp8, rng, 2.0);
  Tensor k = randomTensor((size_t)c.b * c.sk * c.hk * D, c.fp8, rng, 2.0);
  Tensor v = randomTensor((size_t)c.b * c.sk * c.hk * D, c.fp8, rng, 1.0);
  // FP8: dequantization scales. AITER's host code fills f32 [batch, heads]
  // arrays and byte strides for them (s_descale_*_Bs / _Hs at 560..640), but
  // this code object reads one scale per tensor: its disassembly loads each
  // descale pointer (kernarg 0x200, 0x210, 0x220) and then the dword at
  // offset 0 of it, and never reads the stride fields. The arrays here hold
  // different values per entry, and the reference uses entry 0.
  std::vector<float> dq(c.b * c.hq, 1.f), dk(c.b * c.hk, 1.f),
      dv(c.b * c.hk, 1.f);
  if (c.fp8) {
    for (size_t i = 0; i < dq.size(); ++i)
      dq[i] = 0.375f + 0.125f * (float)(i % 3);
    for (size_t i = 0; i < dk.size(); ++i)
      dk[i] = 0.625f + 0.25f * (float)(i % 2), dv[i] = 1.25f - 0.5f * (i % 2);
  }
  const float scale = 1.0f / std::sqrt((float)D);
  const unsigned es = c.fp8 ? 1 : 2, tile = 256;
  AiterLaunch L;
  unsigned oBytes = c.b * c.sq * c.hq * D * 2;
  L.buffers[0] = std::vector<uint8_t>(oBytes, 0);
  L.buffers[16] = q.bytes;
  L.buffers[32] = k.bytes;
  L.buffers[48] = v.bytes;
  L.buffers[64] = std::vector<uint8_t>((size_t)c.b * c.hq * c.sq * 4, 0);
  L.f32[80] = scale;
  L.u32[96] = c.sq;
  L.u32[112] = c.hq * D * es;             // s_Seqs
  L.u32[128] = tile * c.hq * D * es;      // s_Ts
  L.u32[144] = D * es;                    // s_Hs
  L.u32[160] = c.sq * c.hq * D * es;      // s_Bs
  L.u32[176] = c.hq / c.hk;               // s_gqa
  L.u32[192] = c.hk * D * es;             // s_k_Seqs
  L.u32[208] = D * es;                    // s_k_Hs
  L.u32[224] = c.sk * c.hk * D * es;      // s_k_Bs
  // s_opt: 5, or 3 for a causal mask with a head count not a multiple of 8.
  L.u32[240] = c.causal && c.hq % 8 ? 3 : 5;
  L.u32[256] = 1; // s_lse
  L.u32[272] = c.sk;
  L.u32[288] = D;
  L.u32[304] = D;
  L.u32[320] = c.hq;
  L.u32[336] = c.hk * D * es;             // s_v_Seqs
  L.u32[352] = D * es;
  L.u32[368] = c.sk * c.hk * D * es;
  L.u32[384] = c.hq * D * 2;              // s_o_Seqs (bf16 output)
  L.u32[400] = D * 2;
  L.u32[416] = c.sq * c.hq * D * 2;
  L.u32[464] = c.sq * 4;                  // s_lse_Hs
  if (c.fp8) {
    L.buffers[512] = floatBytes(dq);
    L.buffers[528] = floatBytes(dk);
    L.buffers[544] = floatBytes(dv);
    L.u32[560] = c.hq * 4, L.u32[576] = 4;
    L.u32[592] = c.hk * 4, L.u32[608] = 4;
    L.u32[624] = c.hk * 4, L.u32[640] = 4;
  }
  // Grid (query tiles, query heads, batch); a causal workgroup takes a head
  // and a tail tile (tg_div 2 in get_grid_dim).
  unsigned tiles = (c.sq + tile - 1) / tile;
  if (c.causal)
    tiles = (tiles + 1) / 2;
  LaunchConfig cfg;
  cfg.grid = {tiles, c.hq, c.b};
  cfg.block = {512, 1, 1};
  auto out = launchAiter(path, cfg, L);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<double> got = bf16Values((*out)[0]);

  // Reference (bottom-right causal mask = top-left for sq == sk).
  std::vector<double> ref(got.size()), lseRef(c.b * c.hq * c.sq);
  for (unsigned bb = 0; bb < c.b; ++bb)
    for (unsigned h = 0; h < c.hq; ++h) {
      unsigned g = h / (c.hq / c.hk);
      double sc = scale * dq[0] * dk[0]; // per-tensor scales (above)
      double vs = dv[0];
      std::vector<std::vector<double>> kr(c.sk), vr(c.sk);
      for (unsigned j = 0; j < c.sk; ++j) {
        size_t base = (((size_t)bb * c.sk + j) * c.hk + g) * D;
        kr[j].assign(k.values.begin() + base, k.values.begin() + base + D);
        vr[j].resize(D);
        for (unsigned e = 0; e < D; ++e)
          vr[j][e] = v.values[base + e] * vs;
      }
      for (unsigned i = 0; i < c.sq; ++i) {
        unsigned n = c.causal ? std::min(c.sk, i + 1 + (c.sk - c.sq)) : c.sk;
        std::vector<const double *> ks, vs2;
        for (unsigned j = 0; j < n; ++j)
          ks.push_back(kr[j].data()), vs2.push_back(vr[j].data());
        size_t qo = (((size_t)bb * c.sq + i) * c.hq + h) * D;
        attendRow(q.values.data() + qo, ks, vs2, sc, D, ref.data() + qo);
        double m = -INFINITY, sum = 0;
        std::vector<double> s(n);
        for (unsigned j = 0; j < n; ++j) {
          s[j] = 0;
          for (unsigned e = 0; e < D; ++e)
            s[j] += q.values[qo + e] * kr[j][e];
          s[j] *= sc;
          m = std::max(m, s[j]);
        }
        for (double x : s)
          sum += std::exp(x - m);
        lseRef[((size_t)bb * c.hq + h) * c.sq + i] = m + std::log(sum);
      }
    }
  double err = relL2(got, ref);
  std::printf("%s b=%u hq=%u hk=%u sq=%u sk=%u: rel L2 %.3g\n", c.file, c.b,
              c.hq, c.hk, c.sq, c.sk, err);
  // BF16: P and O are rounded to bf16 (2^-9); FP8: P is quantized to E4M3
  // before the PV product (2^-4 relative per element, mostly averaging out).
  EXPECT_LT(err, c.fp8 ? 4e-2 : 1e-2) << c.file;
  std::vector<double> lse((*out)[64].size() / 4);
  for (size_t i = 0; i < lse.size(); ++i) {
    float f;
    std::memcpy(&f, (*out)[64].data() + 4 * i, 4);
    lse[i] = f;
  }
  // The kernels write the natural-log LSE of the scaled scores (checked for
  // b = 1: the batch stride of the LSE is not a kernel argument).
  if (c.b == 1) {
    std::printf("  LSE rel L2 %.3g\n", relL2(lse, lseRef));
    EXPECT_LT(relL2(lse, lseRef), c.fp8 ? 2e-2 : 2e-3) << c.file;
  }
}

TEST(AiterKernels, ForwardBf16) {
  runForward({"fwd_hd128_bf16.co", false, false, 1, 2, 1, 256, 256});
}
TEST(AiterKernels, ForwardBf16Batch2Gqa) {
  runForward({"fwd_hd128_bf16.co", false, false, 2, 4, 2, 256, 192});
}
TEST(AiterKernels, ForwardBf16Causal) {
  runForward({"fwd_hd128_bf16_causal.co", false, true, 1, 2, 1, 512, 512});
}
TEST(AiterKernels, ForwardFp8) {
  runForward({"fwd_hd128_fp8.co", true, false, 1, 2, 1, 256, 256});
}
TEST(AiterKernels, ForwardFp8Batch2Gqa) {
  runForward({"fwd_hd128_fp8.co", true, false, 2, 4, 2, 256, 256});
}
TEST(AiterKernels, ForwardFp8Causal) {
  runForward({"fwd_hd128_fp8_causal.co", true, true, 1, 2, 1, 512, 512});
}

//===----------------------------------------------------------------------===//
// Paged attention decode (pa_fwd), one query token per sequence
//===----------------------------------------------------------------------===//

void runPaged(const char *file, bool fp8) {
  if (!aiterAvailable())
    GTEST_SKIP() << "no AITER code objects at " << aiterDir();
  const unsigned D = 128, blk = 16, gqa = 8, hk = 2, hq = gqa * hk;
  const std::vector<unsigned> lens = {37, 100, 16};
  const unsigned seqs = lens.size();
  const unsigned x = fp8 ? 16 : 8; // elements of 16 bytes
  const unsigned es = fp8 ? 1 : 2;
  unsigned mblk = 0, used = 0;
  for (unsigned l : lens)
    mblk = std::max(mblk, (l + blk - 1) / blk), used += (l + blk - 1) / blk;
  const unsigned blocks = used + 3;
  std::mt19937 rng(99 + fp8);
  // Block tables: a shuffled assignment of physical blocks.
  std::vector<int32_t> perm(blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> table(seqs * mblk, 0);
  unsigned next = 0;
  for (unsigned s = 0; s < seqs; ++s)
    for (unsigned i = 0; i < (lens[s] + blk - 1) / blk; ++i)
      table[s * mblk + i] = perm[next++];
  Tensor q = randomTensor((size_t)seqs * hq * D, false, rng, 2.0);
  // Logical caches [blocks, hk, 16, D], then laid out as AITER's
  // K [blocks, hk, D/x, 16, x] and V [blocks, hk, 16/x, D, x].
  Tensor kl = randomTensor((size_t)blocks * hk * blk * D, fp8, rng, 2.0);
  Tensor vl = randomTensor((size_t)blocks * hk * blk * D, fp8, rng, 1.0);
  std::vector<uint8_t> kc(kl.bytes.size()), vc(vl.bytes.size());
  for (unsigned B = 0; B < blocks; ++B)
    for (unsigned g = 0; g < hk; ++g)
      for (unsigned j = 0; j < blk; ++j)
        for (unsigned d = 0; d < D; ++d) {
          size_t logical = (((size_t)B * hk + g) * blk + j) * D + d;
          size_t base = ((size_t)B * hk + g) * blk * D;
          size_t ko = base + ((size_t)(d / x) * blk + j) * x + d % x;
          size_t vo = base + ((size_t)(j / x) * D + d) * x + j % x;
          std::memcpy(&kc[ko * es], &kl.bytes[logical * es], es);
          std::memcpy(&vc[vo * es], &vl.bytes[logical * es], es);
        }
  // FP8: f32 per-token scales [blocks, hk, 16].
  std::vector<float> ks(blocks * hk * blk, 1.f), vs(blocks * hk * blk, 1.f);
  if (fp8) {
    std::uniform_real_distribution<float> u(0.05f, 0.5f);
    for (size_t i = 0; i < ks.size(); ++i)
      ks[i] = u(rng), vs[i] = u(rng);
  }
  AiterLaunch L;
  L.buffers[0] = std::vector<uint8_t>((size_t)seqs * hq * D * 2, 0);
  L.buffers[16] = q.bytes;
  L.buffers[32] = kc;
  L.buffers[48] = vc;
  L.buffers[64] = std::vector<uint8_t>(table.size() * 4);
  std::memcpy(L.buffers[64].data(), table.data(), table.size() * 4);
  std::vector<int32_t> cl(lens.begin(), lens.end());
  L.buffers[80] = std::vector<uint8_t>(cl.size() * 4);
  std::memcpy(L.buffers[80].data(), cl.data(), cl.size() * 4);
  if (fp8) {
    L.buffers[96] = floatBytes(ks);
    L.buffers[112] = floatBytes(vs);
  }
  const double scale = 1.0 / std::sqrt((double)D);
  L.f32[128] = (float)(1.4426950408889634 * scale); // log2(e) / sqrt(D)
  L.u32[144] = mblk;                   // block-table row stride
  L.u32[160] = hk;                     // KV heads
  L.u32[176] = hq * D * 2;             // Q stride (bytes)
  L.u32[192] = hk * blk * D * es;      // K block stride (bytes)
  L.u32[208] = blk * D * es;           // K head stride (bytes)
  L.u32[224] = 0;                      // mtp
  L.u32[240] = gqa;
  LaunchConfig cfg;
  cfg.grid = {hk, seqs, 1};
  cfg.block = {256, 1, 1};
  auto out = launchAiter(aiterDir() + file, cfg, L);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<double> got = bf16Values((*out)[0]);
  std::vector<double> ref(got.size());
  for (unsigned s = 0; s < seqs; ++s)
    for (unsigned h = 0; h < hq; ++h) {
      unsigned g = h / gqa;
      std::vector<std::vector<double>> kr, vr;
      for (unsigned t = 0; t < lens[s]; ++t) {
        unsigned B = table[s * mblk + t / blk], j = t % blk;
        size_t base = (((size_t)B * hk + g) * blk + j) * D;
        size_t si = ((size_t)B * hk + g) * blk + j;
        std::vector<double> kk(D), vv(D);
        for (unsigned d = 0; d < D; ++d)
          kk[d] = kl.values[base + d] * ks[si], vv[d] = vl.values[base + d] * vs[si];
        kr.push_back(kk), vr.push_back(vv);
      }
      std::vector<const double *> kp, vp;
      for (unsigned t = 0; t < lens[s]; ++t)
        kp.push_back(kr[t].data()), vp.push_back(vr[t].data());
      size_t qo = ((size_t)s * hq + h) * D;
      attendRow(q.values.data() + qo, kp, vp, scale, D, ref.data() + qo);
    }
  double err = relL2(got, ref);
  std::printf("%s: rel L2 %.3g\n", file, err);
  EXPECT_LT(err, fp8 ? 3e-2 : 1e-2) << file;
}

TEST(AiterKernels, PagedBf16) {
  runPaged("pa_bf16_noquant_gqa8_1tg_4w.co", false);
}
TEST(AiterKernels, PagedFp8PerToken) {
  runPaged("pa_bf16_pertokenFp8_gqa8_2tg_4w.co", true);
}

} // namespace
