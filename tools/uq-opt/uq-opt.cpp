//===- uq-opt.cpp - The uq optimizer driver -------------------------------===//
//
// Runs pass pipelines on IR files that may use the uq dialect, the upstream
// dialects its pipelines need, and every upstream pass. MlirOptMain does the
// work; around it uq-opt
// - reads the input itself, through uq::readInputFile (regular files or
//   stdin only, size-limited) and uq::checkIRText (bounded nesting), so that
//   /dev/zero or a file of 5000 nested modules is an error, not a hang or a
//   stack overflow (docs/robustness.md);
// - fails when any error diagnostic was emitted, also by a pass that
//   emitted one and still reported success (upstream's
//   finalize-memref-to-llvm does that for GPU address spaces).
//
//===----------------------------------------------------------------------===//

#include "uq/InitAll.h"
#include "uq/Support/Input.h"
#include "uq/Support/Output.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <atomic>

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  uq::registerAllDialects(registry);
  uq::registerAllPasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv,
      "uq optimizer driver: the uq dialect, uq's passes (convert-uq-to-*, "
      "uq-*) and pipelines (uq-*) listed with every upstream pass below\n",
      registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  auto error = [](const llvm::Twine &msg) {
    llvm::WithColor::error(llvm::errs(), "uq-opt") << msg << "\n";
    return 1;
  };

  auto input =
      uq::readInputFile(inputFilename, uq::InputLimits::kMaxSourceBytes, "IR",
                        /*allowStdin=*/true);
  if (!input)
    return error(llvm::toString(input.takeError()));
  if (std::optional<uq::TextViolation> v =
          uq::checkIRText((*input)->getBuffer())) {
    // `file:line:col: error: ...` like MLIR's diagnostics, without echoing
    // the offending line (it can be the whole file).
    llvm::StringRef name =
        inputFilename == "-" ? llvm::StringRef("<stdin>") : inputFilename;
    std::string where =
        (name + ":" + llvm::Twine(v->line) + ":" + llvm::Twine(v->column))
            .str();
    llvm::WithColor::error(llvm::errs(), where) << v->message << "\n";
    return 1;
  }

  // Count error diagnostics (not in --verify-diagnostics mode, where they
  // are expected). The handler is registered on each buffer's context when
  // its pass manager is set up, after MlirOptMain's own handler, so it sees
  // every diagnostic first and passes it on.
  std::atomic<unsigned> errors{0};
  if (!config.shouldVerifyDiagnostics()) {
    mlir::MlirOptMainConfig plain = config;
    config.setPassPipelineSetupFn([plain, &errors](mlir::PassManager &pm) {
      pm.getContext()->getDiagEngine().registerHandler(
          [&errors](mlir::Diagnostic &diag) {
            if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
              ++errors;
            return mlir::failure();
          });
      return plain.setupPassPipeline(pm);
    });
  }

  // An -o file is kept in memory and written once the run succeeded, whole
  // or not at all; standard output streams as MlirOptMain writes it (the
  // chunks of --split-input-file before a failing one still show). A failed
  // write (a full disk, /dev/full) is an error line, not LLVM's fatal "IO
  // failure on output stream" (uq/Support/Output.h).
  bool toStdout = outputFilename == "-";
  std::string text;
  llvm::raw_string_ostream buffer(text);
  llvm::raw_ostream &os =
      toStdout ? static_cast<llvm::raw_ostream &>(llvm::outs()) : buffer;
  bool ok = mlir::succeeded(
      mlir::MlirOptMain(os, std::move(*input), registry, config));
  if (toStdout) {
    llvm::outs().flush();
    if (std::error_code ec = llvm::outs().error()) {
      llvm::outs().clear_error();
      return error("cannot write standard output: " + ec.message());
    }
  }
  if (!ok)
    return 1;
  if (errors > 0)
    return error(llvm::Twine(errors.load()) +
                 " error diagnostic(s) above came from passes that did not "
                 "report failure; the run fails (an -o file is not kept)");
  if (!toStdout)
    if (llvm::Error e =
            uq::writeOutputFile(outputFilename, text, /*text=*/true))
      return error(llvm::toString(std::move(e)));
  return 0;
}
