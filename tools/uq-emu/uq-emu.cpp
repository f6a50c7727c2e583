//===- uq-emu.cpp - Run a gfx950 code object on the CPU emulator ----------===//
//
// uq-emu CODE.hsaco --kernel NAME --grid X,Y,Z --block X,Y,Z --arg ... [--stats]
// See --help and docs/emulator.md.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/KernelsJson.h"
#include "uq/Emulator/TimingModel.h"
#include "uq/Support/Output.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;
using namespace uq::emu;

static cl::OptionCategory cat("uq-emu options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<code object>"),
                                      cl::cat(cat));
static cl::opt<std::string> kernelName("kernel",
                                       cl::desc("Kernel to run (metadata "
                                                "name or descriptor symbol)"),
                                       cl::cat(cat));
static cl::opt<std::string>
    gridOpt("grid", cl::desc("Number of WORKGROUPS per dimension: X[,Y[,Z]] "
                             "(like HIP gridDim; default 1)"),
            cl::init("1"), cl::cat(cat));
static cl::opt<std::string>
    blockOpt("block", cl::desc("Work-items per workgroup: X[,Y[,Z]] (like HIP "
                               "blockDim; default 64)"),
             cl::init("64"), cl::cat(cat));
static cl::list<std::string> argOpts(
    "arg",
    cl::desc(
        "Kernel argument, one per explicit argument in order:\n"
        "  in:FILE              input buffer (a .npy file's data bytes, or a "
        "raw file)\n"
        "  out:FILE:BYTES       output buffer of BYTES zero bytes, written to "
        "FILE after the run\n"
        "                       (raw bytes, or a 1-D uint8 .npy when FILE ends "
        "in .npy)\n"
        "  inout:FILE[:OUTFILE] buffer read from FILE and written back to "
        "OUTFILE (default FILE)\n"
        "  zeros:BYTES          scratch buffer of BYTES zero bytes, not "
        "saved\n"
        "  null                 a buffer argument passed as the null "
        "pointer\n"
        "  i32:V u32:V i64:V u64:V f32:V f64:V   by-value scalars"),
    cl::cat(cat));
// libLLVM already owns a "-stats" option, so --stats is taken out of argv
// before the command line is parsed.
static bool statsOpt = false;
static cl::opt<bool> listOpt("list", cl::desc("List the kernels and exit"),
                             cl::cat(cat));
static cl::opt<bool> opcodesOpt("list-opcodes",
                                cl::desc("List implemented opcodes and exit"),
                                cl::cat(cat));
static cl::opt<unsigned>
    benchOpt("bench",
             cl::desc("Repeat the launch N times and print emulated "
                      "wave-instructions/s and lane-ops/s"),
             cl::init(0), cl::cat(cat));
static cl::opt<uint64_t>
    maxInsts("max-insts",
             cl::desc("Fail after this many wave-instructions (0: no limit)"),
             cl::init(0), cl::cat(cat));
static cl::opt<unsigned> dynLds("dynamic-lds",
                                cl::desc("Extra dynamic LDS bytes (static + "
                                         "dynamic at most 160 KiB)"),
                                cl::init(0), cl::cat(cat));
static cl::opt<uint64_t> maxBufferBytes(
    "max-buffer-bytes",
    cl::desc("Limit on the total bytes of all buffer arguments (default 4 "
             "GiB)"),
    cl::init(4ull << 30), cl::cat(cat));
static cl::opt<std::string> kernelsJson(
    "kernels-json",
    cl::desc("Kernel description written by uq-compile (docs/uq-compile.md); "
             "default CODE.hsaco.json when it exists. Buffer sizes, argument "
             "kinds and the block are checked against it before the launch"),
    cl::cat(cat));
static cl::opt<bool> noKernelsJson("no-kernels-json",
                                   cl::desc("Do not read CODE.hsaco.json"),
                                   cl::cat(cat));
static cl::opt<bool> partialWaves(
    "partial-waves",
    cl::desc("Allow a block that is not a whole number of 64-lane waves "
             "(for kernels written for partial waves)"),
    cl::cat(cat));

static cl::opt<bool> timingOpt(
    "timing",
    cl::desc("Predict the launch's time on MI355X with the timing model "
             "(docs/timing-model.md): per-resource cycles, lower bound, "
             "estimate, occupancy"),
    cl::cat(cat));
static cl::opt<std::string>
    timingJson("timing-json",
               cl::desc("Write the timing prediction as JSON to FILE "
                        "(implies --timing)"),
               cl::cat(cat));
static cl::opt<uint64_t> timingSample(
    "timing-sample",
    cl::desc("With --timing: emulate only N evenly spaced workgroups (1 "
             "to the grid's workgroups) and scale to the grid (the outputs "
             "then hold only theirs)"),
    cl::init(0), cl::cat(cat));

/// Largest --bench repeat count.
constexpr unsigned kMaxBench = 1000;

namespace {
int usage(const Twine &msg) {
  errs() << "uq-emu: error: " << msg << "\n";
  return 2;
}

bool parseDims(StringRef s, std::array<uint32_t, 3> &d) {
  // getAsInteger rejects values that do not fit uint32_t.
  SmallVector<StringRef, 3> parts;
  s.split(parts, ',');
  if (parts.empty() || parts.size() > 3)
    return false;
  d = {1, 1, 1};
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i].trim().getAsInteger(10, d[i]) || d[i] == 0)
      return false;
  return true;
}

/// Reads a raw file or the data bytes of a .npy file: a regular file of at
/// most `limit` bytes (a FIFO or /dev/zero would never end).
Expected<std::vector<uint8_t>> readData(StringRef path, uint64_t limit) {
  sys::fs::file_status st;
  if (std::error_code ec = sys::fs::status(path, st))
    return createStringError(ec, "cannot read '%s': %s", path.str().c_str(),
                             ec.message().c_str());
  if (st.type() != sys::fs::file_type::regular_file)
    return createStringError(inconvertibleErrorCode(),
                             "cannot read '%s': not a regular file",
                             path.str().c_str());
  if (st.getSize() > limit)
    return createStringError(
        inconvertibleErrorCode(),
        "'%s' has %llu bytes, more than the buffer limit of %llu "
        "(--max-buffer-bytes)",
        path.str().c_str(), (unsigned long long)st.getSize(),
        (unsigned long long)limit);
  auto buf = MemoryBuffer::getFile(path, false, false);
  if (!buf)
    return createStringError(buf.getError(), "cannot read '%s': %s",
                             path.str().c_str(),
                             buf.getError().message().c_str());
  StringRef b = (*buf)->getBuffer();
  if (b.starts_with("\x93NUMPY") && b.size() >= 10) {
    unsigned major = (uint8_t)b[6];
    size_t hlen, start;
    if (major == 1) {
      hlen = (uint8_t)b[8] | ((uint8_t)b[9] << 8);
      start = 10;
    } else {
      if (b.size() < 12)
        return createStringError(inconvertibleErrorCode(), "bad .npy header");
      hlen = (uint8_t)b[8] | ((uint8_t)b[9] << 8) | ((uint8_t)b[10] << 16) |
             ((size_t)(uint8_t)b[11] << 24);
      start = 12;
    }
    if (start + hlen > b.size())
      return createStringError(inconvertibleErrorCode(),
                               "truncated .npy header in '%s'",
                               path.str().c_str());
    StringRef header = b.substr(start, hlen);
    if (header.contains("'fortran_order': True"))
      return createStringError(inconvertibleErrorCode(),
                               "'%s' is Fortran-ordered; use C order",
                               path.str().c_str());
    b = b.drop_front(start + hlen);
  }
  return std::vector<uint8_t>(b.begin(), b.end());
}

/// The header of a 1-D uint8 .npy file of \p size bytes (what an output
/// FILE ending in .npy gets in front of its bytes).
std::string npyHeader(size_t size) {
  std::string h = formatv("{{'descr': '|u1', 'fortran_order': False, "
                          "'shape': ({0},), }",
                          size);
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  uint16_t hl = h.size();
  std::string out = "\x93NUMPY";
  out += (char)1;
  out += (char)0;
  out += (char)(hl & 0xff);
  out += (char)(hl >> 8);
  return out + h;
}

struct Output {
  size_t arg;
  std::string path;
};

/// The description of kernel \p name in \p descs (none without one).
const KernelDescription *
findDescription(const std::optional<std::vector<KernelDescription>> &descs,
                StringRef name) {
  if (!descs)
    return nullptr;
  for (const KernelDescription &d : *descs)
    if (d.name == name)
      return &d;
  return nullptr;
}

/// --list: every kernel's arguments, with the description's types and
/// shapes when there is one.
void listKernels(const CodeObject &co,
                 const std::optional<std::vector<KernelDescription>> &descs) {
  for (const KernelInfo &k : co.kernels()) {
    outs() << k.name << ": " << k.numExplicitArgs() << " args, kernarg "
           << k.kernargSegmentSize << " B, LDS " << k.groupSegmentSize
           << " B, vgpr " << k.vgprCount << ", agpr " << k.agprCount
           << ", sgpr " << k.sgprCount << "\n";
    const KernelDescription *d = findDescription(descs, k.name);
    unsigned i = 0;
    for (const ArgInfo &a : k.args)
      if (a.isExplicit()) {
        outs() << "  @" << a.offset << " " << a.valueKind << " " << a.size
               << " B " << argLabel(k, i, d ? &d->args : nullptr);
        if (d && i < d->args.size()) {
          outs() << " " << d->args[i].dtype;
          if (d->args[i].isBuffer) {
            outs() << " [";
            for (size_t j = 0; j < d->args[i].shape.size(); ++j) {
              const DimSpec &ds = d->args[i].shape[j];
              outs() << (j ? ", " : "");
              if (ds.argIndex >= 0)
                outs() << d->args[ds.argIndex].name;
              else
                outs() << ds.extent;
            }
            outs() << "]";
          }
        }
        outs() << "\n";
        ++i;
      }
  }
}

/// The kernel arguments of the --arg options, in order: buffers read from
/// files or zeroed (their sizes checked against --max-buffer-bytes before
/// anything is allocated), nulls and scalars; \p outputs the buffers to
/// write back, \p scalarKinds the --arg kind of each scalar ("" for
/// buffers). Returns 0, or the exit status after a message.
int parseKernelArgs(std::vector<KernelArg> &args, std::vector<Output> &outputs,
                    std::vector<std::string> &scalarKinds) {
  uint64_t bufferBytes = 0;
  // Buffer sizes are checked before anything is allocated.
  auto reserve = [&](uint64_t n, StringRef a) -> bool {
    if (n > maxBufferBytes - std::min<uint64_t>(bufferBytes, maxBufferBytes)) {
      usage("--arg '" + a + "': " + Twine(n) + " bytes would take the buffers "
            "past the limit of " + Twine(maxBufferBytes) +
            " bytes (--max-buffer-bytes)");
      return false;
    }
    bufferBytes += n;
    return true;
  };
  for (const std::string &a : argOpts) {
    StringRef s(a);
    auto [kind, rest] = s.split(':');
    if (rest.empty() && !s.contains(':') && s != "null")
      return usage("bad --arg '" + a + "' (want KIND:VALUE)");
    std::string label = a;
    if (kind == "in" || kind == "inout") {
      auto [file, outFile] = rest.split(':');
      if (kind == "in" && !outFile.empty())
        return usage("bad --arg '" + a + "' (in:FILE takes no output)");
      auto data = readData(
          file, maxBufferBytes - std::min<uint64_t>(bufferBytes, maxBufferBytes));
      if (!data) {
        errs() << "uq-emu: error: " << toString(data.takeError()) << "\n";
        return 2;
      }
      bufferBytes += data->size();
      args.push_back(KernelArg::buffer(std::move(*data), file.str()));
      if (kind == "inout")
        outputs.push_back({args.size() - 1,
                           outFile.empty() ? file.str() : outFile.str()});
    } else if (kind == "out") {
      auto [file, bytes] = rest.rsplit(':');
      uint64_t n;
      if (file.empty() || bytes.getAsInteger(10, n))
        return usage("bad --arg '" + a + "' (want out:FILE:BYTES)");
      if (!reserve(n, a))
        return 2;
      args.push_back(KernelArg::buffer(std::vector<uint8_t>(n, 0), file.str()));
      outputs.push_back({args.size() - 1, file.str()});
    } else if (s == "null") {
      args.push_back(KernelArg::nullBuffer(label));
    } else if (kind == "zeros") {
      uint64_t n;
      if (rest.getAsInteger(10, n))
        return usage("bad --arg '" + a + "' (want zeros:BYTES)");
      if (!reserve(n, a))
        return 2;
      args.push_back(KernelArg::buffer(std::vector<uint8_t>(n, 0), label));
    } else if (kind == "i32" || kind == "u32" || kind == "i64" ||
               kind == "u64") {
      bool is64 = kind.ends_with("64");
      bool sgn = kind[0] == 'i';
      int64_t sv = 0;
      uint64_t uv = 0;
      bool bad = sgn ? rest.getAsInteger(0, sv) : rest.getAsInteger(0, uv);
      if (bad)
        return usage("bad --arg '" + a + "' (not an integer)");
      if (sgn)
        uv = (uint64_t)sv;
      if (!is64 && (sgn ? (sv < INT32_MIN || sv > INT32_MAX) : uv > UINT32_MAX))
        return usage("bad --arg '" + a + "' (out of range for 32 bits)");
      uint32_t v32 = (uint32_t)uv;
      args.push_back(is64 ? KernelArg::scalar(&uv, 8, label)
                          : KernelArg::scalar(&v32, 4, label));
      scalarKinds.resize(args.size());
      scalarKinds.back() = kind.str();
    } else if (kind == "f32" || kind == "f64") {
      double d;
      if (rest.getAsDouble(d))
        return usage("bad --arg '" + a + "' (not a number)");
      float f = (float)d;
      args.push_back(kind == "f32" ? KernelArg::scalar(&f, 4, label)
                                   : KernelArg::scalar(&d, 8, label));
      scalarKinds.resize(args.size());
      scalarKinds.back() = kind.str();
    } else {
      return usage("bad --arg '" + a +
                   "' (kind must be in, out, inout, zeros, null, i32, u32, "
                   "i64, u64, f32 or f64)");
    }
  }

  return 0;
}

/// The launch's grid, block and limits from --grid, --block,
/// --max-insts, --dynamic-lds and --partial-waves. Returns 0, or the
/// exit status after a message.
int parseGeometry(LaunchConfig &cfg) {
  if (!parseDims(gridOpt, cfg.grid))
    return usage("bad --grid '" + gridOpt +
                 "' (want X[,Y[,Z]], each 1..4294967295)");
  if (!parseDims(blockOpt, cfg.block))
    return usage("bad --block '" + blockOpt +
                 "' (want X[,Y[,Z]], each 1..1024)");
  for (unsigned i = 0; i < 3; ++i)
    if (cfg.block[i] > 1024)
      return usage("bad --block '" + blockOpt +
                   "' (want X[,Y[,Z]], each 1..1024)");
  cfg.maxWaveInstructions = maxInsts;
  cfg.dynamicLds = dynLds;
  cfg.allowPartialWaves = partialWaves;
  return 0;
}

/// --timing / --timing-json: trace into \p recorder (null: no timing),
/// every workgroup or the --timing-sample evenly spaced ones of the
/// \p totalWgs. Returns 0, or the exit status after a message.
int setUpTiming(LaunchConfig &cfg, TimingRecorder *recorder,
                uint64_t totalWgs) {
  if (timingSample.getNumOccurrences() &&
      (timingSample == 0 || timingSample > totalWgs))
    return usage("--timing-sample " + Twine(timingSample.getValue()) +
                 " must be in [1, " + Twine(totalWgs) +
                 "], the grid's workgroups (leave it out to emulate them "
                 "all)");
  if (recorder) {
    cfg.trace = recorder;
    if (timingSample && timingSample < totalWgs) {
      std::vector<uint64_t> idx;
      for (uint64_t i = 0; i < timingSample; ++i)
        idx.push_back(i * totalWgs / timingSample);
      cfg.workgroupIndices = std::move(idx);
    }
  }
  return 0;
}

/// A by-value argument's --arg kind must be its dtype in the description:
/// f32:2 for an i32 would otherwise reach the kernel as the bits of 2.0f
/// (1073741824). Signedness too (u32:V for an i32 is refused: say i32).
/// Returns 0, or the exit status after a message.
int checkScalarKinds(const std::vector<KernelArg> &args,
                     const std::vector<std::string> &scalarKinds,
                     const std::vector<ArgSpec> &specs) {
  for (size_t i = 0; i < args.size() && i < specs.size(); ++i) {
    const ArgSpec &spec = specs[i];
    if (spec.isBuffer || scalarKinds[i].empty() || scalarKinds[i] == spec.dtype)
      continue;
    return usage("--arg '" + args[i].label + "': argument " + Twine(i) + " ('" +
                 spec.name + "') is " + spec.dtype +
                 " in the kernel description; pass " + spec.dtype + ":VALUE");
  }
  return 0;
}

/// Every output file (buffers, timing JSON) whole or none at all; a failed
/// write is an error line, not LLVM's fatal one (uq/Support/Output.h).
/// Returns the exit status.
int writeOutputs(const std::vector<Output> &outputs,
                 const std::vector<KernelArg> &args,
                 const std::string &timingText) {
  std::vector<std::string> headers(outputs.size());
  std::vector<uq::OutputFile> files;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::vector<uint8_t> &bytes = args[outputs[i].arg].bytes;
    if (StringRef(outputs[i].path).ends_with(".npy"))
      headers[i] = npyHeader(bytes.size());
    files.push_back({outputs[i].path,
                     StringRef((const char *)bytes.data(), bytes.size()),
                     /*text=*/false, headers[i]});
  }
  if (!timingJson.empty())
    files.push_back({timingJson, timingText, /*text=*/true});
  if (Error e = uq::writeOutputFiles(files)) {
    errs() << "uq-emu: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}

/// --bench N: N more launches from the pristine arguments; the emulator's
/// speed. Returns the exit status.
int runBench(Emulator &emu, const LaunchConfig &cfg,
             const std::vector<KernelArg> &pristine) {
  uint64_t wi = 0, lo = 0;
  double secs = 0;
  for (unsigned r = 0; r < benchOpt; ++r) {
    std::vector<KernelArg> a = pristine;
    if (Error e = emu.launch(kernelName, cfg, a)) {
      errs() << "uq-emu: error: " << toString(std::move(e)) << "\n";
      return 1;
    }
    wi += emu.stats().waveInstructions;
    lo += emu.stats().laneOps;
    secs += emu.stats().seconds;
  }
  outs() << formatv("bench: {0} launches, {1} wave-instructions, {2} "
                    "lane-ops in {3:f3} s: {4:f2} M wave-inst/s, {5:f1} M "
                    "lane-ops/s\n",
                    benchOpt.getValue(), wi, lo, secs, wi / secs / 1e6,
                    lo / secs / 1e6);
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  std::vector<char *> av;
  for (int i = 0; i < argc; ++i) {
    StringRef a(argv[i]);
    if (i > 0 && (a == "--stats" || a == "-stats")) {
      statsOpt = true;
      continue;
    }
    av.push_back(argv[i]);
  }
  argc = av.size();
  argv = av.data();
  cl::HideUnrelatedOptions(cat);
  // Parse errors are usage errors (exit 2), not cl's default exit(1).
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "uq-emu: run a gfx950 code object on the CPU emulator\n\n"
          "  uq-emu CODE.hsaco --kernel NAME --grid X,Y,Z --block X,Y,Z "
          "--arg ... [--stats]\n\n"
          "  --stats   print dynamic instruction counts per class\n\n"
          "Exit status: 0 success, 1 emulation or load error (out-of-bounds "
          "access,\nunimplemented instruction, ...), 2 bad command line "
          "(including arguments\nthat do not match the kernel).\n",
          &errs()))
    return 2;
  if (opcodesOpt) {
    for (const std::string &n : Emulator::implementedOpcodes())
      outs() << n << "\n";
    outs() << Emulator::numImplementedOpcodes() << " opcodes\n";
    return 0;
  }
  if (inputFile.empty())
    return usage("no code object given");
  if (benchOpt > kMaxBench)
    return usage("--bench " + Twine(benchOpt) + " exceeds the limit of " +
                 Twine(kMaxBench));
  if (dynLds > kMaxLdsBytes)
    return usage("--dynamic-lds " + Twine(dynLds) + " exceeds 160 KiB");
  auto coOr = CodeObject::loadFile(inputFile);
  if (!coOr) {
    errs() << "uq-emu: error: " << toString(coOr.takeError()) << "\n";
    return 1;
  }
  CodeObject &co = **coOr;

  // The kernel description: --kernels-json, else CODE.hsaco.json if present.
  std::optional<std::vector<KernelDescription>> descs;
  std::string jsonPath = kernelsJson;
  if (jsonPath.empty() && !noKernelsJson &&
      sys::fs::exists(inputFile + ".json"))
    jsonPath = inputFile + ".json";
  if (!jsonPath.empty() && noKernelsJson)
    return usage("--kernels-json and --no-kernels-json exclude each other");
  if (!jsonPath.empty()) {
    auto d = loadKernelsJson(jsonPath);
    if (!d) {
      errs() << "uq-emu: error: " << toString(d.takeError()) << "\n";
      return 2;
    }
    descs = std::move(*d);
  }
  if (listOpt) {
    listKernels(co, descs);
    return 0;
  }
  if (kernelName.empty()) {
    if (co.kernels().size() != 1)
      return usage("--kernel is required (the code object has " +
                   Twine(co.kernels().size()) + " kernels)");
    kernelName = co.kernels()[0].name;
  }
  auto kOr = co.findKernel(kernelName);
  if (!kOr) {
    errs() << "uq-emu: error: " << toString(kOr.takeError()) << "\n";
    return 2;
  }
  LaunchConfig cfg;
  if (int rc = parseGeometry(cfg))
    return rc;
  if (descs) {
    const KernelDescription *d = findDescription(descs, (*kOr)->name);
    if (!d)
      return usage("kernel '" + (*kOr)->name + "' is not described in '" +
                   jsonPath + "' (pass --no-kernels-json to run unchecked)");
    cfg.argSpecs = d->args;
    cfg.requiredBlock = d->block;
  }

  std::vector<KernelArg> args;
  std::vector<Output> outputs;
  // The --arg kind of each by-value argument ("" for buffers), checked
  // against the description's dtype below.
  std::vector<std::string> scalarKinds;
  if (int rc = parseKernelArgs(args, outputs, scalarKinds))
    return rc;

  scalarKinds.resize(args.size());
  if (descs && cfg.argSpecs)
    if (int rc = checkScalarKinds(args, scalarKinds, *cfg.argSpecs))
      return rc;

  Emulator emu(co);
  std::vector<KernelArg> pristine;
  if (benchOpt)
    pristine = args;
  bool timing = timingOpt || !timingJson.empty();
  if (timingSample.getNumOccurrences() && !timing)
    return usage("--timing-sample needs --timing or --timing-json");
  TimingRecorder recorder;
  std::string timingText;
  uint64_t totalWgs = (uint64_t)cfg.grid[0] * cfg.grid[1] * cfg.grid[2];
  if (int rc = setUpTiming(cfg, timing ? &recorder : nullptr, totalWgs))
    return rc;
  if (Error e = emu.launch(kernelName, cfg, args)) {
    bool isUsage;
    std::string msg = errorMessage(std::move(e), isUsage);
    errs() << "uq-emu: error: " << msg << "\n";
    return isUsage ? 2 : 1;
  }
  if (timing) {
    auto est = predictLaunch(**kOr, recorder.profiles(), totalWgs, {},
                             cfg.dynamicLds);
    if (!est) {
      errs() << "uq-emu: error: " << toString(est.takeError()) << "\n";
      return 1;
    }
    if (timingOpt)
      outs() << est->str();
    if (!timingJson.empty())
      timingText = formatv("{0:2}", est->toJSON()).str() + "\n";
    cfg.trace = nullptr;
    cfg.workgroupIndices.reset();
  }
  if (int rc = writeOutputs(outputs, args, timingText))
    return rc;
  if (statsOpt)
    outs() << emu.stats().str();
  if (benchOpt)
    return runBench(emu, cfg, pristine);
  return 0;
}
