//===- Ladder.cpp - The kernel ladder and the serving kernel table --------===//

#include "uq/KernelReport/Ladder.h"
#include "uq/KernelReport/PrefillReport.h"

#include "uq/Support/Output.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <cmath>
#include <map>

using namespace uq;
using namespace uq::report;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Short names of the model's resources for the tables.
std::string shortResource(llvm::StringRef r) {
  if (r == "vector memory")
    return "vmem";
  return r.str();
}

KernelConfig configOf(const LadderOptions &o, const LadderShape &s,
                      KVCacheKind f) {
  KernelConfig c;
  c.format = f;
  c.vScaleE4M3 = o.vScaleE4M3 && f == KVCacheKind::UltraQuant;
  c.headDim = s.headDim;
  c.numKVHeads = s.kvHeads;
  c.numQHeads = s.gqa * s.kvHeads;
  c.blockSize = o.blockSize;
  c.partitionSize = o.partitionSize;
  c.maxPartitionTokens = o.maxPartitionTokens;
  c.minPartitionTokens = o.minPartitionTokens;
  c.decodeWorkgroups = o.decodeWorkgroups;
  c.headMajor = o.headMajor;
  c.hbmTraffic = o.hbmTraffic;
  return c;
}

/// Predictors of one shape, one per format, compiled once.
struct ShapeKernels {
  LadderShape shape;
  std::vector<std::unique_ptr<StepPredictor>> byFormat;
};

llvm::Expected<ShapeKernels> compileShape(const LadderOptions &o,
                                          const LadderShape &s,
                                          llvm::raw_ostream &os) {
  ShapeKernels sk;
  sk.shape = s;
  for (KVCacheKind f : o.formats) {
    auto p = StepPredictor::create(configOf(o, s, f));
    if (!p)
      return makeError(llvm::formatv("compiling {0} D={1} GQA={2}: {3}",
                                     formatName(f), s.headDim, s.gqa,
                                     llvm::toString(p.takeError())));
    os << llvm::formatv("  compiled {0,-4} D {1} GQA {2,-2} ({3} KV heads) "
                        "in {4:f1} s; partial kernel: {5}\n",
                        formatName(f), s.headDim, s.gqa, s.kvHeads,
                        (*p)->compileSeconds(),
                        (*p)->resources("decode_0_partial"));
    sk.byFormat.push_back(std::move(*p));
  }
  return sk;
}

llvm::json::Value launchJson(const emu::LaunchEstimate &l,
                             const LaunchSampling &s) {
  llvm::json::Object o;
  o["kernel"] = l.kernel;
  o["workgroups"] = int64_t(s.workgroups);
  o["traced_workgroups"] = int64_t(s.traced);
  o["time_us"] = l.estimateMicroseconds();
  o["bound_us"] = l.boundMicroseconds();
  o["bound_resource"] = l.boundResource;
  o["hbm_bytes"] = l.hbmBytes;
  o["critical_path_cycles"] = l.criticalPathCycles;
  llvm::json::Object c;
  c["valu"] = l.valuCycles;
  c["mfma"] = l.mfmaCycles;
  c["lds"] = l.ldsCycles;
  c["scalar"] = l.scalarCycles;
  c["vector_memory"] = l.vmemCycles;
  c["hbm"] = l.hbmCycles;
  o["busiest_cu_cycles"] = std::move(c);
  o["waves_per_simd"] = l.occ.wavesPerSimd;
  o["workgroups_per_cu"] = l.occ.workgroupsPerCU;
  return o;
}

llvm::json::Value predictionJson(const StepPrediction &p) {
  llvm::json::Object o;
  o["time_us"] = p.step.estimateMicroseconds;
  o["bound_us"] = p.step.boundMicroseconds;
  // The step's busiest resource: that of the launch with the largest bound.
  const emu::LaunchEstimate *big = nullptr;
  for (const auto &l : p.step.launches)
    if (!big || l.boundCycles > big->boundCycles)
      big = &l;
  o["bound_resource"] = big ? big->boundResource : "";
  o["floor_us"] = p.floorMicroseconds;
  o["cache_bytes"] = p.cacheBytes;
  o["partial_hbm_bytes_per_token_head"] = p.partialHbmBytesPerTokenHead;
  llvm::json::Array ls;
  for (size_t i = 0; i < p.step.launches.size(); ++i)
    ls.push_back(launchJson(p.step.launches[i], p.sampling[i]));
  o["launches"] = std::move(ls);
  o["cache_write"] = launchJson(p.cacheWrite, p.sampling.back());
  o["num_partitions"] = int64_t(p.numPartitions);
  o["emulated_s"] = p.emulatedSeconds;
  return o;
}

/// The resource that bounds the launch with the largest bound.
std::string stepResource(const StepPrediction &p) {
  const emu::LaunchEstimate *big = nullptr;
  for (const auto &l : p.step.launches)
    if (!big || l.boundCycles > big->boundCycles)
      big = &l;
  return big ? shortResource(big->boundResource) : "?";
}

const char *kSamplingText =
    "sampling: sequences of equal length are alike, so one emulated sequence "
    "per distinct length stands for all of them; its split-K partitions are "
    "grouped by token count (full, the last partial one, empty) and {0} "
    "workgroups per group are traced (spread over the group's partitions and "
    "the KV heads), each weighted by the workgroups it stands for; all query "
    "workgroups of the emulated sequence and 2 merge workgroups are traced; "
    "the cache blocks come from a pool of at most 256 distinct blocks (each "
    "16-block partition reads distinct blocks)";

/// The sampled-vs-whole check on the first shape.
llvm::Expected<llvm::json::Value> checkSampling(const LadderOptions &o,
                                                const ShapeKernels &sk,
                                                llvm::raw_ostream &os) {
  std::string lens;
  for (int32_t l : o.checkLens)
    lens += (lens.empty() ? "" : ",") + std::to_string(l);
  os << llvm::formatv(
      "\nsampling check: D {0}, GQA {1}, {2} KV heads, a batch of lengths "
      "{3}: every workgroup emulated (output checked against the reference) "
      "vs the sampled prediction\n",
      sk.shape.headDim, sk.shape.gqa, sk.shape.kvHeads, lens);
  os << llvm::formatv("  {0,-5} {1,-9} {2,10} {3,10} {4,8} {5,10} {6,10} "
                      "{7,8} {8,8}\n",
                      "fmt", "launch", "whole us", "sampled", "diff",
                      "whole bnd", "sampled", "diff", "traced");
  llvm::json::Array out;
  for (size_t fi = 0; fi < o.formats.size(); ++fi) {
    const StepPredictor &sp = *sk.byFormat[fi];
    auto whole = sp.predict(o.checkLens, /*sample=*/false);
    if (!whole)
      return whole.takeError();
    auto smp = sp.predict(o.checkLens, /*sample=*/true, o.samples);
    if (!smp)
      return smp.takeError();
    auto rel = [](double a, double b) {
      return a == 0 ? (b == 0 ? 0.0 : 1.0) : (b - a) / a;
    };
    llvm::json::Array rows;
    double worst = 0;
    auto row = [&](llvm::StringRef name, double we, double se, double wb,
                   double sb, std::string traced) {
      os << llvm::formatv("  {0,-5} {1,-9} {2,10:f3} {3,10:f3} {4,7:f2}% "
                          "{5,10:f3} {6,10:f3} {7,7:f2}% {8,8}\n",
                          formatName(o.formats[fi]), name, we, se,
                          100 * rel(we, se), wb, sb, 100 * rel(wb, sb), traced);
      worst = std::max({worst, std::fabs(rel(we, se)), std::fabs(rel(wb, sb))});
      rows.push_back(llvm::json::Object{{"launch", name.str()},
                                        {"whole_time_us", we},
                                        {"sampled_time_us", se},
                                        {"whole_bound_us", wb},
                                        {"sampled_bound_us", sb}});
    };
    for (size_t i = 0; i < whole->step.launches.size(); ++i) {
      const auto &w = whole->step.launches[i], &s = smp->step.launches[i];
      llvm::StringRef name = llvm::StringRef(w.kernel).rsplit('_').second;
      row(name, w.estimateMicroseconds(), s.estimateMicroseconds(),
          w.boundMicroseconds(), s.boundMicroseconds(),
          llvm::formatv("{0}/{1}", smp->sampling[i].traced,
                        whole->sampling[i].traced)
              .str());
    }
    row("step", whole->step.estimateMicroseconds,
        smp->step.estimateMicroseconds, whole->step.boundMicroseconds,
        smp->step.boundMicroseconds, "");
    os << llvm::formatv("  {0,-5} whole step emulated in {1:f2} s (output vs "
                        "reference: relative L2 {2:e2}), sampled in {3:f2} "
                        "s\n",
                        formatName(o.formats[fi]), whole->emulatedSeconds,
                        whole->relL2, smp->emulatedSeconds);
    out.push_back(
        llvm::json::Object{{"format", formatName(o.formats[fi])},
                           {"rows", std::move(rows)},
                           {"largest_relative_difference", worst},
                           {"whole_emulated_s", whole->emulatedSeconds},
                           {"sampled_emulated_s", smp->emulatedSeconds},
                           {"whole_output_rel_l2", whole->relL2}});
  }
  return llvm::json::Value(
      llvm::json::Object{{"head_dim", sk.shape.headDim},
                         {"gqa", sk.shape.gqa},
                         {"kv_heads", sk.shape.kvHeads},
                         {"seq_lens", llvm::json::Array(o.checkLens)},
                         {"formats", std::move(out)}});
}

int64_t indexOf(const std::vector<KVCacheKind> &fs, KVCacheKind k) {
  for (size_t i = 0; i < fs.size(); ++i)
    if (fs[i] == k)
      return i;
  return -1;
}

llvm::Error writeJson(llvm::StringRef path, llvm::json::Value v) {
  // Whole or not at all; a failed write is an error, not LLVM's fatal one.
  std::string text = llvm::formatv("{0:1}", v).str() + "\n";
  return uq::writeOutputFile(path, text, /*text=*/true);
}

/// Prints the ladder's header (the model, the kernels, the HBM floor, the
/// sampling, how HBM traffic is counted) and returns the JSON document's
/// matching fields.
llvm::json::Object ladderHeader(const LadderOptions &o, llvm::raw_ostream &os) {
  const auto tp = emu::TimingParams::gfx950();
  os << "uq kernel ladder: predicted decode-attention time per step of ONE "
        "layer (query + partial + merge launches over all KV heads of the "
        "layer), gfx950 timing model: absolute microseconds are a MODEL "
        "(docs/timing-model.md), not a measurement\n";
  os << "command: " << o.command << "\n";
  os << llvm::formatv(
      "kernels: compiled once per (format, head dim, GQA) by uq with "
      "run-time sizes (convert-uq-to-wave -> lane layouts -> ROCDL -> gfx950), "
      "reused for every batch and context; block size {0}, partitions per "
      "launch by the compiler's rule (at most {1} tokens, at least {3}, "
      "aiming at {4} partial workgroups; one partition: the single-pass "
      "kernel, no merge), {5} cache layout, bf16 queries, f32 "
      "output{2}\n",
      o.blockSize, o.maxPartitionTokens,
      o.vScaleE4M3 ? "; uq4 values with E4M3 group scales (--v-scale-e4m3)"
                   : "",
      o.minPartitionTokens, o.decodeWorkgroups,
      o.headMajor ? "head-major ([blocks, KV heads, block_size, slot])"
                  : "token-major ([blocks, block_size, KV heads, slot])");
  os << llvm::formatv(
      "HBM floor: the step's KV-cache bytes (tokens x KV heads x slot bytes; "
      "at D=128: bf16 512, fp8 256, uq4 136) / {0} TB/s, the model's "
      "achievable HBM bandwidth ({1} TB/s peak)\n",
      tp.hbmAchievableTBs, tp.hbmPeakTBs);
  os << llvm::formatv(kSamplingText, o.samples) << "\n";
  const bool byBytes = o.hbmTraffic == emu::TimingParams::HbmTraffic::Bytes;
  const char *trafficText =
      byBytes ? "HBM traffic: distinct bytes per workgroup (--hbm-traffic="
                "bytes: the rest of a partly read line is read by a "
                "co-resident workgroup in the same transfer; the optimistic "
                "end)"
              : "HBM traffic: distinct 128-B lines per workgroup "
                "(--hbm-traffic=lines: no reuse across workgroups; the "
                "pessimistic end)";
  os << trafficText << "\n";

  llvm::json::Object doc;
  doc["hbm_traffic"] = byBytes ? "bytes" : "lines";
  doc["uq4_value_scales"] = o.vScaleE4M3 ? "e4m3" : "ue8m0";
  doc["tool"] = "uq-kernel-report --ladder";
  doc["command"] = o.command;
  doc["note"] = "gfx950 timing model (docs/timing-model.md): absolute times "
                "are a model; per step of one layer: query + partial + merge";
  doc["hbm_achievable_tb_s"] = tp.hbmAchievableTBs;
  doc["block_size"] = o.blockSize;
  doc["partition_size"] = o.partitionSize;
  doc["max_partition_tokens"] = o.maxPartitionTokens;
  doc["min_partition_tokens"] = o.minPartitionTokens;
  doc["decode_workgroups"] = o.decodeWorkgroups;
  doc["cache_layout"] = o.headMajor ? "head-major" : "token-major";
  doc["sampling"] = llvm::formatv(kSamplingText, o.samples).str();

  return doc;
}

/// One shape's table: per context and batch, each format's step time,
/// bound and busiest resource, the HBM floors and the ratios, then the
/// per-launch breakdown; returns the shape's JSON. Adds the host seconds of
/// emulation and the points to \p emuSeconds and \p points.
llvm::Expected<llvm::json::Value>
shapeTable(const LadderOptions &o, const ShapeKernels &sk, bool byBytes,
           double &emuSeconds, size_t &points, llvm::raw_ostream &os) {
  const int64_t iB = indexOf(o.formats, KVCacheKind::BF16),
                iF = indexOf(o.formats, KVCacheKind::FP8),
                iU = indexOf(o.formats, KVCacheKind::UltraQuant);
  const LadderShape &s = sk.shape;
  os << llvm::formatv("\n== D {0}, GQA {1}: {2} query heads / {3} KV heads, "
                      "one layer; times in us (model) ==\n",
                      s.headDim, s.gqa, s.gqa * s.kvHeads, s.kvHeads);
  std::string head = llvm::formatv("{0,5} {1,7} |", "batch", "context");
  for (KVCacheKind f : o.formats)
    head += llvm::formatv(" {0,9} {1,9} {2,-6}|",
                          std::string(formatName(f)) + "_us", "bound", "busy");
  head += " floor:";
  for (KVCacheKind f : o.formats)
    head += llvm::formatv(" {0,8}", formatName(f));
  head += " |";
  if (iU >= 0 && iF >= 0)
    head += llvm::formatv(" {0,7}", "UQ/FP8");
  if (iU >= 0 && iB >= 0)
    head += llvm::formatv(" {0,7}", "UQ/BF16");
  os << head << "\n";
  // [context][format] -> predictions per batch.
  llvm::json::Array rowsJson;
  std::vector<std::string> breakdown;
  for (int64_t ctx : o.contexts) {
    std::vector<std::vector<StepPrediction>> byFormat;
    for (const auto &sp : sk.byFormat) {
      auto preds = sp->predictUniform(int32_t(ctx), o.batches, o.samples);
      if (!preds)
        return preds.takeError();
      emuSeconds += preds->front().emulatedSeconds;
      byFormat.push_back(std::move(*preds));
    }
    for (size_t bi = 0; bi < o.batches.size(); ++bi) {
      ++points;
      std::string line = llvm::formatv("{0,5} {1,7} |", o.batches[bi], ctx);
      llvm::json::Object pj;
      pj["batch"] = int64_t(o.batches[bi]);
      pj["context"] = ctx;
      for (size_t fi = 0; fi < o.formats.size(); ++fi) {
        const StepPrediction &p = byFormat[fi][bi];
        line += llvm::formatv(" {0,9:f2} {1,9:f2} {2,-6}|",
                              p.step.estimateMicroseconds,
                              p.step.boundMicroseconds, stepResource(p));
        pj[formatName(o.formats[fi])] = predictionJson(p);
        std::string b = llvm::formatv("  {0,5} {1,7} {2,-4}", o.batches[bi],
                                      ctx, formatName(o.formats[fi]));
        for (const auto &l : p.step.launches)
          b += llvm::formatv(" | {0,-7} {1,9:f2} ({2,8:f2} {3,-6})",
                             llvm::StringRef(l.kernel).rsplit('_').second,
                             l.estimateMicroseconds(), l.boundMicroseconds(),
                             shortResource(l.boundResource));
        b += llvm::formatv(" | HBM {0:f0} B/token/head | P {1}",
                           p.partialHbmBytesPerTokenHead, p.numPartitions);
        breakdown.push_back(b);
      }
      line += "       ";
      for (size_t fi = 0; fi < o.formats.size(); ++fi)
        line += llvm::formatv(" {0,8:f2}", byFormat[fi][bi].floorMicroseconds);
      line += " |";
      if (iU >= 0 && iF >= 0) {
        double r = byFormat[iU][bi].step.estimateMicroseconds /
                   byFormat[iF][bi].step.estimateMicroseconds;
        line += llvm::formatv(" {0,7:f3}", r);
        pj["uq_over_fp8"] = r;
      }
      if (iU >= 0 && iB >= 0) {
        double r = byFormat[iU][bi].step.estimateMicroseconds /
                   byFormat[iB][bi].step.estimateMicroseconds;
        line += llvm::formatv(" {0,7:f3}", r);
        pj["uq_over_bf16"] = r;
      }
      os << line << "\n";
      rowsJson.push_back(std::move(pj));
    }
  }
  os << "  per launch: time us (bound us, busiest resource); partial HBM "
        "bytes per token per KV head as the model counts them ("
     << (byBytes ? "distinct bytes" : "128-B lines") << ")\n";
  for (const std::string &b : breakdown)
    os << b << "\n";
  llvm::json::Object sj;
  sj["head_dim"] = s.headDim;
  sj["gqa"] = s.gqa;
  sj["q_heads"] = s.gqa * s.kvHeads;
  sj["kv_heads"] = s.kvHeads;
  llvm::json::Object res;
  for (size_t fi = 0; fi < o.formats.size(); ++fi) {
    const StepPredictor &sp = *sk.byFormat[fi];
    res[formatName(o.formats[fi])] =
        llvm::json::Object{{"compile_s", sp.compileSeconds()},
                           {"slot_bytes", sp.slotBytes()},
                           {"partial", sp.resources("decode_0_partial")},
                           {"merge", sp.resources("decode_0_merge")},
                           {"query", sp.resources("decode_0_query")}};
  }
  sj["kernels"] = std::move(res);
  sj["points"] = std::move(rowsJson);
  return llvm::json::Value(std::move(sj));
}

} // namespace

llvm::Error uq::report::runLadder(const LadderOptions &o,
                                  llvm::raw_ostream &os) {
  const double t0 = now();
  if (o.shapes.empty() || o.contexts.empty() || o.batches.empty())
    return makeError("the ladder needs shapes, contexts and batches");
  const bool byBytes = o.hbmTraffic == emu::TimingParams::HbmTraffic::Bytes;
  llvm::json::Object doc = ladderHeader(o, os);

  os << "\ncompiling:\n";
  std::vector<ShapeKernels> shapes;
  double compileSeconds = 0;
  for (const LadderShape &s : o.shapes) {
    auto sk = compileShape(o, s, os);
    if (!sk)
      return sk.takeError();
    for (auto &p : sk->byFormat)
      compileSeconds += p->compileSeconds();
    shapes.push_back(std::move(*sk));
  }

  if (!o.checkLens.empty()) {
    auto chk = checkSampling(o, shapes.front(), os);
    if (!chk)
      return chk.takeError();
    doc["sampling_check"] = std::move(*chk);
  }

  llvm::json::Array shapesJson;
  double emuSeconds = 0;
  size_t points = 0;
  for (const ShapeKernels &sk : shapes) {
    auto sj = shapeTable(o, sk, byBytes, emuSeconds, points, os);
    if (!sj)
      return sj.takeError();
    shapesJson.push_back(std::move(*sj));
  }
  doc["shapes"] = std::move(shapesJson);
  const double total = now() - t0;
  doc["seconds"] = llvm::json::Object{{"compile", compileSeconds},
                                      {"emulate_points", emuSeconds},
                                      {"total", total}};
  os << llvm::formatv("\nladder: {0} kernels compiled in {1:f1} s, {2} points "
                      "({3:f1} s of emulation), {4:f1} s in all\n",
                      shapes.size() * o.formats.size(), compileSeconds, points,
                      emuSeconds, total);
  if (!o.jsonPath.empty()) {
    if (llvm::Error e =
            writeJson(o.jsonPath, llvm::json::Value(std::move(doc))))
      return e;
    os << "wrote " << o.jsonPath << "\n";
  }
  return llvm::Error::success();
}

llvm::Error uq::report::writeKernelTable(const LadderOptions &o,
                                         llvm::StringRef path,
                                         llvm::raw_ostream &os) {
  const double t0 = now();
  if (o.shapes.empty() || o.contexts.empty() || o.batches.empty())
    return makeError("the table needs shapes, contexts and batches");
  // One table entry per (format, head dim, GQA): the simulator
  // interpolates on batch x KV heads, so one KV-head count per entry.
  std::map<std::pair<int64_t, int64_t>, int64_t> seen;
  for (const LadderShape &s : o.shapes)
    if (!seen.emplace(std::make_pair(s.headDim, s.gqa), s.kvHeads).second)
      return makeError(llvm::formatv("the table has one entry per head dim "
                                     "and GQA: D {0} GQA {1} is given twice",
                                     s.headDim, s.gqa));
  for (const LadderShape &p : o.prefillShapes)
    if (llvm::none_of(o.shapes, [&](const LadderShape &s) {
          return s.headDim == p.headDim && s.gqa == p.gqa &&
                 s.kvHeads == p.kvHeads;
        }))
      return makeError(llvm::formatv("the prefill shape {0}:{1}:{2} is not "
                                     "one of the table's shapes",
                                     p.headDim, p.gqa, p.kvHeads));
  if (!o.prefillShapes.empty() &&
      (o.prefillNewTokens.empty() || o.prefillContexts.empty()))
    return makeError("prefill entries need new-token counts and contexts");
  // The prefill predictions use the token-major cache and the timing
  // model's default HBM counting (PagedAttention.cpp).
  if (!o.prefillShapes.empty() &&
      (o.headMajor || o.hbmTraffic != emu::TimingParams::HbmTraffic::Lines))
    return makeError("not implemented: prefill entries with a head-major "
                     "cache or --hbm-traffic=bytes (pass --no-prefill for a "
                     "decode-only table)");
  const auto tp = emu::TimingParams::gfx950();
  os << "uq kernel table: decode- and prefill-attention times of one layer "
        "for the serving simulator (gfx950 timing model; absolute times are "
        "a MODEL)\n"
     << "command: " << o.command << "\n"
     << "a decode point's time_us = query + partial + merge + the cache "
        "write of the step's new tokens (estimates); bound_us the same sum of "
        "lower bounds\n";
  if (o.prefillShapes.empty())
    os << "prefill: none (the simulator's prefill needs a table with prefill "
          "entries, or its roofline when asked)\n";
  else
    os << "a prefill point's time_us = query + prefill + merge of one "
          "uq.paged_attention call of one chunk (estimates; the chunk's cache "
          "write is not in it)\n";
  os << llvm::formatv(kSamplingText, o.samples) << "\n";
  llvm::json::Array kernels;
  double compileSeconds = 0;
  // Prefill first (a kernel that cannot run stops the tool before the
  // decode grid's minutes): one entry per (prefill shape, format).
  PrefillReportOptions po;
  po.blockSize = o.blockSize;
  po.partitionSize = o.partitionSize;
  po.samples = o.samples;
  po.decodes = 0;
  po.partitions = 1;
  po.distinctTokens = o.prefillDistinctTokens;
  size_t prefillPoints = 0;
  llvm::json::Array prefillKernels;
  for (const LadderShape &s : o.prefillShapes) {
    std::vector<std::pair<int64_t, int64_t>> chunks;
    for (int64_t n : o.prefillNewTokens) {
      chunks.push_back({n, n});
      for (int64_t c : o.prefillContexts)
        if (c > n)
          chunks.push_back({n, c});
    }
    po.numQHeads = s.gqa * s.kvHeads;
    po.numKVHeads = s.kvHeads;
    po.headDim = s.headDim;
    for (KVCacheKind f : o.formats) {
      const double tf = now();
      double cs = 0;
      auto pts = predictPrefillChunks(po, f, chunks, &cs);
      if (!pts)
        return makeError(llvm::formatv("prefill {0} D={1} GQA={2}: {3}",
                                       formatName(f), s.headDim, s.gqa,
                                       llvm::toString(pts.takeError())));
      compileSeconds += cs;
      llvm::json::Array arr;
      for (const PrefillChunkTiming &c : *pts) {
        ++prefillPoints;
        const PagedAttentionTiming &t = c.timing;
        arr.push_back(llvm::json::Object{
            {"batch", 1},
            {"kv_heads", s.kvHeads},
            {"context", c.context},
            {"query_len", c.newTokens},
            {"time_us", t.totalUs},
            {"query_us", t.queryUs},
            {"prefill_us", t.prefillUs},
            {"merge_us", t.mergeUs},
            {"prefill_bound_us", t.prefillBoundUs},
            {"bound_resource", t.prefillBoundResource}});
      }
      os << llvm::formatv("  prefill {0,-4} D {1} GQA {2,-2} ({3} KV heads): "
                          "{4} points in {5:f1} s (compiled in {6:f1} s, "
                          "checked)\n",
                          formatName(f), s.headDim, s.gqa, s.kvHeads,
                          pts->size(), now() - tf, cs);
      prefillKernels.push_back(llvm::json::Object{
          {"format", formatName(f)},
          {"phase", "prefill"},
          {"head_dim", s.headDim},
          {"gqa", s.gqa},
          {"block_size", o.blockSize},
          {"partitions", po.partitions},
          {"prefill_waves", po.prefillWaves},
          {"prefill_rows", po.prefillRows},
          {"prefill_shared_v", po.prefillSharedV},
          {"cache_layout", "token-major"},
          {"points", std::move(arr)}});
    }
  }
  size_t points = 0;
  for (const LadderShape &s : o.shapes) {
    auto sk = compileShape(o, s, os);
    if (!sk)
      return sk.takeError();
    for (size_t fi = 0; fi < o.formats.size(); ++fi) {
      const StepPredictor &sp = *sk->byFormat[fi];
      compileSeconds += sp.compileSeconds();
      llvm::json::Array pts;
      for (int64_t ctx : o.contexts) {
        auto preds = sp.predictUniform(int32_t(ctx), o.batches, o.samples);
        if (!preds)
          return preds.takeError();
        for (size_t bi = 0; bi < o.batches.size(); ++bi) {
          const StepPrediction &p = (*preds)[bi];
          ++points;
          pts.push_back(llvm::json::Object{
              {"batch", int64_t(o.batches[bi])},
              {"kv_heads", s.kvHeads},
              {"context", ctx},
              {"query_len", 1},
              {"time_us", p.step.estimateMicroseconds +
                              p.cacheWrite.estimateMicroseconds()},
              {"bound_us",
               p.step.boundMicroseconds + p.cacheWrite.boundMicroseconds()},
              {"attention_us", p.step.estimateMicroseconds},
              {"cache_write_us", p.cacheWrite.estimateMicroseconds()},
              {"bound_resource", stepResource(p)}});
        }
      }
      kernels.push_back(llvm::json::Object{
          {"format", formatName(o.formats[fi])},
          {"phase", "decode"},
          {"head_dim", s.headDim},
          {"gqa", s.gqa},
          {"block_size", o.blockSize},
          {"partition_size", o.partitionSize},
          {"cache_layout", o.headMajor ? "head-major" : "token-major"},
          {"points", std::move(pts)}});
    }
  }
  llvm::json::Object doc;
  doc["source"] = "uq-kernel-report --table (gfx950 timing model; absolute "
                  "times are a model)";
  doc["command"] = o.command;
  doc["hardware"] = llvm::json::Object{{"name", "MI355X"},
                                       {"cus", int64_t(tp.numCUs)},
                                       {"clock_ghz", tp.clockGHz},
                                       {"hbm_tb_s", tp.hbmPeakTBs}};
  doc["phases"] = llvm::json::Object{
      {"decode", "timing model of uq's compiled decode kernels"},
      {"prefill",
       o.prefillShapes.empty()
           ? "not in this table"
           : "timing model of uq's compiled uq.paged_attention prefill "
             "kernels (one chunk per call, one split-K partition; query + "
             "prefill + merge launches)"}};
  doc["sampling"] = llvm::formatv(kSamplingText, o.samples).str();
  if (!o.prefillShapes.empty())
    doc["prefill_sampling"] =
        llvm::formatv(
            "each prefill point as uq-kernel-report --prefill predicts it "
            "(CompiledPagedAttention::predict): the prefill launch's "
            "workgroups with keys in {0} strata by key count, each traced "
            "at its midpoint and spread over the KV heads, plus one without "
            "keys; the query and merge launches' rows in {0} strata; the "
            "cache drawn for the first {1} tokens (0: all), later tokens "
            "repeating their bytes; after a whole-vs-sampled check of a "
            "reduced chunk",
            o.samples, o.prefillDistinctTokens)
            .str();
  for (llvm::json::Value &k : prefillKernels)
    kernels.push_back(std::move(k));
  doc["kernels"] = std::move(kernels);
  if (llvm::Error e = writeJson(path, llvm::json::Value(std::move(doc))))
    return e;
  os << llvm::formatv("wrote {0}: {1} decode and {2} prefill points, "
                      "compiled in {3:f1} s, {4:f1} s in all\n",
                      path, points, prefillPoints, compileSeconds, now() - t0);
  return llvm::Error::success();
}
