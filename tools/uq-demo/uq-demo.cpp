//===- uq-demo.cpp - The main job on a built-in example -------------------===//
//
// Compiles a decode-attention program (GQA 8, head_dim 128, block size 16,
// 1000 cached tokens) for gfx950, writes the 4-bit cache with the GPU
// cache-write kernel and runs decode attention, both in the emulator, and
// compares with the reference library. Options change the problem.
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Harness/EmulatedAttention.h"
#include "uq/Support/CommandLine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

// Sorted before LLVM's "Generic Options" (uq/Support/CommandLine.h).
static cl::OptionCategory category("Demo problem options (uq-demo)");

static cl::opt<int64_t> numQHeads("q-heads", cl::desc("Query heads"),
                                  cl::init(8), cl::cat(category));
static cl::opt<int64_t> numKVHeads("kv-heads", cl::desc("KV heads"),
                                   cl::init(1), cl::cat(category));
static cl::opt<int64_t> headDim("head-dim", cl::desc("Head dimension"),
                                cl::init(128), cl::cat(category));
static cl::opt<int64_t> blockSize("block-size", cl::desc("Cache block size"),
                                  cl::init(16), cl::cat(category));
static cl::list<int32_t>
    seqLens("seq-len", cl::desc("Tokens of a sequence (repeat for "
                                "a batc, cl::cat(category)); default 1000)"));
static cl::opt<bool> sinks("sinks", cl::desc("Use attention sinks"),
                           cl::init(false), cl::cat(category));
static cl::opt<int64_t> partitionSize("partition-size",
                                      cl::desc("Split-K partition size"),
                                      cl::init(256), cl::cat(category));
static cl::opt<double> cConst("c", cl::desc("Constant c of the K/V scale rule"),
                              cl::init(0.156), cl::cat(category));
static cl::opt<bool>
    mseSearch("mse-search",
              cl::desc("Code K and V with scale_rule = mse_search"),
              cl::init(false), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Random seed"), cl::init(1),
                              cl::cat(category));
static cl::opt<bool> refCacheWrite(
    "reference-cache-write",
    cl::desc("Write the cache with the reference library instead of the GPU "
             "cache-write kernel"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> printIR("print-ir", cl::desc("Print the uq program"),
                             cl::init(false), cl::cat(category));

static int error(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "uq-demo") << msg << "\n";
  return 1;
}

/// Sizes the harness can hold and emulate in reasonable time; everything
/// finer (head dim a power of two, GQA ratio, partition size a multiple of
/// 32) is checked by the IR verifier and reported as a located diagnostic.
static std::string problemError(const uq::AttentionProblem &pb) {
  auto range = [](int64_t v, int64_t hi) { return v >= 1 && v <= hi; };
  if (!range(pb.numQHeads, 4096) || !range(pb.numKVHeads, 4096))
    return "--q-heads and --kv-heads must be in [1, 4096]";
  if (!range(pb.headDim, 4096))
    return "--head-dim must be in [1, 4096]";
  if (!range(pb.blockSize, 4096))
    return "--block-size must be in [1, 4096]";
  if (!range(pb.partitionSize, 1 << 20))
    return "--partition-size must be in [1, 1048576]";
  int64_t tokens = 0;
  for (int32_t len : pb.seqLens) {
    if (len < 0)
      return "--seq-len must be >= 0";
    tokens += len;
  }
  if (tokens * pb.numKVHeads * pb.headDim > (int64_t(1) << 26))
    return "the problem is too large for the demo: tokens x KV heads x head "
           "dim must be at most 2^26";
  if (!uq::KVFormatAttr::isValidScaleConstant(pb.c))
    return "-c must be a finite, positive, normal f32 value";
  return "";
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  uq::hideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "uq demo: compile, emulate and check decode "
                              "attention over a 4-bit KV cache\n");
  uq::AttentionProblem pb;
  pb.numQHeads = numQHeads;
  pb.numKVHeads = numKVHeads;
  pb.headDim = headDim;
  pb.blockSize = blockSize;
  if (!seqLens.empty())
    pb.seqLens.assign(seqLens.begin(), seqLens.end());
  pb.sinks = sinks;
  pb.partitionSize = partitionSize;
  pb.seed = seed;
  pb.c = cConst;
  pb.mseSearch = mseSearch;
  pb.gpuCacheWrite = !refCacheWrite;
  if (std::string why = problemError(pb); !why.empty())
    return error(why);
  auto report = uq::runEmulatedAttention(pb);
  if (!report)
    return error(llvm::toString(report.takeError()));
  if (printIR)
    llvm::outs() << report->ir << "\n";
  auto &r = *report;
  llvm::outs() << "uq demo: decode attention over a 4-bit (UltraQuant) KV "
                  "cache, compiled for gfx950 and run in the emulator\n";
  llvm::outs() << llvm::formatv(
      "  problem: {0} seq(s), {1} query heads / {2} KV heads (GQA {3}), "
      "head_dim {4}, block size {5}, {6} partition(s) (the compiler's "
      "partition rule){7}\n",
      pb.seqLens.size(), pb.numQHeads, pb.numKVHeads,
      pb.numQHeads / pb.numKVHeads, pb.headDim, pb.blockSize, r.numPartitions,
      pb.sinks ? ", sinks" : "");
  if (pb.gpuCacheWrite)
    llvm::outs() << llvm::formatv(
        "  cache write (GPU kernel): {0} of {1} cache bytes differ from the "
        "reference\n",
        r.cacheMismatches, r.cacheBytes);
  else
    llvm::outs() << "  cache written by the reference library\n";
  llvm::outs() << llvm::formatv(
      "  attention: relative L2 error {0:e2}, max abs error {1:e2}, {2} of "
      "{3} outputs outside the bf16-P bound\n",
      r.relL2, r.maxAbsError, r.outsideBound, r.numOutputs);
  auto line = [](const char *what, const uq::emu::Stats &st) {
    llvm::outs() << llvm::formatv(
        "  {0,-14} {1,10} wave-instrs  {2,6} MFMA  {3,9} B read  "
        "{4,8} B written  {5:f2} s emulated\n",
        what, st.waveInstructions, st.mfma, st.globalBytesRead,
        st.globalBytesWritten, st.seconds);
  };
  line("cache_write", r.writeStats);
  line("partial", r.partialStats);
  line("merge", r.mergeStats);
  bool ok = r.cacheMismatches == 0 && r.outsideBound == 0;
  llvm::outs() << (ok ? "PASS" : "FAIL") << "\n";
  return ok ? 0 : 1;
}
