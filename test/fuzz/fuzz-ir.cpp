//===- fuzz-ir.cpp - libFuzzer harness: uq IR through both lowerings ------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Each input is IR text (or bytecode). It goes through what uq-opt,
// uq-compile, uq-run, the C API and Python do with it:
//   1. uq::parseSourceChecked (input limits, parser, op nesting, verifiers);
//   2. the CPU pipeline (convert-uq-to-linalg ... LLVM dialect; no JIT);
//   3. each GPU stage pass on its own, on the input as it is (a mutated
//      input may be at any stage): convert-uq-to-wave,
//      uq-assign-lane-layouts, uq-distribute-to-lanes;
//   4. uq::compileSource (the whole of uq-compile, the input's stage
//      detected as `--from=auto` does) up to the stage named by
//      UQ_FUZZ_GPU_STAGE (default `lanes`: convert-uq-to-wave,
//      uq-assign-lane-layouts, uq-distribute-to-lanes, uq-lower-kernel-abi;
//      `rocdl`, `llvmir`, `isa` go further and cost about a second per
//      kernel, see docs/robustness.md).
// Diagnostics are swallowed; a crash, an ASan/UBSan report or a libFuzzer
// timeout is a finding.
//
//===----------------------------------------------------------------------===//

#include "uq/InitAll.h"
#include "uq/Pipelines/Pipelines.h"
#include "uq/Support/Input.h"
#include "uq/Target/Compiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;

static uq::EmitStage gpuStage = uq::EmitStage::Kernel;

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  uq::registerAllPasses();
  // One thread per context: compileSource's contexts read this option.
  registerMLIRContextCLOptions();
  const char *args[] = {"uq-fuzz-ir", "--mlir-disable-threading"};
  llvm::cl::ParseCommandLineOptions(2, args, "", &llvm::nulls());
  if (const char *stage = std::getenv("UQ_FUZZ_GPU_STAGE"))
    if (std::optional<uq::EmitStage> s = uq::parseEmitStage(stage))
      gpuStage = *s;
  return 0;
}

/// A failure without an error diagnostic is a finding: uq promises a
/// located error for every bad input.
static void requireError(bool sawError) {
  if (!sawError)
    __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  {
    DialectRegistry registry;
    uq::registerAllDialects(registry);
    MLIRContext ctx(registry);
    bool sawError = false;
    ScopedDiagnosticHandler quiet(&ctx, [&](Diagnostic &d) {
      sawError |= d.getSeverity() == DiagnosticSeverity::Error;
      return success();
    });
    OwningOpRef<ModuleOp> module = uq::parseSourceChecked(text, "fuzz", &ctx);
    if (!module) {
      requireError(sawError);
      return 0;
    }
    // The CPU pipeline, then each GPU stage pass on its own, each on a
    // fresh copy of the input.
    std::vector<std::string> pipelines = {"", "convert-uq-to-wave",
                                          "uq-assign-lane-layouts",
                                          "uq-distribute-to-lanes"};
    for (const std::string &pipeline : pipelines) {
      OwningOpRef<ModuleOp> copy = module->clone();
      PassManager pm(&ctx);
      if (pipeline.empty()) {
        uq::CPUPipelineOptions options;
        uq::buildCPUPipeline(pm, options);
      } else if (failed(parsePassPipeline(pipeline, pm))) {
        __builtin_trap(); // the pass must exist
      }
      sawError = false;
      if (failed(pm.run(*copy)))
        requireError(sawError);
    }
  }
  uq::CompileOptions options;
  options.emit = gpuStage;
  llvm::Expected<uq::CompileResult> result =
      uq::compileSource(text, "fuzz", options);
  if (!result) {
    std::string msg = llvm::toString(result.takeError());
    // Every error of compileSource is a located diagnostic.
    requireError(llvm::StringRef(msg).contains("error: "));
  }
  return 0;
}
