//===- uq-kernel-report.cpp - Static and dynamic report of the kernels ----===//
//
// A benchmark, not a test: compiles decode attention for one model shape,
// prints every kernel's resource use (registers, LDS, occupancy) from the
// kernel JSON, then runs one long sequence in the emulator and prints the
// dynamic instruction counts per 64-token tile by class and the global bytes
// read per token per KV head (the floor is the slot size: 136 B at D = 128).
//
//===----------------------------------------------------------------------===//

#include "PrefillReport.h"

#include "uq/Target/EmulatedAttention.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::opt<int64_t> numQHeads("q-heads", cl::init(8));
static cl::opt<int64_t> numKVHeads("kv-heads", cl::init(1));
static cl::opt<int64_t> headDim("head-dim", cl::init(128));
static cl::opt<int64_t> blockSize("block-size", cl::init(16));
static cl::opt<int32_t> seqLen("seq-len", cl::desc("Tokens of the sequence"),
                               cl::init(32768));
static cl::opt<int64_t> partitionSize("partition-size", cl::init(256));
static cl::opt<uq::KVCacheKind> format(
    "format", cl::desc("KV-cache format"),
    cl::values(clEnumValN(uq::KVCacheKind::UltraQuant, "uq4",
                          "UltraQuant FP4 + UE8M0 (default)"),
               clEnumValN(uq::KVCacheKind::FP8, "fp8", "FP8 E4M3, scale 1"),
               clEnumValN(uq::KVCacheKind::BF16, "bf16", "bf16")),
    cl::init(uq::KVCacheKind::UltraQuant));

static cl::opt<bool> prefill(
    "prefill", cl::desc("Report a long prefill (uq.paged_attention) on the "
                        "timing model instead (PrefillReport.cpp)"));
static cl::opt<int64_t> newTokens("new-tokens", cl::init(4096),
                                  cl::desc("--prefill: new query tokens"));
static cl::opt<int64_t> prefixTokens(
    "prefix", cl::init(32768), cl::desc("--prefill: cached prefix tokens"));
static cl::opt<unsigned> samples(
    "samples", cl::init(4),
    cl::desc("--prefill: sampled workgroups per launch"));

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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "uq kernel report\n");
  if (prefill)
    return uq::runPrefillReport({numQHeads, numKVHeads, headDim, blockSize,
                                 partitionSize, newTokens, prefixTokens,
                                 samples});
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
  if (!report) {
    llvm::errs() << "uq-kernel-report: " << llvm::toString(report.takeError())
                 << "\n";
    return 1;
  }
  uq::AttentionProblem wpb = pb;
  wpb.seqLens = {1024};
  wpb.gpuCacheWrite = true;
  auto write = uq::runEmulatedAttention(wpb);
  if (!write) {
    llvm::errs() << "uq-kernel-report: " << llvm::toString(write.takeError())
                 << "\n";
    return 1;
  }

  llvm::outs() << llvm::formatv(
      "uq kernel report: gfx950, {6} KV cache, head_dim {0}, {1} query heads "
      "/ {2} KV heads (GQA {3}), block size {4}, partition {5}\n\n",
      pb.headDim, pb.numQHeads, pb.numKVHeads, pb.numQHeads / pb.numKVHeads,
      pb.blockSize, pb.partitionSize, uq::kvCacheKindName(pb.format));
  auto json = llvm::json::parse(report->kernelsJson);
  if (!json) {
    llvm::errs() << "uq-kernel-report: bad kernel JSON\n";
    return 1;
  }
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
