//===- uq-kernel-report.cpp - Static and dynamic report of the kernels ----===//
//
// A benchmark, not a test. The command line of the kernel report library
// (include/uq/KernelReport): this file parses and checks the options and
// calls one mode.
//  - default: one decode configuration's resources and dynamic counts
//    (DecodeReport.h);
//  - --ladder / --quick: predicted decode-step times of the BF16, FP8 and
//    UltraQuant kernels on the gfx950 timing model over head dims, GQA
//    ratios, contexts and batches (Ladder.h, docs/performance.md);
//    --table FILE: the serving simulator's kernel table (docs/serving.md),
//    with prefill points from the prefill kernels (PrefillReport.h);
//  - --prefill: a long prefill on the timing model (PrefillReport.h);
//  - --calibrate: the timing model against AMD's AITER kernels
//    (Calibrate.h, docs/timing-model.md).
//
//===----------------------------------------------------------------------===//

#include "uq/KernelReport/Calibrate.h"
#include "uq/KernelReport/DecodeReport.h"
#include "uq/KernelReport/Ladder.h"
#include "uq/KernelReport/PrefillReport.h"

#include "uq/Support/CommandLine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

// Sorted before LLVM's "Generic Options" (uq/Support/CommandLine.h).
static cl::OptionCategory category("Benchmark problem options "
                                   "(uq-kernel-report)");

static cl::opt<int64_t> numQHeads("q-heads", cl::desc("Query heads"),
                                  cl::init(8), cl::cat(category));
static cl::opt<int64_t> numKVHeads("kv-heads", cl::desc("KV heads"),
                                   cl::init(1), cl::cat(category));
static cl::opt<int64_t> headDim("head-dim", cl::desc("Head dimension"),
                                cl::init(128), cl::cat(category));
static cl::opt<int64_t> blockSize("block-size", cl::desc("Cache block size"),
                                  cl::init(16), cl::cat(category));
static cl::opt<int32_t> seqLen("seq-len", cl::desc("Tokens of the sequence"),
                               cl::init(32768), cl::cat(category));
static cl::opt<int64_t> partitionSize(
    "partition-size",
    cl::desc("Split-K partition size (--prefill; the single-kernel report's "
             "decode uses the partition rule below)"),
    cl::init(256), cl::cat(category));
enum class CacheLayoutOpt { TokenMajor, HeadMajor };
static cl::opt<CacheLayoutOpt> cacheLayout(
    "cache-layout",
    cl::desc("Physical order of the paged cache (--ladder, --table)"),
    cl::values(clEnumValN(CacheLayoutOpt::TokenMajor, "token-major",
                          "[blocks, block_size, KV heads, slot]: vLLM's "
                          "default, #uq.cache_layout<vllm_slot> (default)"),
               clEnumValN(CacheLayoutOpt::HeadMajor, "head-major",
                          "[blocks, KV heads, block_size, slot]: vLLM's "
                          "LBHNC, #uq.cache_layout<head_major>")),
    cl::init(CacheLayoutOpt::TokenMajor), cl::cat(category));
static cl::opt<int64_t> maxPartitionTokens(
    "max-partition-tokens",
    cl::desc("The decode's partition rule: the most tokens per partition "
             "(uq-compile --max-partition-tokens; a multiple of 32)"),
    cl::init(2048), cl::cat(category));
static cl::opt<int64_t> minPartitionTokens(
    "min-partition-tokens",
    cl::desc("The decode's partition rule: the fewest tokens per partition "
             "(uq-compile --min-partition-tokens; a multiple of 32)"),
    cl::init(64), cl::cat(category));
static cl::opt<int64_t> decodeWorkgroups(
    "decode-workgroups",
    cl::desc("The decode's partition rule: partial workgroups a launch aims "
             "at (uq-compile --decode-workgroups)"),
    cl::init(1024), cl::cat(category));
static cl::opt<uq::KVCacheKind> format(
    "format", cl::desc("KV-cache format"),
    cl::values(clEnumValN(uq::KVCacheKind::UltraQuant, "uq4",
                          "UltraQuant FP4 + UE8M0 (default)"),
               clEnumValN(uq::KVCacheKind::FP8, "fp8", "FP8 E4M3, scale 1"),
               clEnumValN(uq::KVCacheKind::BF16, "bf16", "bf16")),
    cl::init(uq::KVCacheKind::UltraQuant), cl::cat(category));
static cl::opt<bool> vScaleE4M3(
    "v-scale-e4m3",
    cl::desc("uq4 values with FP8 E4M3 group scales (scale = e4m3 on the "
             "value format, docs/accuracy.md's vs=e4m3) instead of UE8M0"),
    cl::init(false), cl::cat(category));

static cl::OptionCategory
    ladderCat("Benchmark mode --ladder: decode-step ladder and kernel table "
              "(uq-kernel-report)");
static cl::opt<bool> ladder(
    "ladder",
    cl::desc("Predict decode-step times of the bf16, fp8 and uq4 kernels "
             "(timing model) over the ladder's grid and print the table"),
    cl::cat(ladderCat));
static cl::opt<std::string> tablePath(
    "table",
    cl::desc("Write the serving simulator's kernel table (docs/serving.md): "
             "decode points, and prefill points from the prefill kernels, "
             "to this file"),
    cl::value_desc("FILE"), cl::cat(ladderCat));
static cl::opt<bool> quick(
    "quick",
    cl::desc("A tiny grid (D 128, GQA 4, 2 KV heads, batch 2, context 600; "
             "with --table prefill chunks of 16 and 64 new tokens at "
             "contexts up to 256) for tests"),
    cl::cat(ladderCat));
static cl::opt<std::string> jsonPath(
    "json", cl::desc("--ladder: also write the results as JSON"),
    cl::value_desc("FILE"), cl::cat(ladderCat));
static cl::opt<std::string> plotPath(
    "plot",
    cl::desc("--ladder: also plot time against context (needs --json; runs "
             "tools/uq-kernel-report/plot_ladder.py with matplotlib)"),
    cl::value_desc("PNG"), cl::cat(ladderCat));
static cl::list<std::string> shapesOpt(
    "shapes",
    cl::desc("Compiled shapes HEAD_DIM:GQA:KV_HEADS (default for --ladder: "
             "128:4:8,128:8:8,128:16:8,256:8:8; for --table: "
             "128:4:8,128:6:4,128:8:8,128:16:8,256:2:8,256:8:8)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::list<int64_t> contextsOpt(
    "contexts",
    cl::desc("Tokens per sequence (default for --ladder: 4096,32768,131072; "
             "for --table: 256,1024,4096,16384,32768,65536,131072)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::list<uint64_t> batchesOpt(
    "batches",
    cl::desc("Sequences per step (default for --ladder: 1,16,64; for "
             "--table: 1,2,4,8,16,32,64,128,256,512)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::list<uq::KVCacheKind> formatsOpt(
    "formats",
    cl::desc("--ladder/--table: the formats compiled (default bf16,fp8,uq4; "
             "the ratio columns need uq4 and the other format)"),
    cl::values(clEnumValN(uq::KVCacheKind::BF16, "bf16", "bf16"),
               clEnumValN(uq::KVCacheKind::FP8, "fp8", "FP8 E4M3"),
               clEnumValN(uq::KVCacheKind::UltraQuant, "uq4", "UltraQuant")),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::opt<unsigned> samplesOpt(
    "samples",
    cl::desc("Traced workgroups per group of alike partitions (default 3; "
             "--table's prefill points: strata of the prefill launch)"),
    cl::init(3), cl::cat(ladderCat));
static cl::list<int32_t> checkLensOpt(
    "check-lens",
    cl::desc("--ladder: sequence lengths of the sampled-vs-whole check "
             "(default 4096,4096,1000,77; --quick 600,600,300,17)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::opt<uq::emu::TimingParams::HbmTraffic> hbmTraffic(
    "hbm-traffic",
    cl::desc("--ladder/--table: how the timing model counts a workgroup's "
             "HBM traffic (docs/timing-model.md, \"HBM traffic\")"),
    cl::values(
        clEnumValN(uq::emu::TimingParams::HbmTraffic::Lines, "lines",
                   "every distinct 128-B line it touches, whole (default; "
                   "no reuse across workgroups)"),
        clEnumValN(uq::emu::TimingParams::HbmTraffic::Bytes, "bytes",
                   "the distinct bytes it reads (the rest of a partly read "
                   "line read by a co-resident workgroup in the same "
                   "transfer)")),
    cl::init(uq::emu::TimingParams::HbmTraffic::Lines), cl::cat(ladderCat));
static cl::opt<bool> noPrefill(
    "no-prefill",
    cl::desc("--table: decode entries only (the simulator then needs "
             "--prefill-kernel-model roofline)"),
    cl::cat(ladderCat));
static cl::list<std::string> prefillShapesOpt(
    "prefill-shapes",
    cl::desc("--table: the shapes HEAD_DIM:GQA:KV_HEADS with prefill "
             "entries, each one of the table's shapes (default: all of "
             "them)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::list<int64_t> prefillNewTokensOpt(
    "prefill-new-tokens",
    cl::desc("--table: new tokens of the prefill points' chunks (default "
             "16,1024,8192; --quick 16,64)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::list<int64_t> prefillContextsOpt(
    "prefill-contexts",
    cl::desc("--table: contexts of the prefill points, new tokens included; "
             "each new-token count N also at context N, and at every listed "
             "context above N (default 8192,65536; --quick 256)"),
    cl::CommaSeparated, cl::cat(ladderCat));
static cl::opt<int64_t> prefillDistinctOpt(
    "prefill-distinct-tokens",
    cl::desc("--table: cached tokens drawn and quantized per prefill point; "
             "later tokens repeat their bytes at their own addresses "
             "(timing does not depend on the values; 0: all; default 4096)"),
    cl::init(4096), cl::cat(ladderCat));
static cl::opt<bool> noCheck("no-check",
                             cl::desc("--ladder: skip the sampling check"),
                             cl::cat(ladderCat));

/// Parses HEAD_DIM:GQA:KV_HEADS.
static llvm::Expected<uq::report::LadderShape>
parseShape(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 3> parts;
  text.split(parts, ':');
  uq::report::LadderShape s;
  if (parts.size() != 3 || parts[0].getAsInteger(10, s.headDim) ||
      parts[1].getAsInteger(10, s.gqa) ||
      parts[2].getAsInteger(10, s.kvHeads) || s.headDim <= 0 || s.gqa <= 0 ||
      s.kvHeads <= 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--shapes: expected HEAD_DIM:GQA:KV_HEADS with positive integers, "
        "got '" +
            text + "'");
  return s;
}

static cl::OptionCategory
    prefillCat("Benchmark mode --prefill: a long prefill (uq-kernel-report)");
static cl::opt<bool>
    prefill("prefill",
            cl::desc("Report a long prefill (uq.paged_attention) on the "
                     "timing model instead (PrefillReport.cpp)"),
            cl::cat(prefillCat));
static cl::opt<int64_t> newTokens("new-tokens", cl::init(4096),
                                  cl::desc("--prefill: new query tokens"),
                                  cl::cat(prefillCat));
static cl::opt<int64_t>
    prefixTokens("prefix", cl::init(32768),
                 cl::desc("--prefill: cached prefix tokens"),
                 cl::cat(prefillCat));
static cl::opt<int64_t> prefillWavesOpt(
    "prefill-waves", cl::init(4),
    cl::desc("--prefill: waves per prefill workgroup (1, 2, 4 or 8)"),
    cl::cat(prefillCat));

static cl::opt<int64_t> decodesOpt(
    "decodes", cl::init(0),
    cl::desc("--prefill: one-token sequences over the prefix in the same "
             "batch (a mixed batch)"),
    cl::cat(prefillCat));
static cl::opt<int64_t> partitionsOpt(
    "partitions", cl::init(1),
    cl::desc("--prefill: split-K partitions of the prefill launch (0: "
             "ceil(context / partition size), the host code's rule)"),
    cl::cat(prefillCat));
static cl::opt<int64_t>
    prefillRowsOpt("prefill-rows", cl::init(16),
                   cl::desc("--prefill: MFMA rows per prefill wave (16 or 32)"),
                   cl::cat(prefillCat));
static cl::opt<bool> prefillSharedVOpt(
    "prefill-shared-v", cl::init(true),
    cl::desc("--prefill: convert the FP4 value tile to bf16 once per "
             "workgroup into LDS (default; =false: in every wave; "
             "uq-compile --prefill-shared-v)"),
    cl::cat(prefillCat));
static cl::list<uq::KVCacheKind> prefillFormats(
    "prefill-formats",
    cl::desc("--prefill: the caches to report (default uq4,fp8)"),
    cl::values(clEnumValN(uq::KVCacheKind::UltraQuant, "uq4", "UltraQuant"),
               clEnumValN(uq::KVCacheKind::FP8, "fp8", "FP8 E4M3"),
               clEnumValN(uq::KVCacheKind::BF16, "bf16", "bf16")),
    cl::CommaSeparated, cl::cat(prefillCat));
static cl::opt<int64_t> checkNewTokens(
    "check-new-tokens", cl::init(64),
    cl::desc("--prefill: new tokens of the check's reduced batch (emulated "
             "whole and sampled)"),
    cl::cat(prefillCat));
static cl::opt<int64_t> checkPrefix(
    "check-prefix", cl::init(448),
    cl::desc("--prefill: cached prefix of the check's reduced batch"),
    cl::cat(prefillCat));
static cl::opt<double> checkTolerance(
    "check-tolerance", cl::init(0.1),
    cl::desc("--prefill: largest relative difference of the sampled and the "
             "whole prediction of the check's prefill launch"),
    cl::cat(prefillCat));

static cl::OptionCategory calibrateCat(
    "Benchmark mode --calibrate: the timing model against AMD's measured "
    "kernels (uq-kernel-report)");
// --calibrate (Calibrate.cpp): the timing model against AMD's measured
// AITER kernels.
static cl::opt<bool> calibrate(
    "calibrate",
    cl::desc("Emulate AMD's AITER attention kernels at their published "
             "MI355X shapes and print the timing model's figures next to "
             "the measured ones (docs/timing-model.md, \"Calibration\")"),
    cl::cat(calibrateCat));
static cl::opt<std::string>
    aiterDir("aiter-dir",
             cl::desc("--calibrate: folder of AITER's code objects"),
             cl::init(UQ_DEFAULT_AITER_DIR), cl::value_desc("DIR"),
             cl::cat(calibrateCat));
static cl::opt<unsigned> calibrateSamples(
    "calibrate-samples",
    cl::desc("--calibrate: workgroups traced per launch (default 2)"),
    cl::init(2), cl::cat(calibrateCat));
static cl::opt<bool> calibrateQuick(
    "calibrate-quick",
    cl::desc("--calibrate: one small forward and one small paged launch "
             "(no published figure; for tests)"),
    cl::cat(calibrateCat));
static cl::opt<std::string>
    calibrateJson("calibrate-json",
                  cl::desc("--calibrate: also write the rows as JSON"),
                  cl::value_desc("FILE"), cl::cat(calibrateCat));
static cl::opt<bool> calibrateOverlap(
    "calibrate-overlap",
    cl::desc("--calibrate: let a SIMD's VALU and matrix core overlap (the "
             "model before its calibration, for comparison)"),
    cl::cat(calibrateCat));

static int error(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "uq-kernel-report") << msg << "\n";
  return 1;
}

/// The ladder's or the table's options from the command line (the grid's
/// defaults depend on the mode); a message on stderr and nullopt when one
/// is out of range.
static std::optional<uq::report::LadderOptions> ladderOptions(int argc,
                                                              char **argv) {
  uq::report::LadderOptions o;
  for (int i = 0; i < argc; ++i)
    o.command += (i ? " " : "") + std::string(i ? argv[i] : "uq-kernel-report");
  const bool table = !tablePath.empty();
  std::vector<std::string> shapes(shapesOpt.begin(), shapesOpt.end());
  if (shapes.empty())
    shapes = quick   ? std::vector<std::string>{"128:4:2"}
             : table ? std::vector<std::string>{"128:4:8", "128:6:4",
                                                "128:8:8", "128:16:8",
                                                "256:2:8", "256:8:8"}
                     : std::vector<std::string>{"128:4:8", "128:8:8",
                                                "128:16:8", "256:8:8"};
  for (const std::string &t : shapes) {
    auto s = parseShape(t);
    if (!s) {
      llvm::errs() << "uq-kernel-report: " << llvm::toString(s.takeError())
                   << "\n";
      return std::nullopt;
    }
    o.shapes.push_back(*s);
  }
  o.contexts.assign(contextsOpt.begin(), contextsOpt.end());
  if (o.contexts.empty())
    o.contexts = quick   ? std::vector<int64_t>{600}
                 : table ? std::vector<int64_t>{256, 1024, 4096, 16384, 32768,
                                                65536, 131072}
                         : std::vector<int64_t>{4096, 32768, 131072};
  o.batches.assign(batchesOpt.begin(), batchesOpt.end());
  if (o.batches.empty())
    o.batches = quick   ? std::vector<uint64_t>{2}
                : table ? std::vector<uint64_t>{1, 2, 4, 8, 16, 32, 64, 128,
                                                256, 512}
                        : std::vector<uint64_t>{1, 16, 64};
  for (int64_t c : o.contexts)
    if (c <= 0 || c > (int64_t(1) << 30)) {
      llvm::errs() << "uq-kernel-report: --contexts must be in [1, 2^30], got "
                   << c << "\n";
      return std::nullopt;
    }
  for (uint64_t b : o.batches)
    if (b == 0 || b > (uint64_t(1) << 20)) {
      llvm::errs() << "uq-kernel-report: --batches must be in [1, 2^20], got "
                   << b << "\n";
      return std::nullopt;
    }
  if (samplesOpt == 0) {
    llvm::errs() << "uq-kernel-report: --samples must be >= 1\n";
    return std::nullopt;
  }
  o.samples = samplesOpt;
  if (!formatsOpt.empty()) {
    o.formats.clear();
    for (uq::KVCacheKind f : formatsOpt)
      if (llvm::find(o.formats, f) == o.formats.end())
        o.formats.push_back(f);
  }
  o.blockSize = blockSize;
  o.partitionSize = partitionSize;
  o.maxPartitionTokens = maxPartitionTokens;
  o.minPartitionTokens = minPartitionTokens;
  o.decodeWorkgroups = decodeWorkgroups;
  o.headMajor = cacheLayout == CacheLayoutOpt::HeadMajor;
  o.hbmTraffic = hbmTraffic;
  o.vScaleE4M3 = vScaleE4M3;
  o.jsonPath = jsonPath;
  // The table's prefill entries.
  if (table && !noPrefill) {
    if (prefillShapesOpt.empty())
      o.prefillShapes = o.shapes;
    for (const std::string &t : prefillShapesOpt) {
      auto s = parseShape(t);
      if (!s) {
        llvm::errs() << "uq-kernel-report: --prefill-shapes: "
                     << llvm::toString(s.takeError()) << "\n";
        return std::nullopt;
      }
      o.prefillShapes.push_back(*s);
    }
  }
  o.prefillNewTokens.assign(prefillNewTokensOpt.begin(),
                            prefillNewTokensOpt.end());
  if (o.prefillNewTokens.empty())
    o.prefillNewTokens = quick ? std::vector<int64_t>{16, 64}
                               : std::vector<int64_t>{16, 1024, 8192};
  o.prefillContexts.assign(prefillContextsOpt.begin(),
                           prefillContextsOpt.end());
  if (o.prefillContexts.empty())
    o.prefillContexts = quick ? std::vector<int64_t>{256}
                              : std::vector<int64_t>{8192, 65536};
  for (int64_t n : o.prefillNewTokens)
    if (n < 1 || n > (int64_t(1) << 20)) {
      llvm::errs() << "uq-kernel-report: --prefill-new-tokens must be in [1, "
                      "1048576], got "
                   << n << "\n";
      return std::nullopt;
    }
  for (int64_t c : o.prefillContexts)
    if (c < 1 || c > (int64_t(1) << 24)) {
      llvm::errs() << "uq-kernel-report: --prefill-contexts must be in [1, "
                      "16777216], got "
                   << c << "\n";
      return std::nullopt;
    }
  if (prefillDistinctOpt < 0) {
    llvm::errs() << "uq-kernel-report: --prefill-distinct-tokens must be >= "
                    "0\n";
    return std::nullopt;
  }
  o.prefillDistinctTokens = prefillDistinctOpt;
  return o;
}

/// --plot: plot_ladder.py on the ladder's JSON.
static int plotLadder() {
  std::string python = UQ_PYTHON, script = UQ_PLOT_LADDER;
  llvm::SmallVector<llvm::StringRef, 6> cmd = {python, script, jsonPath, "-o",
                                               plotPath};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(python, cmd, std::nullopt, {}, 0, 0, &msg);
  if (rc != 0) {
    llvm::errs() << "uq-kernel-report: plotting failed (" << python << " "
                 << script << ")" << (msg.empty() ? "" : ": " + msg) << "\n";
    return 1;
  }
  llvm::outs() << "wrote " << plotPath << "\n";
  return 0;
}

/// --ladder, --quick, --table.
static int runLadderOrTable(int argc, char **argv) {
  auto o = ladderOptions(argc, argv);
  if (!o)
    return 1;
  const bool table = !tablePath.empty();
  const bool runsLadder = ladder || (quick && !table);
  if (!table && (noPrefill || !prefillShapesOpt.empty() ||
                 !prefillNewTokensOpt.empty() || !prefillContextsOpt.empty() ||
                 prefillDistinctOpt.getNumOccurrences())) {
    llvm::errs() << "uq-kernel-report: --no-prefill, --prefill-shapes, "
                    "--prefill-new-tokens, --prefill-contexts and "
                    "--prefill-distinct-tokens go with --table\n";
    return 1;
  }
  if (noPrefill && !prefillShapesOpt.empty()) {
    llvm::errs() << "uq-kernel-report: --no-prefill and --prefill-shapes "
                    "exclude each other\n";
    return 1;
  }
  if (!jsonPath.empty() && !runsLadder) {
    llvm::errs() << "uq-kernel-report: --json goes with --ladder (or "
                    "--quick without --table)\n";
    return 1;
  }
  if (!plotPath.empty() && (jsonPath.empty() || !runsLadder)) {
    llvm::errs() << "uq-kernel-report: --plot goes with --ladder (or --quick) "
                    "and --json\n";
    return 1;
  }
  if (!noCheck) {
    o->checkLens.assign(checkLensOpt.begin(), checkLensOpt.end());
    if (o->checkLens.empty())
      o->checkLens = quick ? std::vector<int32_t>{600, 600, 300, 17}
                           : std::vector<int32_t>{4096, 4096, 1000, 77};
    for (int32_t l : o->checkLens)
      if (l < 0) {
        llvm::errs() << "uq-kernel-report: --check-lens must be >= 0\n";
        return 1;
      }
  }
  if (runsLadder) {
    if (llvm::Error e = uq::report::runLadder(*o, llvm::outs())) {
      llvm::errs() << "uq-kernel-report: " << llvm::toString(std::move(e))
                   << "\n";
      return 1;
    }
  }
  if (!plotPath.empty())
    if (int rc = plotLadder())
      return rc;
  if (table) {
    if (ladder)
      llvm::outs() << "\n";
    if (llvm::Error e =
            uq::report::writeKernelTable(*o, tablePath, llvm::outs())) {
      llvm::errs() << "uq-kernel-report: " << llvm::toString(std::move(e))
                   << "\n";
      return 1;
    }
  }
  return 0;
}

/// --calibrate.
static int runCalibrate() {
  if (calibrateSamples == 0 || calibrateSamples > 64)
    return error("--calibrate-samples must be in [1, 64]");
  if (llvm::Error e = uq::report::runCalibration({aiterDir, calibrateSamples,
                                                  calibrateQuick, calibrateJson,
                                                  calibrateOverlap},
                                                 llvm::outs()))
    return error(llvm::toString(std::move(e)));
  return 0;
}

/// --prefill.
static int runPrefill() {
  if (newTokens < 1 || newTokens > (1 << 20) || checkNewTokens < 1 ||
      checkNewTokens > (1 << 20))
    return error("--new-tokens and --check-new-tokens must be in [1, "
                 "1048576]");
  if (prefixTokens < 0 || prefixTokens > (1 << 24) || checkPrefix < 0 ||
      checkPrefix > (1 << 24))
    return error("--prefix and --check-prefix must be in [0, 16777216]");
  if (decodesOpt < 0 || decodesOpt > 4096)
    return error("--decodes must be in [0, 4096]");
  if (partitionsOpt < 0 || partitionsOpt > 4096)
    return error("--partitions must be in [0, 4096]");
  if (!(checkTolerance >= 0))
    return error("--check-tolerance must be >= 0");
  if (samplesOpt.getNumOccurrences() && samplesOpt == 0)
    return error("--samples must be >= 1");
  uq::report::PrefillReportOptions po;
  po.numQHeads = numQHeads;
  po.numKVHeads = numKVHeads;
  po.headDim = headDim;
  po.blockSize = blockSize;
  po.partitionSize = partitionSize;
  po.newTokens = newTokens;
  po.prefix = prefixTokens;
  po.decodes = decodesOpt;
  po.partitions = partitionsOpt;
  // --samples: 4 traced workgroups per launch unless given.
  po.samples = samplesOpt.getNumOccurrences() ? samplesOpt.getValue() : 4u;
  po.prefillWaves = prefillWavesOpt;
  po.prefillRows = prefillRowsOpt;
  po.prefillSharedV = prefillSharedVOpt;
  if (!prefillFormats.empty())
    po.formats.assign(prefillFormats.begin(), prefillFormats.end());
  po.checkNewTokens = checkNewTokens;
  po.checkPrefix = checkPrefix;
  po.checkTolerance = checkTolerance;
  auto ok = uq::report::runPrefillReport(
      po, llvm::outs(), [](const llvm::Twine &msg) {
        llvm::errs() << "uq-kernel-report: " << msg << "\n";
      });
  if (!ok) {
    llvm::errs() << "uq-kernel-report: " << llvm::toString(ok.takeError())
                 << "\n";
    return 1;
  }
  return *ok ? 0 : 1;
}

/// The default mode: one decode configuration.
static int runDecode() {
  // Sizes the harness can hold (finer rules are the IR verifier's, reported
  // as located diagnostics).
  auto inRange = [](int64_t v, int64_t hi) { return v >= 1 && v <= hi; };
  if (!inRange(numQHeads, 4096) || !inRange(numKVHeads, 4096) ||
      !inRange(headDim, 4096) || !inRange(blockSize, 4096) ||
      !inRange(partitionSize, 1 << 20))
    return error("--q-heads, --kv-heads, --head-dim and --block-size must be "
                 "in [1, 4096], --partition-size in [1, 1048576]");
  if (seqLen < 1 || int64_t(seqLen) * numKVHeads * headDim > (int64_t(1) << 26))
    return error("--seq-len must be >= 1 and tokens x KV heads x head dim at "
                 "most 2^26");
  uq::AttentionProblem pb;
  pb.numQHeads = numQHeads;
  pb.numKVHeads = numKVHeads;
  pb.headDim = headDim;
  pb.blockSize = blockSize;
  pb.seqLens = {seqLen};
  pb.partitionSize = partitionSize;
  pb.format = format;
  if (vScaleE4M3 && format != uq::KVCacheKind::UltraQuant)
    return error("--v-scale-e4m3 needs --format=uq4");
  pb.vScaleE4M3 = vScaleE4M3;
  auto ok = uq::report::runDecodeReport(pb, llvm::outs());
  if (!ok)
    return error(llvm::toString(ok.takeError()));
  return *ok ? 0 : 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  uq::hideUnrelatedOptions({&category, &ladderCat, &prefillCat, &calibrateCat});
  cl::ParseCommandLineOptions(
      argc, argv,
      "uq kernel report: a benchmark of uq's gfx950 kernels in the emulator "
      "and on its timing model\n\n"
      "  (default)    one decode configuration: resources and dynamic "
      "instruction counts\n"
      "  --ladder     decode-step times of the bf16, fp8 and uq4 kernels over "
      "a grid (model); --quick: a tiny grid\n"
      "  --table FILE the serving simulator's kernel table: decode and "
      "prefill times (model)\n"
      "  --prefill    a long prefill (model)\n"
      "  --calibrate  the timing model against AMD's measured AITER "
      "kernels\n");
  // Each mode's options go with that mode only.
  if (!calibrate && (calibrateQuick || calibrateOverlap ||
                     calibrateJson.getNumOccurrences() ||
                     calibrateSamples.getNumOccurrences() ||
                     aiterDir.getNumOccurrences()))
    return error("--aiter-dir, --calibrate-samples, --calibrate-quick, "
                 "--calibrate-overlap and --calibrate-json go with "
                 "--calibrate");
  if (calibrate)
    return runCalibrate();
  if (vScaleE4M3 && (!tablePath.empty() || prefill))
    return error("--v-scale-e4m3 goes with the single-kernel report and "
                 "--ladder (not --table or --prefill)");
  if (ladder || quick || !tablePath.empty())
    return runLadderOrTable(argc, argv);
  if (!jsonPath.empty() || !plotPath.empty() || !shapesOpt.empty() || !contextsOpt.empty() ||
      !batchesOpt.empty() || !checkLensOpt.empty() || noCheck) {
    llvm::errs() << "uq-kernel-report: --json, --plot, --shapes, --contexts, "
                    "--batches, --check-lens and --no-check go with --ladder "
                    "or --table\n";
    return 1;
  }
  if (noPrefill || !prefillShapesOpt.empty() || !prefillNewTokensOpt.empty() ||
      !prefillContextsOpt.empty() || prefillDistinctOpt.getNumOccurrences())
    return error("--no-prefill, --prefill-shapes, --prefill-new-tokens, "
                 "--prefill-contexts and --prefill-distinct-tokens go with "
                 "--table");
  if (!prefill &&
      (prefillWavesOpt.getNumOccurrences() ||
       prefillRowsOpt.getNumOccurrences() ||
       prefillSharedVOpt.getNumOccurrences() || newTokens.getNumOccurrences() ||
       partitionsOpt.getNumOccurrences() ||
       prefixTokens.getNumOccurrences() || decodesOpt.getNumOccurrences() ||
       !prefillFormats.empty() || checkNewTokens.getNumOccurrences() ||
       checkPrefix.getNumOccurrences() || checkTolerance.getNumOccurrences()))
    return error("--prefill-waves, --prefill-rows, --prefill-shared-v, "
                 "--new-tokens, --prefix, "
                 "--decodes, --partitions, --prefill-formats and --check-* go "
                 "with --prefill");
  if (prefill)
    return runPrefill();
  return runDecode();
}
