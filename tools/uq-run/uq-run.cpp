//===- uq-run.cpp - Run a uq function on the CPU with .npy files ----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
//   uq-run FILE.mlir --entry NAME --input a.npy ... --output out.npy ...
//
// Lowers FILE with uq-cpu-pipeline, runs @NAME on the inputs and writes its
// results. See docs/cpu-path.md.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/CPURunner.h"
#include "uq/Runtime/Npy.h"
#include "uq/Support/CommandLine.h"
#include "uq/Support/Output.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace uq::runtime;
namespace cl = llvm::cl;

// Sorted before LLVM's "Generic Options" (uq/Support/CommandLine.h).
static cl::OptionCategory category("CPU runner options (uq-run)");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<input .mlir file>"),
                                      cl::cat(category));
static cl::opt<std::string> entry("entry", cl::Required,
                                  cl::desc("Function to run"),
                                  cl::value_desc("name"), cl::cat(category));
static cl::list<std::string> inputs("input",
                                    cl::desc("One .npy file per argument, in "
                                             "order"),
                                    cl::value_desc("file.npy"),
                                    cl::cat(category));
static cl::list<std::string> outputs("output",
                                     cl::desc("One .npy file per result, in "
                                              "order"),
                                     cl::value_desc("file.npy"),
                                     cl::cat(category));
static cl::opt<unsigned> bench("bench",
                               cl::desc("Also time N further runs and print "
                                        "the mean time per call"),
                               cl::init(0), cl::value_desc("N"),
                               cl::cat(category));
static cl::opt<unsigned> optLevel("O", cl::desc("JIT optimisation level"),
                                  cl::init(2), cl::Prefix, cl::cat(category));
static cl::opt<std::string>
    rotation("rotation-arithmetic",
             cl::desc("exact-f64 (default, the reference's) or butterfly-f32"),
             cl::init("exact-f64"), cl::cat(category));

static int error(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "uq-run") << msg << "\n";
  return 1;
}

static int error(llvm::Error e) {
  std::string msg = llvm::toString(std::move(e));
  return error(msg);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  uq::hideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "uq-run: run a uq function on the CPU\n");

  CPURunOptions options;
  options.optLevel = optLevel;
  if (rotation == "butterfly-f32")
    options.rotation = uq::RotationArithmetic::ButterflyF32;
  else if (rotation != "exact-f64")
    return error("--rotation-arithmetic must be exact-f64 or butterfly-f32");

  auto program = CPUProgram::compileFile(inputFile, entry, options);
  if (!program)
    return error(program.takeError());
  const auto &ins = (*program)->inputs();
  const auto &outs = (*program)->outputs();
  if (inputs.size() != ins.size())
    return error("@" + entry + " takes " + llvm::Twine(ins.size()) +
                 " argument(s) but " + llvm::Twine(inputs.size()) +
                 " --input file(s) were given");
  if (outputs.size() != outs.size())
    return error("@" + entry + " returns " + llvm::Twine(outs.size()) +
                 " result(s) but " + llvm::Twine(outputs.size()) +
                 " --output file(s) were given");

  std::vector<HostTensor> args;
  for (size_t i = 0; i < ins.size(); ++i) {
    auto npy = readNpy(inputs[i]);
    if (!npy)
      return error(npy.takeError());
    auto t = npyToTensor(*npy, ins[i], inputs[i]);
    if (!t)
      return error(t.takeError());
    args.push_back(std::move(*t));
  }

  // Benchmark runs work on copies: the function may update its arguments.
  if (bench > 0) {
    std::vector<HostTensor> scratch = args;
    if (auto warm = (*program)->run(scratch); !warm)
      return error(warm.takeError());
    double total = 0;
    for (unsigned i = 0; i < bench; ++i) {
      scratch = args;
      auto start = std::chrono::steady_clock::now();
      auto r = (*program)->run(scratch);
      auto stop = std::chrono::steady_clock::now();
      if (!r)
        return error(r.takeError());
      total += std::chrono::duration<double>(stop - start).count();
    }
    llvm::outs() << "@" << entry << ": " << llvm::format("%.6f", total / bench)
                 << " s per call (mean of " << bench << " runs)\n";
  }

  auto results = (*program)->run(args);
  if (!results)
    return error(results.takeError());
  // Every --output file, or none (uq/Support/Output.h): a failed write is
  // an error line and leaves no file of this run behind.
  std::vector<std::string> bytes;
  for (size_t i = 0; i < outs.size(); ++i)
    bytes.push_back(serializeNpy(tensorToNpy((*results)[i])));
  std::vector<uq::OutputFile> files;
  for (size_t i = 0; i < outs.size(); ++i)
    files.push_back({outputs[i], bytes[i]});
  if (llvm::Error e = uq::writeOutputFiles(files))
    return error(std::move(e));
  return 0;
}
