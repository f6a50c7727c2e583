//===- DecodeReport.cpp - The single-kernel report ------------------------===//
//
// A benchmark, not a test: the figures come from one emulated run (the
// dynamic counts are exact for that run; the resources are the code
// object's metadata).
//
//===----------------------------------------------------------------------===//

#include "uq/KernelReport/DecodeReport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace uq;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Dynamic instruction counts by class, per tile.
void printClasses(llvm::raw_ostream &os, const emu::Stats &st, double tiles) {
  auto row = [&](const char *name, uint64_t n) {
    os << llvm::formatv("    {0,-22} {1,10:f1}\n", name, n / tiles);
  };
  row("all wave-instructions", st.waveInstructions);
  row("SALU", st.salu);
  row("SMEM", st.smem);
  row("branch", st.branch);
  row("VALU", st.valu);
  row("VALU transcendental", st.valuTrans);
  row("MFMA", st.mfma);
  for (auto &[kind, n] : st.mfmaByKind)
    os << llvm::formatv("      {0,-38} {1,8:f2}\n", kind, n / tiles);
  row("LDS", st.lds);
  row("global memory", st.global);
  row("s_waitcnt", st.waitcnts);
  row("s_nop", st.nops);
  row("barrier", st.barriers);
  row("other", st.other);
}

/// Every kernel's registers, LDS, scratch and occupancy from the JSON.
llvm::Error printResources(llvm::raw_ostream &os,
                           const std::string &kernelsJson) {
  auto json = llvm::json::parse(kernelsJson);
  if (!json)
    return makeError("bad kernel JSON: " + llvm::toString(json.takeError()));
  os << "resources (from the code object's metadata):\n";
  os << llvm::formatv("  {0,-22} {1,5} {2,5} {3,5} {4,7} {5,7} "
                      "{6,10} {7,9}\n",
                      "kernel", "VGPR", "AGPR", "SGPR", "LDS B", "scratch",
                      "waves/SIMD", "waves/CU");
  for (auto &k : *json->getAsObject()->getArray("kernels")) {
    auto *o = k.getAsObject();
    auto *occ = o->getObject("occupancy");
    os << llvm::formatv(
        "  {0,-22} {1,5} {2,5} {3,5} {4,7} {5,7} {6,10} {7,9}\n",
        *o->getString("name"), *o->getInteger("vgpr_count"),
        *o->getInteger("agpr_count"), *o->getInteger("sgpr_count"),
        *o->getInteger("group_segment_fixed_size"),
        *o->getInteger("private_segment_fixed_size"),
        *occ->getInteger("waves_per_simd_by_registers"),
        *occ->getInteger("waves_per_cu"));
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<bool> uq::report::runDecodeReport(const AttentionProblem &in,
                                                 llvm::raw_ostream &os) {
  if (in.seqLens.size() != 1)
    return makeError("the decode report runs one sequence");
  AttentionProblem pb = in;
  // The cache write is measured on its own below; a 32K-token cache is
  // written by the reference to keep the run short.
  pb.gpuCacheWrite = false;
  auto report = runEmulatedAttention(pb);
  if (!report)
    return report.takeError();
  AttentionProblem wpb = pb;
  wpb.seqLens = {1024};
  wpb.gpuCacheWrite = true;
  auto write = runEmulatedAttention(wpb);
  if (!write)
    return write.takeError();

  os << llvm::formatv(
      "uq kernel report: gfx950, {6}{7} KV cache, head_dim {0}, {1} query "
      "heads / {2} KV heads (GQA {3}), block size {4}, partition {5}\n\n",
      pb.headDim, pb.numQHeads, pb.numKVHeads, pb.numQHeads / pb.numKVHeads,
      pb.blockSize, pb.partitionSize, kvCacheKindName(pb.format),
      pb.vScaleE4M3 ? " (E4M3 value scales)" : "");
  if (llvm::Error err = printResources(os, report->kernelsJson))
    return std::move(err);
  const int32_t seqLen = pb.seqLens[0];
  const double tokens = seqLen;
  const double tiles = tokens / 64.0;
  os << llvm::formatv(
      "\ndecode partitions over {0} tokens ({1} workgroups): dynamic counts "
      "per 64-token tile (prologue amortised)\n",
      seqLen, report->numPartitions * pb.numKVHeads);
  printClasses(os, report->partialStats, tiles * pb.numKVHeads);
  double perToken =
      double(report->partialStats.globalBytesRead) / (tokens * pb.numKVHeads);
  // One slot: K and V codes (+ scales).
  double slot = pb.format == KVCacheKind::UltraQuant
                    ? pb.headDim + pb.headDim / 16
                : pb.format == KVCacheKind::FP8 ? 2.0 * pb.headDim
                                                : 4.0 * pb.headDim;
  os << llvm::formatv(
      "  global bytes read per token per KV head: {0:f1} (floor {1:f0} B = "
      "one slot; {2:f1}x)\n",
      perToken, slot, perToken / slot);
  os << llvm::formatv(
      "  emulated in {0:f2} s; relative L2 error vs reference {1:e2}, {2} "
      "outputs outside the bound\n",
      report->partialStats.seconds, report->relL2, report->outsideBound);
  os << llvm::formatv(
      "\nquery preparation (once per sequence): {0} wave-instructions for {1} "
      "query heads\n",
      report->queryStats.waveInstructions, pb.numQHeads);
  os << llvm::formatv(
      "merge: {0} wave-instructions for {1} partitions x {2} heads\n",
      report->mergeStats.waveInstructions, report->numPartitions, pb.numQHeads);
  const auto &ws = write->writeStats;
  double rows = 2.0 * 1024 * pb.numKVHeads;
  os << llvm::formatv(
      "cache write: {0:f1} wave-instructions per (token, head, K or V) row, "
      "{1:f1} B read and {2:f1} B written per row; {3} cache bytes differ "
      "from the reference\n",
      ws.waveInstructions / rows, ws.globalBytesRead / rows,
      ws.globalBytesWritten / rows, write->cacheMismatches);
  return report->outsideBound == 0 && write->cacheMismatches == 0;
}
