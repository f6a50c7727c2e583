//===- uq-compile.cpp - uq IR to gfx950 code objects ----------------------===//
//
// uq-compile INPUT.mlir -o OUT.hsaco [--chip gfx950] [--emit=STAGE]
//                       [--from=STAGE] [--partition-size N] [--prefill-waves W]
//                       [--kernels-json FILE]
// Writes its output only on success; diagnostics go to stderr.
//
//===----------------------------------------------------------------------===//

#include "uq/Support/CommandLine.h"
#include "uq/Support/Input.h"
#include "uq/Support/Output.h"
#include "uq/Target/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

namespace cl = llvm::cl;

// Sorted before LLVM's "Generic Options" (uq/Support/CommandLine.h).
static cl::OptionCategory category("Compiler options (uq-compile)");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string> chip("chip", cl::desc("Target chip"),
                                 cl::init("gfx950"), cl::cat(category));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stage to emit: linalg, wave, layouts, lanes (or kernel), "
                  "rocdl, llvmir, isa or hsaco"),
         cl::init("hsaco"), cl::cat(category));
static cl::opt<std::string>
    from("from",
         cl::desc("Stage the input is at: auto (default), uq, wave, lanes "
                  "or rocdl (kernels from another compiler, with their "
                  "uq.kernels launch description)"),
         cl::init("auto"), cl::cat(category));
static cl::opt<int64_t>
    partitionSize("partition-size",
                  cl::desc("Tokens per split-K partition of uq.decode_attention_partial "
                           "and uq.paged_attention (a multiple of 32)"),
                  cl::init(256), cl::cat(category));
static cl::opt<int64_t> maxPartitionTokens(
    "max-partition-tokens",
    cl::desc("uq.decode_attention's partition rule: the most tokens one "
             "partition takes (a multiple of 32)"),
    cl::init(2048), cl::cat(category));
static cl::opt<int64_t> minPartitionTokens(
    "min-partition-tokens",
    cl::desc("uq.decode_attention's partition rule: the fewest tokens a "
             "partition is given to fill the GPU (a multiple of 32, at most "
             "--max-partition-tokens)"),
    cl::init(64), cl::cat(category));
static cl::opt<int64_t> decodeWorkgroups(
    "decode-workgroups",
    cl::desc("uq.decode_attention's partition rule: the partial workgroups "
             "(partitions x KV heads x sequences) a launch aims at"),
    cl::init(1024), cl::cat(category));
static cl::opt<int64_t> wavesPerSimd(
    "waves-per-simd",
    cl::desc("Occupancy the register allocator aims at (waves per SIMD, "
             "1-8; a kernel that would spill is compiled without it; 0: no "
             "hint)"),
    cl::init(4), cl::cat(category));
static cl::opt<int64_t> prefillWaves(
    "prefill-waves",
    cl::desc("Waves per workgroup of uq.paged_attention's prefill kernel "
             "(1, 2, 4 or 8; they share key/value tiles through LDS)"),
    cl::init(4), cl::cat(category));
static cl::opt<int64_t> prefillRows(
    "prefill-rows",
    cl::desc("MFMA rows per wave of uq.paged_attention's prefill kernel (16 "
             "or 32: one or two 16-row tiles sharing every key and value "
             "operand)"),
    cl::init(16), cl::cat(category));
static cl::opt<int64_t> mergeChunk(
    "merge-chunk",
    cl::desc("Partitions the decode merge kernel reads per step of its loop "
             "(8, 16, 32 or 64; 0: 32, or 16 where 32 would need scratch)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> prefillSharedV(
    "prefill-shared-v",
    cl::desc("uq.paged_attention's prefill kernel with FP4 values and "
             "several waves: convert each value tile to bf16 once per "
             "workgroup into LDS (default on; =false: in every wave)"),
    cl::init(true), cl::cat(category));
static cl::opt<int64_t> prefillMergeChunk(
    "prefill-merge-chunk",
    cl::desc("Partitions uq.paged_attention's merge kernel reads per step of "
             "its loop (8, 16, 32 or 64)"),
    cl::init(8), cl::cat(category));
static cl::opt<std::string> kernelsJson(
    "kernels-json",
    cl::desc("Where to write the kernel description (default: OUT.json "
             "next to the code object)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  uq::hideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "uq gfx950 compiler\n");
  auto error = [](const llvm::Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "uq-compile") << msg << "\n";
    return 1;
  };
  auto stage = uq::parseEmitStage(emit);
  if (!stage)
    return error("unknown --emit stage '" + emit +
                 "' (expected linalg, wave, layouts, lanes, kernel, rocdl, "
                 "llvmir, isa or hsaco)");
  auto fromStage = uq::parseInputStage(from);
  if (!fromStage)
    return error("unknown --from stage '" + from +
                 "' (expected auto, uq, wave, lanes or rocdl)");
  auto input = uq::readInputFile(inputFile, uq::InputLimits::kMaxSourceBytes,
                                 "IR", /*allowStdin=*/true);
  if (!input)
    return error(llvm::toString(input.takeError()));
  uq::CompileOptions options;
  options.chip = chip;
  options.emit = *stage;
  options.from = *fromStage;
  options.partitionSize = partitionSize;
  if (wavesPerSimd < 0 || wavesPerSimd > 8)
    return error("--waves-per-simd must be 0 (no hint) or 1 to 8, got " +
                 llvm::Twine(wavesPerSimd.getValue()));
  options.wavesPerSimd = wavesPerSimd;
  options.prefillWaves = prefillWaves;
  options.prefillRows = prefillRows;
  if (mergeChunk != 0 && mergeChunk != 8 && mergeChunk != 16 &&
      mergeChunk != 32 && mergeChunk != 64)
    return error("--merge-chunk must be 0 (automatic), 8, 16, 32 or 64, got " +
                 llvm::Twine(mergeChunk.getValue()));
  options.mergeChunk = mergeChunk;
  options.prefillSharedV = prefillSharedV;
  if (prefillMergeChunk != 8 && prefillMergeChunk != 16 &&
      prefillMergeChunk != 32 && prefillMergeChunk != 64)
    return error("--prefill-merge-chunk must be 8, 16, 32 or 64, got " +
                 llvm::Twine(prefillMergeChunk.getValue()));
  options.prefillMergeChunk = prefillMergeChunk;
  options.maxPartitionTokens = maxPartitionTokens;
  options.minPartitionTokens = minPartitionTokens;
  options.decodeWorkgroups = decodeWorkgroups;
  auto result = uq::compileSource((*input)->getBuffer(),
                                  inputFile == "-" ? std::string("<stdin>")
                                                   : std::string(inputFile),
                                  options);
  if (!result) {
    llvm::errs() << llvm::toString(result.takeError()) << "\n";
    return 1;
  }
  if (*stage == uq::EmitStage::HSACO && outputFile == "-")
    return error("a code object needs an output file (-o OUT.hsaco)");
  // Both files or neither; a failed write (a full disk, /dev/full) is an
  // error here, not LLVM's fatal one (uq/Support/Output.h).
  std::vector<uq::OutputFile> files = {{outputFile, result->output}};
  if (*stage == uq::EmitStage::HSACO)
    files.push_back({kernelsJson.empty() ? outputFile + ".json"
                                         : std::string(kernelsJson),
                     result->kernelsJson, /*text=*/true});
  if (llvm::Error e = uq::writeOutputFiles(files))
    return error(llvm::toString(std::move(e)));
  return 0;
}
