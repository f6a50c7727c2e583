//===- uq-kernel-report.cpp - Static and dynamic report of the kernels ----===//
//
// A benchmark, not a test: compiles decode attention for one model shape,
// prints every kernel's resource use (registers, LDS, occupancy) from the
// kernel JSON, then runs one long sequence in the emulator and prints the
// dynamic instruction counts per 64-token tile by class and the global bytes
// read per token per KV head (the floor is the slot size: 136 B at D = 128).
//
//===----------------------------------------------------------------------===//

#include "uq/Support/CommandLine.h"
#include "uq/Target/EmulatedAttention.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
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
static cl::opt<int64_t> partitionSize("partition-size",
                                      cl::desc("Split-K partition size"),
                                      cl::init(256), cl::cat(category));
static cl::opt<uq::KVCacheKind> format(
    "format", cl::desc("KV-cache format"),
    cl::values(clEnumValN(uq::KVCacheKind::UltraQuant, "uq4",
                          "UltraQuant FP4 + UE8M0 (default)"),
               clEnumValN(uq::KVCacheKind::FP8, "fp8", "FP8 E4M3, scale 1"),
               clEnumValN(uq::KVCacheKind::BF16, "bf16", "bf16")),
    cl::init(uq::KVCacheKind::UltraQuant), cl::cat(category));

static void printClasses(const uq::emu::Stats &st, double tiles) {
  auto row = [&](const char *name, uint64_t n) {
    llvm::outs() << llvm::formatv("    {0,-22} {1,10:f1}\n", name, n / tiles);
  };
  row("all wave-instructions", st.waveInstructions);
  row("SALU", st.salu);
  row("SMEM", st.smem);
  row("branch", st.branch);
  row("VALU", st.valu);
  row("VALU transcendental", st.valuTrans);
  row("MFMA", st.mfma);
  for (auto &[kind, n] : st.mfmaByKind)
    llvm::outs() << llvm::formatv("      {0,-38} {1,8:f2}\n", kind, n / tiles);
  row("LDS", st.lds);
  row("global memory", st.global);
  row("s_waitcnt", st.waitcnts);
  row("s_nop", st.nops);
  row("barrier", st.barriers);
  row("other", st.other);
}

static int error(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "uq-kernel-report") << msg << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  uq::hideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "uq kernel report\n");
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
  // The cache write is measured on its own below; a 32K-token cache is
  // written by the reference to keep the run short.
  pb.gpuCacheWrite = false;
  auto report = uq::runEmulatedAttention(pb);
  if (!report)
    return error(llvm::toString(report.takeError()));
  uq::AttentionProblem wpb = pb;
  wpb.seqLens = {1024};
  wpb.gpuCacheWrite = true;
  auto write = uq::runEmulatedAttention(wpb);
  if (!write)
    return error(llvm::toString(write.takeError()));

  llvm::outs() << llvm::formatv(
      "uq kernel report: gfx950, {6} KV cache, head_dim {0}, {1} query heads "
      "/ {2} KV heads (GQA {3}), block size {4}, partition {5}\n\n",
      pb.headDim, pb.numQHeads, pb.numKVHeads, pb.numQHeads / pb.numKVHeads,
      pb.blockSize, pb.partitionSize, uq::kvCacheKindName(pb.format));
  auto json = llvm::json::parse(report->kernelsJson);
  if (!json)
    return error("bad kernel JSON: " + llvm::toString(json.takeError()));
  llvm::outs() << "resources (from the code object's metadata):\n";
  llvm::outs() << llvm::formatv("  {0,-22} {1,5} {2,5} {3,5} {4,7} {5,7} "
                                "{6,10} {7,9}\n",
                                "kernel", "VGPR", "AGPR", "SGPR", "LDS B",
                                "scratch", "waves/SIMD", "waves/CU");
  for (auto &k : *json->getAsObject()->getArray("kernels")) {
    auto *o = k.getAsObject();
    auto *occ = o->getObject("occupancy");
    llvm::outs() << llvm::formatv(
        "  {0,-22} {1,5} {2,5} {3,5} {4,7} {5,7} {6,10} {7,9}\n",
        *o->getString("name"), *o->getInteger("vgpr_count"),
        *o->getInteger("agpr_count"), *o->getInteger("sgpr_count"),
        *o->getInteger("group_segment_fixed_size"),
        *o->getInteger("private_segment_fixed_size"),
        *occ->getInteger("waves_per_simd_by_registers"),
        *occ->getInteger("waves_per_cu"));
  }
  const double tokens = seqLen;
  const double tiles = tokens / 64.0;
  llvm::outs() << llvm::formatv(
      "\ndecode partitions over {0} tokens ({1} workgroups): dynamic counts "
      "per 64-token tile (prologue amortised)\n",
      seqLen, report->numPartitions * pb.numKVHeads);
  printClasses(report->partialStats, tiles * pb.numKVHeads);
  double perToken =
      double(report->partialStats.globalBytesRead) / (tokens * pb.numKVHeads);
  // One slot: K and V codes (+ scales).
  double slot = pb.format == uq::KVCacheKind::UltraQuant
                    ? pb.headDim + pb.headDim / 16
                : pb.format == uq::KVCacheKind::FP8 ? 2.0 * pb.headDim
                                                    : 4.0 * pb.headDim;
  llvm::outs() << llvm::formatv(
      "  global bytes read per token per KV head: {0:f1} (floor {1:f0} B = "
      "one slot; {2:f1}x)\n",
      perToken, slot, perToken / slot);
  llvm::outs() << llvm::formatv(
      "  emulated in {0:f2} s; relative L2 error vs reference {1:e2}, {2} "
      "outputs outside the bound\n",
      report->partialStats.seconds, report->relL2, report->outsideBound);
  llvm::outs() << llvm::formatv(
      "\nquery preparation (once per sequence): {0} wave-instructions for {1} "
      "query heads\n",
      report->queryStats.waveInstructions, pb.numQHeads);
  llvm::outs() << llvm::formatv(
      "merge: {0} wave-instructions for {1} partitions x {2} heads\n",
      report->mergeStats.waveInstructions, report->numPartitions, pb.numQHeads);
  const auto &ws = write->writeStats;
  double rows = 2.0 * 1024 * pb.numKVHeads;
  llvm::outs() << llvm::formatv(
      "cache write: {0:f1} wave-instructions per (token, head, K or V) row, "
      "{1:f1} B read and {2:f1} B written per row; {3} cache bytes differ "
      "from the reference\n",
      ws.waveInstructions / rows, ws.globalBytesRead / rows,
      ws.globalBytesWritten / rows, write->cacheMismatches);
  return report->outsideBound == 0 && write->cacheMismatches == 0 ? 0 : 1;
}
