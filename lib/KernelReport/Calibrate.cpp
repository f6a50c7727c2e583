//===- Calibrate.cpp - The timing model against AMD's measured kernels ----===//
//
// uq-kernel-report --calibrate: AITER's gfx950 attention code objects run in
// the emulator at the shapes AMD published MI355X figures for, a few evenly
// spaced workgroups of the real grid traced and scaled to it by the timing
// model (docs/timing-model.md, "Calibration").
//
// Sources of the measured figures:
// - forward, BF16, non-causal, D 128: AITER `op_tests/cpp/mha/README.md`
//   (MI355X TFLOP/s column; copied into $UQ_SHARED_DIR/peers/aiter/README.md),
//   FLOPs = 4 b hq sq sk D;
// - paged attention, `pa_fwd_asm` BF16, 2 KV heads (GQA 8, the kernel's
//   ratio; block 16): AITER pull request 4794 as quoted by the calibration
//   brief (batch 1 / 8K 45.3 us, 32 / 8K 52.6 us, 8 / 32K 180.2 us,
//   32 / 32K 321.1 us).
//
// Memory: the sampled workgroups read only their own tiles, so the buffers
// alias every head and batch entry onto one (strides 0): a row of 13 GB of
// tensors runs in a few MiB. What the timing model counts per workgroup
// (lines, requests, bank conflicts) is the same; the launch's HBM footprint
// is computed here from the true shapes (TimingParams::hbmFootprintBytes).
//
//===----------------------------------------------------------------------===//

#include "uq/KernelReport/Calibrate.h"

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/TimingModel.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace llvm;
namespace emu = uq::emu;
using namespace uq::report;

namespace {

Error fail(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

/// Random bf16 bytes (values in [-1, 1]).
std::vector<uint8_t> randomBf16(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint8_t> b(2 * n);
  for (size_t i = 0; i < n; ++i) {
    float f = u(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t h = (uint16_t)(bits >> 16);
    b[2 * i] = (uint8_t)h;
    b[2 * i + 1] = (uint8_t)(h >> 8);
  }
  return b;
}

std::vector<uint64_t> evenSample(uint64_t total, unsigned n) {
  std::vector<uint64_t> idx;
  if (n >= total) {
    for (uint64_t i = 0; i < total; ++i)
      idx.push_back(i);
    return idx;
  }
  for (uint64_t i = 0; i < n; ++i)
    idx.push_back(i * total / n);
  return idx;
}

struct Row {
  std::string kernel, shape;
  double measured = 0; ///< TFLOP/s (forward) or us (paged); 0: none.
  bool tflops = true;
  emu::LaunchEstimate est;
  double model = 0; ///< Same unit as measured.
  double emulateSeconds = 0;
};

/// Runs `kernel` of `co` on the sampled workgroups and predicts the launch.
Expected<emu::LaunchEstimate>
predict(const emu::CodeObject &co, const emu::LaunchConfig &base,
        std::vector<emu::KernelArg> args, unsigned samples,
        const emu::TimingParams &tp, double &seconds) {
  const emu::KernelInfo &K = co.kernels().at(0);
  emu::Emulator e(co);
  emu::TimingRecorder rec(tp);
  emu::LaunchConfig cfg = base;
  uint64_t total = (uint64_t)cfg.grid[0] * cfg.grid[1] * cfg.grid[2];
  cfg.trace = &rec;
  cfg.workgroupIndices = evenSample(total, samples);
  if (Error err = e.launch(K.name, cfg, args))
    return std::move(err);
  seconds = e.stats().seconds;
  return emu::predictLaunch(K, rec.profiles(), total, {}, 0, tp);
}

/// The forward kernel (fmha_fwd_v3, batch mode) at b, hq, hk, s = sq = sk.
Expected<Row> forwardRow(const emu::CodeObject &co, const std::string &file,
                         unsigned b, unsigned hq, unsigned hk, unsigned s,
                         bool causal, bool fp8, double measured,
                         unsigned samples, bool overlap) {
  const unsigned D = 128, tile = 256, es = fp8 ? 1 : 2;
  std::mt19937 rng(7);
  // Aliased tensors: one [s, D] matrix each (see the file comment).
  std::map<uint32_t, emu::KernelArg> a;
  a[0] = emu::KernelArg::buffer(std::vector<uint8_t>((size_t)s * D * 2));
  auto input = [&] {
    std::vector<uint8_t> v = randomBf16((size_t)s * D, rng);
    if (fp8) // E4M3 bytes: the low bytes of bf16 values in [-1, 1] would
             // include NaNs (0x7f/0xff); small finite codes instead.
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = (uint8_t)(v[i] & 0xb7);
    v.resize((size_t)s * D * es);
    return emu::KernelArg::buffer(std::move(v));
  };
  a[16] = input();
  a[32] = input();
  a[48] = input();
  if (fp8) // per-tensor dequantization scales (strides 0)
    for (uint32_t off : {512u, 528u, 544u})
      a[off] = emu::KernelArg::buffer(std::vector<uint8_t>{0, 0, 0x80, 0x3f});
  auto u32 = [&](uint32_t off, uint32_t v) {
    a[off] = emu::KernelArg::value<uint32_t>(v);
  };
  a[80] = emu::KernelArg::value<float>(1.0f / std::sqrt((float)D));
  u32(96, s);
  u32(112, D * es);        // s_Seqs
  u32(128, tile * D * es); // s_Ts
  u32(144, 0);             // s_Hs (aliased)
  u32(160, 0);             // s_Bs (aliased)
  u32(176, hq / hk);
  u32(192, D * es);
  u32(208, 0);
  u32(224, 0);
  u32(240, causal && hq % 8 ? 3 : 5);
  u32(256, 0); // no LSE
  u32(272, s);
  u32(288, D);
  u32(304, D);
  u32(320, hq);
  u32(336, D * es);
  u32(384, D * 2);
  const emu::KernelInfo &K = co.kernels().at(0);
  auto args = emu::argsByOffset(K, a);
  if (!args)
    return args.takeError();
  unsigned tiles = (s + tile - 1) / tile;
  if (causal)
    tiles = (tiles + 1) / 2;
  emu::LaunchConfig cfg;
  cfg.grid = {tiles, hq, b};
  cfg.block = {512, 1, 1};
  // HBM footprint under an L2 per XCD: workgroup i runs on XCD i % 8; each
  // XCD reads the K and V of the (batch, KV head) pairs its workgroups use
  // once, and every workgroup its own Q tile and O tile.
  emu::TimingParams tp;
  tp.valuMfmaOverlap = overlap;
  uint64_t total = (uint64_t)tiles * hq * b;
  std::vector<std::set<uint64_t>> kv(tp.numXcds);
  for (uint64_t i = 0; i < total; ++i) {
    uint64_t h = (i / tiles) % hq, bb = i / ((uint64_t)tiles * hq);
    kv[i % tp.numXcds].insert(bb * hk + h / (hq / hk));
  }
  double kvBytes = 2.0 * s * D * es; // K and V of one (batch, KV head)
  double foot = 2.0 * b * hq * (double)s * D * es; // Q and O
  for (const auto &x : kv)
    foot += x.size() * kvBytes;
  tp.hbmFootprintBytes = foot;
  Row r;
  r.kernel = file;
  r.shape = formatv("b {0}, {1}/{2} heads, {3} x {3}{4}{5}", b, hq, hk, s,
                    causal ? ", causal" : "", fp8 ? ", FP8" : "")
                .str();
  r.measured = measured;
  auto est = predict(co, cfg, std::move(*args), samples, tp, r.emulateSeconds);
  if (!est)
    return est.takeError();
  r.est = *est;
  double flops = 4.0 * b * hq * (double)s * s * D * (causal ? 0.5 : 1.0);
  r.model = flops / (r.est.totalMicroseconds() * 1e-6) / 1e12;
  return r;
}

/// pa_fwd (BF16 cache, GQA 8) for `batch` sequences of `ctx` tokens.
Expected<Row> pagedRow(const emu::CodeObject &co, const std::string &file,
                       unsigned batch, unsigned hk, unsigned ctx, bool fp8,
                       double measured, unsigned samples, bool overlap) {
  const unsigned D = 128, blk = 16, gqa = 8, hq = gqa * hk, es = fp8 ? 1 : 2;
  const unsigned blocks = (ctx + blk - 1) / blk;
  std::mt19937 rng(11);
  // Every sequence's block table names the same physical blocks (aliased);
  // the blocks are shuffled so that a sequence's blocks are scattered.
  std::vector<int32_t> perm(blocks);
  for (unsigned i = 0; i < blocks; ++i)
    perm[i] = (int32_t)i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<uint8_t> table((size_t)batch * blocks * 4);
  for (unsigned s = 0; s < batch; ++s)
    std::memcpy(table.data() + (size_t)s * blocks * 4, perm.data(),
                (size_t)blocks * 4);
  std::vector<uint8_t> lens((size_t)batch * 4);
  for (unsigned s = 0; s < batch; ++s)
    std::memcpy(lens.data() + 4 * s, &ctx, 4);
  size_t cacheElems = (size_t)blocks * hk * blk * D;
  std::map<uint32_t, emu::KernelArg> a;
  a[0] =
      emu::KernelArg::buffer(std::vector<uint8_t>((size_t)batch * hq * D * 2));
  a[16] = emu::KernelArg::buffer(randomBf16((size_t)batch * hq * D, rng));
  auto cache = [&] {
    std::vector<uint8_t> v = randomBf16(cacheElems, rng);
    if (fp8)
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = (uint8_t)(v[i] & 0xb7);
    v.resize(cacheElems * es);
    return emu::KernelArg::buffer(std::move(v));
  };
  a[32] = cache();
  a[48] = cache();
  if (fp8) { // f32 per-token scales [blocks, hk, 16], all 1
    std::vector<uint8_t> one((size_t)blocks * hk * blk * 4);
    for (size_t i = 0; i < one.size(); i += 4)
      one[i + 2] = 0x80, one[i + 3] = 0x3f;
    a[96] = emu::KernelArg::buffer(one);
    a[112] = emu::KernelArg::buffer(std::move(one));
  }
  a[64] = emu::KernelArg::buffer(std::move(table));
  a[80] = emu::KernelArg::buffer(std::move(lens));
  a[128] = emu::KernelArg::value<float>(
      (float)(1.4426950408889634 / std::sqrt((double)D)));
  auto u32 = [&](uint32_t off, uint32_t v) {
    a[off] = emu::KernelArg::value<uint32_t>(v);
  };
  u32(144, blocks);
  u32(160, hk);
  u32(176, hq * D * 2);
  u32(192, hk * blk * D * es);
  u32(208, blk * D * es);
  u32(224, 0);
  u32(240, gqa);
  const emu::KernelInfo &K = co.kernels().at(0);
  auto args = emu::argsByOffset(K, a);
  if (!args)
    return args.takeError();
  emu::LaunchConfig cfg;
  cfg.grid = {hk, batch, 1};
  cfg.block = {256, 1, 1};
  emu::TimingParams tp;
  tp.valuMfmaOverlap = overlap;
  // No two workgroups share KV blocks: the footprint is the whole cache
  // the batch uses, plus queries, outputs and block tables.
  tp.hbmFootprintBytes = (double)batch * hk * ctx * D * es * 2 +
                         (fp8 ? 8.0 * batch * hk * ctx : 0.0) +
                         2.0 * batch * hq * D * 2 + 4.0 * batch * blocks;
  Row r;
  r.kernel = file;
  r.shape = formatv("batch {0}, {1} tokens, {2}/{3} heads{4}", batch, ctx, hq,
                    hk, fp8 ? ", FP8 cache" : "")
                .str();
  r.measured = measured;
  r.tflops = false;
  auto est = predict(co, cfg, std::move(*args), samples, tp, r.emulateSeconds);
  if (!est)
    return est.takeError();
  r.est = *est;
  r.model = r.est.totalMicroseconds();
  return r;
}

/// Loads AITER's code object \p f from the folder \p dir (ending in '/').
Expected<std::unique_ptr<emu::CodeObject>> loadAiter(const std::string &dir,
                                                     const std::string &f) {
  if (!sys::fs::exists(dir + f))
    return createStringError(inconvertibleErrorCode(),
                             "no AITER code object '" + dir + f +
                                 "' (--aiter-dir names the folder of "
                                 "peers/aiter)");
  return emu::CodeObject::loadFile(dir + f);
}

struct Fwd {
  unsigned b, hq, hk, s;
  double tflops;
};
struct Paged {
  unsigned batch, ctx;
  double us;
};

/// The forward rows against AMD's figures (AITER
/// op_tests/cpp/mha/README.md, MI355X, BF16, non-causal, D 128).
Error forwardTable(const CalibrationOptions &o, const emu::CodeObject &co,
                   const std::vector<Fwd> &fwd, std::vector<Row> &rows,
                   raw_ostream &os) {
  os << "forward attention, fwd_hd128_bf16.co, BF16, non-causal, D 128 "
        "(measured: AITER op_tests/cpp/mha/README.md)\n";
  os << formatv("  {0,5} {1,3} {2,3} {3,6} {4,10} {5,10} {6,6} {7,-14} "
                "{8,-14} {9,9}\n",
                "batch", "hq", "hk", "seqlen", "model TF/s", "measured",
                "ratio", "bound", "estimate", "emulated");
  for (const Fwd &f : fwd) {
    auto r = forwardRow(co, "fwd_hd128_bf16.co", f.b, f.hq, f.hk, f.s, false,
                        false, f.tflops, o.samples, o.valuMfmaOverlap);
    if (!r)
      return fail(toString(r.takeError()));
    os << formatv(
        "  {0,5} {1,3} {2,3} {3,6} {4,10:f1} {5,10} {6,6} "
        "{7,-14} {8,-14} {9,8:f1}s\n",
        f.b, f.hq, f.hk, f.s, r->model,
        f.tflops ? formatv("{0:f1}", f.tflops).str() : std::string("-"),
        f.tflops ? formatv("{0:f2}", r->model / f.tflops).str()
                 : std::string("-"),
        r->est.boundResource, r->est.estimateLimiter, r->emulateSeconds);
    os.flush();
    rows.push_back(std::move(*r));
  }
  return Error::success();
}

/// The paged rows against AMD's figures (AITER pull request 4794:
/// pa_fwd_asm BF16 on MI355X, 2 KV heads).
Error pagedTable(const CalibrationOptions &o, const emu::CodeObject &co,
                 const std::vector<Paged> &paged, std::vector<Row> &rows,
                 raw_ostream &os) {
  os << "\npaged attention, pa_bf16_noquant_gqa8_1tg_4w.co, BF16 cache, "
        "GQA 8, block 16 (measured: AITER pull request 4794)\n";
  os << formatv("  {0,5} {1,3} {2,6} {3,10} {4,10} {5,6} {6,-14} {7,-14} "
                "{8,9}\n",
                "batch", "hk", "ctx", "model us", "measured", "ratio", "bound",
                "estimate", "emulated");
  for (const Paged &p : paged) {
    auto r = pagedRow(co, "pa_bf16_noquant_gqa8_1tg_4w.co", p.batch, 2, p.ctx,
                      false, p.us, o.samples, o.valuMfmaOverlap);
    if (!r)
      return fail(toString(r.takeError()));
    os << formatv(
        "  {0,5} {1,3} {2,6} {3,10:f1} {4,10} {5,6} {6,-14} "
        "{7,-14} {8,8:f1}s\n",
        p.batch, 2, p.ctx, r->model,
        p.us ? formatv("{0:f1}", p.us).str() : std::string("-"),
        p.us ? formatv("{0:f2}", r->model / p.us).str() : std::string("-"),
        r->est.boundResource, r->est.estimateLimiter, r->emulateSeconds);
    os.flush();
    rows.push_back(std::move(*r));
  }
  return Error::success();
}

/// The other AITER code objects: no published MI355X figure for them, so
/// the model's figure is a prediction.
Error predictions(const CalibrationOptions &o, const std::string &dir,
                  std::vector<Row> &rows, raw_ostream &os) {
  os << "\npredictions (no published MI355X figure): b 1, 64/8 heads, "
        "8192 x 8192 forward; batch 32, 8192 tokens, 2 KV heads paged\n";
  struct Pred {
    const char *file;
    bool causal, fp8, paged;
  } preds[] = {{"fwd_hd128_bf16_causal.co", true, false, false},
               {"fwd_hd128_fp8.co", false, true, false},
               {"fwd_hd128_fp8_causal.co", true, true, false},
               {"pa_bf16_pertokenFp8_gqa8_2tg_4w.co", false, true, true}};
  for (const Pred &pr : preds) {
    auto co = loadAiter(dir, pr.file);
    if (!co)
      return fail(toString(co.takeError()));
    auto r = pr.paged ? pagedRow(**co, pr.file, 32, 2, 8192, true, 0, o.samples,
                                 o.valuMfmaOverlap)
                      : forwardRow(**co, pr.file, 1, 64, 8, 8192, pr.causal,
                                   pr.fp8, 0, o.samples, o.valuMfmaOverlap);
    if (!r)
      return fail(toString(r.takeError()));
    os << formatv("  {0,-36} {1,10:f1} {2,-8} bound {3}, estimate "
                  "limited by {4} (model)\n",
                  pr.file, r->model, r->tflops ? "TFLOP/s" : "us",
                  r->est.boundResource, r->est.estimateLimiter);
    os.flush();
    rows.push_back(std::move(*r));
  }
  return Error::success();
}

/// The rows as JSON (CalibrationOptions::jsonPath).
Error writeRowsJson(const std::string &path, const std::vector<Row> &rows) {
  json::Array arr;
  for (const Row &r : rows) {
    json::Object x;
    x["kernel"] = r.kernel;
    x["shape"] = r.shape;
    x["unit"] = r.tflops ? "TFLOP/s" : "us";
    x["model"] = r.model;
    if (r.measured)
      x["measured"] = r.measured, x["ratio"] = r.model / r.measured;
    x["launch"] = r.est.toJSON();
    arr.push_back(std::move(x));
  }
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write '" + path + "': " + ec.message());
  os << formatv("{0:2}", json::Value(std::move(arr))) << "\n";
  return Error::success();
}

} // namespace

Error uq::report::runCalibration(const CalibrationOptions &o, raw_ostream &os) {
  std::string dir = o.aiterDir;
  if (!dir.empty() && dir.back() != '/')
    dir += '/';
  // AITER op_tests/cpp/mha/README.md, MI355X, BF16, non-causal, D 128.
  std::vector<Fwd> fwd = {{1, 32, 8, 1024, 613.48},  {1, 32, 8, 4096, 1177.11},
                          {1, 32, 8, 8192, 1396},    {4, 32, 8, 8192, 1407.46},
                          {8, 32, 8, 8192, 1406.47}, {1, 64, 8, 1024, 1003.73},
                          {1, 64, 8, 2048, 1018.07}, {1, 64, 8, 4096, 1305.83},
                          {1, 64, 8, 8192, 1412.91}, {1, 64, 8, 10240, 1417.43},
                          {4, 64, 8, 8192, 1407.58}, {8, 64, 8, 8192, 1322.77},
                          {1, 64, 4, 8192, 1406.35}};
  // AITER pull request 4794: pa_fwd_asm BF16 on MI355X, 2 KV heads.
  std::vector<Paged> paged = {
      {1, 8192, 45.3}, {32, 8192, 52.6}, {8, 32768, 180.2}, {32, 32768, 321.1}};
  if (o.quick) {
    fwd = {{1, 8, 8, 512, 0}};
    paged = {{2, 256, 0}};
  }
  auto fwdCo = loadAiter(dir, "fwd_hd128_bf16.co");
  if (!fwdCo)
    return fail(toString(fwdCo.takeError()));
  auto paCo = loadAiter(dir, "pa_bf16_noquant_gqa8_1tg_4w.co");
  if (!paCo)
    return fail(toString(paCo.takeError()));

  std::vector<Row> rows;
  os << formatv(
      "timing model vs AMD's published MI355X figures ({0} sampled "
      "workgroups per launch; model figures include the {1:f1} us launch "
      "overhead{2})\n\n",
      o.samples, emu::TimingParams().launchOverheadUs,
      o.valuMfmaOverlap ? "; VALU and MFMA overlapping (not the calibrated "
                          "model)"
                        : "");
  if (Error err = forwardTable(o, **fwdCo, fwd, rows, os))
    return err;
  if (Error err = pagedTable(o, **paCo, paged, rows, os))
    return err;
  if (!o.quick)
    if (Error err = predictions(o, dir, rows, os))
      return err;
  os << "\nratio = model / measured (forward: TFLOP/s, > 1 means the "
        "model is too fast; paged: us, < 1 means too fast). bound: the "
        "busiest resource; estimate: what limits the latency-aware "
        "estimate.\n";
  if (!o.jsonPath.empty())
    return writeRowsJson(o.jsonPath, rows);
  return Error::success();
}
