//===- fuzz-stage-ir.cpp - libFuzzer harness: handed-over stage IR -------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Each input is stage IR: wave-level or per-lane kernels with their
// `uq.kernels` launch description, as another compiler would hand them to
// `uq-compile --from=wave` or `--from=lanes` (the seeds are what
// `uq-compile --emit=wave` and `--emit=lanes` print for the tests' uq ops:
// test/fuzz/stage-ir.test; the mutations change their shapes, types,
// attributes and the launch description). Each input goes
//   1. through uq::parseSourceChecked and the stage's passes run directly,
//      with every diagnostic seen: from the wave stage the lane pipeline
//      (uq-assign-lane-layouts, uq-distribute-to-lanes, canonicalization,
//      uq-lower-kernel-abi), from the lanes stage the ROCDL pipeline; and
//   2. through uq::compileSource with `from` = wave, then lanes, up to
//      UQ_FUZZ_STAGE_EMIT (default `rocdl`; `llvmir`, `isa` and `hsaco` go
//      through LLVM's backend too, about a second per kernel).
// Findings: a crash (or an ASan/UBSan report in a sanitizer build); a pass
// pipeline that fails without an error diagnostic, or that succeeds
// although it emitted one (an error with exit status 0); a compileSource
// failure whose message has no `error:`. A hang is found by the driver's
// -timeout.
//
//===----------------------------------------------------------------------===//

#include "uq/InitAll.h"
#include "uq/Pipelines/GPUPipeline.h"
#include "uq/Support/Input.h"
#include "uq/Target/Compiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace mlir;

static uq::EmitStage emitStage = uq::EmitStage::ROCDL;

/// How far the inputs got (printed at exit when UQ_FUZZ_STATS is set): a
/// run whose inputs all stop at the parser tests little.
static struct Stats {
  unsigned inputs = 0, parsed = 0, lanes = 0, rocdl = 0, fromWave = 0,
           fromLanes = 0;
  ~Stats() {
    if (std::getenv("UQ_FUZZ_STATS"))
      llvm::errs() << "inputs " << inputs << ", parsed " << parsed
                   << ", lane pipeline ok " << lanes << ", ROCDL pipeline ok "
                   << rocdl << ", compiled --from=wave " << fromWave
                   << ", --from=lanes " << fromLanes << "\n";
  }
} stats;

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  uq::registerAllPasses();
  registerMLIRContextCLOptions();
  const char *args[] = {"uq-fuzz-stage-ir", "--mlir-disable-threading"};
  llvm::cl::ParseCommandLineOptions(2, args, "", &llvm::nulls());
  if (const char *stage = std::getenv("UQ_FUZZ_STAGE_EMIT"))
    if (std::optional<uq::EmitStage> s = uq::parseEmitStage(stage))
      emitStage = *s;
  return 0;
}

/// A finding: the reason on stderr, then an abort (the driver's -artifact
/// file holds the input).
[[noreturn]] static void finding(const char *what) {
  llvm::errs() << "uq-fuzz-stage-ir: finding: " << what << "\n";
  llvm::errs().flush();
  __builtin_trap();
}

/// Runs \p build's passes on a copy of \p module; an error diagnostic and
/// the pipeline's result must agree.
template <typename Build>
static bool runStage(ModuleOp module, MLIRContext &ctx, bool &sawError,
                     Build build, const char *name) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(&ctx);
  build(pm);
  sawError = false;
  bool failedRun = failed(pm.run(*copy));
  if (failedRun && !sawError)
    finding((std::string(name) + ": failed without an error diagnostic")
                .c_str());
  if (!failedRun && sawError)
    finding((std::string(name) + ": an error diagnostic, but the pipeline "
                                 "succeeded (an error with exit status 0)")
                .c_str());
  return !failedRun;
}

namespace {
/// Edits that keep stage IR parseable most of the time, so that the inputs
/// reach the stages instead of stopping at the parser: numbers (shapes,
/// constants, the launch description's sizes) replaced in one place or
/// everywhere (a consistent new tile shape), element types swapped, ops
/// without results deleted or repeated, strings of the launch description
/// replaced (the driver's byte-level edits come on top, for one input in
/// ten).
class StageMutator {
public:
  explicit StageMutator(unsigned seed) : rng(seed) {}

  void mutate(std::string &s) {
    switch (pick(9)) {
    case 0:
      return replaceNumber(s, /*everywhere=*/false);
    case 1:
    case 2:
    case 3:
      return replaceNumber(s, /*everywhere=*/true);
    case 4:
    case 5:
      return swapType(s);
    case 6:
      return editLine(s, /*remove=*/true);
    case 7:
      return editLine(s, /*remove=*/false);
    default:
      return replaceString(s);
    }
  }

private:
  size_t pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  }
  static bool isWord(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '%' || c == '#' || c == '@' || c == '.' || c == '$';
  }

  /// Decimal numbers that are tokens of their own (not part of a name such
  /// as %c16 or f32); a shape's `16x32` counts as two numbers.
  std::vector<std::pair<size_t, size_t>> numbers(const std::string &s) {
    std::vector<std::pair<size_t, size_t>> out;
    for (size_t i = 0; i < s.size();) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
        ++j;
      bool before = i > 0 && isWord(s[i - 1]) && s[i - 1] != 'x';
      bool after = j < s.size() && isWord(s[j]) && s[j] != 'x';
      if (!before && !after)
        out.push_back({i, j - i});
      i = j;
    }
    return out;
  }

  void replaceNumber(std::string &s, bool everywhere) {
    // The first 15 are at most 64: UQ_FUZZ_STAGE_SMALL=1 keeps to them
    // (see test/fuzz/stage-ir.test), the others make huge tiles and sizes.
    static const char *const kValues[] = {
        "-1",   "0",     "1",          "2",          "3",    "4",
        "8",    "15",    "16",         "17",         "31",   "32",
        "33",   "48",    "64",         "128",        "256",  "512",
        "1024", "4096",  "65536",      "2147483647", "2147483648",
        "4294967296"};
    static const bool small = std::getenv("UQ_FUZZ_STAGE_SMALL") != nullptr;
    auto nums = numbers(s);
    if (nums.empty())
      return;
    auto [at, len] = nums[pick(nums.size())];
    std::string from = s.substr(at, len);
    std::string to = kValues[pick(small ? 15 : std::size(kValues))];
    if (!everywhere) {
      s.replace(at, len, to);
      return;
    }
    // Every standalone occurrence of the same number (right to left, so the
    // positions stay valid).
    for (auto it = nums.rbegin(); it != nums.rend(); ++it)
      if (s.compare(it->first, it->second, from) == 0)
        s.replace(it->first, it->second, to);
  }

  void swapType(std::string &s) {
    static const char *const kTypes[] = {"f32", "bf16", "f16", "i32", "i64",
                                         "i8",  "i16",  "i1",  "f64", "index"};
    std::string from = kTypes[pick(std::size(kTypes))];
    std::string to = kTypes[pick(std::size(kTypes))];
    bool everywhere = pick(2);
    std::vector<size_t> hits;
    for (size_t at = s.find(from); at != std::string::npos;
         at = s.find(from, at + 1))
      if ((at == 0 || !std::isalnum(static_cast<unsigned char>(s[at - 1])) ||
           s[at - 1] == 'x') &&
          (at + from.size() >= s.size() ||
           !std::isalnum(static_cast<unsigned char>(s[at + from.size()]))))
        hits.push_back(at);
    if (hits.empty())
      return;
    if (!everywhere)
      hits = {hits[pick(hits.size())]};
    for (auto it = hits.rbegin(); it != hits.rend(); ++it)
      s.replace(*it, from.size(), to);
  }

  /// Removes or repeats a line without results (a store, a barrier, a
  /// yield, an attribute line of the launch description).
  void editLine(std::string &s, bool remove) {
    std::vector<std::pair<size_t, size_t>> lines;
    for (size_t at = 0; at < s.size();) {
      size_t end = s.find('\n', at);
      if (end == std::string::npos)
        end = s.size();
      llvm::StringRef line(s.data() + at, end - at);
      llvm::StringRef t = line.trim();
      if (!t.empty() && !t.starts_with("%") && !t.starts_with("}") &&
          !t.contains("{"))
        lines.push_back({at, end - at});
      at = end + 1;
    }
    if (lines.empty())
      return;
    auto [at, len] = lines[pick(lines.size())];
    if (remove)
      s.erase(at, std::min(len + 1, s.size() - at));
    else
      s.insert(at, s.substr(at, len) + "\n");
  }

  void replaceString(std::string &s) {
    static const char *const kStrings[] = {
        "\"\"",       "\"bogus\"", "\"q7\"",      "\"i32\"",
        "\"by_value\"", "\"global_buffer\"", "\"num_seqs\"",
        "\"none\"",   "\"\\00\"", "\"x\""};
    std::vector<std::pair<size_t, size_t>> strs;
    for (size_t at = s.find('"'); at != std::string::npos;) {
      size_t end = s.find('"', at + 1);
      if (end == std::string::npos)
        break;
      strs.push_back({at, end - at + 1});
      at = s.find('"', end + 1);
    }
    if (strs.empty())
      return;
    auto [at, len] = strs[pick(strs.size())];
    s.replace(at, len, kStrings[pick(std::size(kStrings))]);
  }

  std::mt19937 rng;
};
} // namespace

/// libFuzzer's hook for a structure-aware mutator (also used by
/// standalone-main.cpp): 1 to 3 StageMutator edits of the input.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::string s(reinterpret_cast<const char *>(data), size);
  StageMutator m(seed);
  unsigned edits = 1 + seed % 3;
  for (unsigned i = 0; i < edits; ++i)
    m.mutate(s);
  size_t n = std::min(s.size(), maxSize);
  std::memcpy(data, s.data(), n);
  return n;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  ++stats.inputs;
  {
    DialectRegistry registry;
    uq::registerAllDialects(registry);
    MLIRContext ctx(registry);
    bool sawError = false;
    std::string firstError;
    ScopedDiagnosticHandler quiet(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
        firstError = d.str();
      sawError |= d.getSeverity() == DiagnosticSeverity::Error;
      return success();
    });
    OwningOpRef<ModuleOp> module = uq::parseSourceChecked(text, "fuzz", &ctx);
    if (!module && std::getenv("UQ_FUZZ_STATS"))
      llvm::errs() << "not parsed: " << firstError << "\n";
    if (!module) {
      if (!sawError)
        finding("parse failed without an error diagnostic");
    } else {
      ++stats.parsed;
      uq::GPUPipelineOptions options;
      stats.lanes += runStage(
          *module, ctx, sawError,
          [&](PassManager &pm) { uq::buildLanePipeline(pm, options); },
          "the lane pipeline (from the wave stage)");
      stats.rocdl += runStage(
          *module, ctx, sawError,
          [&](PassManager &pm) { uq::buildROCDLPipeline(pm, options); },
          "the ROCDL pipeline (from the lanes stage)");
    }
  }
  for (uq::InputStage from : {uq::InputStage::Wave, uq::InputStage::Kernel}) {
    uq::CompileOptions options;
    options.from = from;
    options.emit = emitStage;
    llvm::Expected<uq::CompileResult> result =
        uq::compileSource(text, "fuzz", options);
    if (!result) {
      std::string msg = llvm::toString(result.takeError());
      if (!llvm::StringRef(msg).contains("error: "))
        finding("a compileSource error without `error:`");
    } else {
      ++(from == uq::InputStage::Wave ? stats.fromWave : stats.fromLanes);
    }
  }
  return 0;
}
