//===- standalone-main.cpp - Bounded fuzzing without libFuzzer ------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The driver that turns a libFuzzer harness of test/fuzz into an ordinary
// program of the regular build, so that check-uq runs every harness for a
// bounded number of inputs (test/fuzz/*.test) with any compiler and no
// sanitizer (the -DUQ_FUZZ=ON build links libFuzzer instead, for long,
// coverage-guided runs: docs/robustness.md).
//
//   uq-fuzz-H [-runs=N] [-max_time=S] [-seed=N] [-artifact=FILE]
//             [-timeout=S] [-ext=.mlir] [-split-input-file] FILE_OR_DIR...
//
// Runs every seed file (directories are walked recursively, keeping files
// whose name ends in -ext when given; -split-input-file cuts each at its
// `// -----` lines, as the lit tests' --split-input-file does), then N inputs made from the seeds by
// a few random mutations each (byte flips, deletions, duplications,
// splices of two seeds, interesting tokens and numbers inserted), from a
// deterministic random stream (-seed). Stops after N mutated inputs or S
// seconds, whichever comes first, and prints the counts. With -artifact,
// each input is written to FILE before it runs: after a crash FILE holds
// the input that crashed (its reproducer). With -timeout, an input that
// runs longer than S seconds ends the run with exit status 77 and a
// "timeout" line (a hang is a finding like a crash).
//
// The mutator is a plain one written for uq (no libFuzzer code); its idea,
// random byte-level edits of a seed corpus plus a dictionary of tokens, is
// the classic one of libFuzzer/AFL (https://llvm.org/docs/LibFuzzer.html).
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <csignal>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);
// A harness may bring its own, structure-aware mutator (libFuzzer's hook of
// the same name); the driver then uses it for three of every four inputs.
extern "C" __attribute__((weak)) size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                        unsigned seed);

namespace {

/// Tokens that matter to uq's inputs: IR syntax, sizes and numbers at the
/// edges of their types, JSON and .npy fragments.
const char *const kDictionary[] = {
    "0",          "1",          "-1",          "2",           "3",
    "31",         "32",         "33",          "64",          "127",
    "128",        "255",        "256",         "4096",        "65536",
    "2147483647", "2147483648", "-2147483648", "4294967296",  "9223372036854775807",
    "1e39",       "1e-45",      "nan",         "inf",         "0.0",
    "?",          "x",          "x0x",         "{",           "}",
    "(",          ")",          "<",           ">",           "[",
    "]",          ",",          ":",           "%",           "@",
    "\"",         "tensor<",    "vector<",     "memref<",     "i8",
    "i32",        "i64",        "f32",         "bf16",        "f8E4M3FN",
    "fp4_e2m1",   "fp8_e4m3",   "ue8m0",       "none",        "hadamard",
    "#uq.kv_format<", "#uq.cache_layout<vllm_slot>", "gpu.module",
    "func.func",  "scf.for",    "return",      "arith.constant", "uq.",
    "\"schema\"", "\"layers\"", "\"default\"", "null",        "true",
    "'<f4'",      "'<i8'",      "'shape': (",  "'fortran_order': True",
    "\x93NUMPY",  "\x7f" "ELF",
};

class Mutator {
public:
  Mutator(uint64_t seed, const std::vector<std::string> &seeds)
      : rng(seed), seeds(seeds) {}

  std::string next() {
    std::string s = seeds[pick(seeds.size())];
    if (LLVMFuzzerCustomMutator && pick(10) != 0) {
      // Room for the mutator to grow the input (up to 2x + 4 KiB).
      size_t maxSize = 2 * s.size() + 4096;
      std::vector<uint8_t> buf(s.begin(), s.end());
      buf.resize(maxSize);
      size_t n = LLVMFuzzerCustomMutator(
          buf.data(), s.size(), maxSize,
          static_cast<unsigned>(pick(std::numeric_limits<unsigned>::max())));
      return std::string(buf.begin(), buf.begin() + n);
    }
    unsigned edits = 1 + pick(4);
    for (unsigned i = 0; i < edits; ++i)
      mutate(s);
    return s;
  }

private:
  size_t pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  }

  void mutate(std::string &s) {
    switch (pick(7)) {
    case 0: // flip one bit
      if (!s.empty())
        s[pick(s.size())] ^= char(1u << pick(8));
      break;
    case 1: { // delete a range
      if (s.empty())
        break;
      size_t at = pick(s.size());
      s.erase(at, 1 + pick(std::min<size_t>(64, s.size() - at)));
      break;
    }
    case 2: { // duplicate a range (nesting, repetition)
      if (s.empty())
        break;
      size_t at = pick(s.size());
      size_t len = 1 + pick(std::min<size_t>(256, s.size() - at));
      std::string piece = s.substr(at, len);
      unsigned times = 1 + pick(8);
      for (unsigned i = 0; i < times; ++i)
        s.insert(at, piece);
      break;
    }
    case 3: { // insert a dictionary token
      llvm::StringRef tok = kDictionary[pick(std::size(kDictionary))];
      s.insert(pick(s.size() + 1), tok.str());
      break;
    }
    case 4: { // replace a number by a dictionary token
      std::vector<size_t> digits;
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] >= '0' && s[i] <= '9' && (i == 0 || !isdigit(static_cast<unsigned char>(s[i - 1]))))
          digits.push_back(i);
      if (digits.empty())
        break;
      size_t at = digits[pick(digits.size())];
      size_t end = at;
      while (end < s.size() && isdigit(static_cast<unsigned char>(s[end])))
        ++end;
      s.replace(at, end - at, kDictionary[pick(std::size(kDictionary))]);
      break;
    }
    case 5: { // splice: a piece of another seed
      const std::string &other = seeds[pick(seeds.size())];
      if (other.empty())
        break;
      size_t from = pick(other.size());
      size_t len = 1 + pick(std::min<size_t>(512, other.size() - from));
      s.insert(pick(s.size() + 1), other.substr(from, len));
      break;
    }
    case 6: // set a random byte
      if (!s.empty())
        s[pick(s.size())] = char(pick(256));
      break;
    }
  }

  std::mt19937_64 rng;
  const std::vector<std::string> &seeds;
};

bool splitInputFile = false;

extern "C" void onTimeout(int) {
  const char msg[] = "timeout: an input ran longer than -timeout (the "
                     "-artifact file holds it)\n";
  ssize_t ignored = write(2, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(77);
}

void addSeed(llvm::StringRef path, std::vector<std::string> &seeds) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    llvm::errs() << "cannot read seed '" << path
                 << "': " << buf.getError().message() << "\n";
    std::exit(2);
  }
  llvm::StringRef text = (*buf)->getBuffer();
  if (!splitInputFile) {
    seeds.push_back(text.str());
    return;
  }
  std::string chunk;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    if (line.starts_with("// -----")) {
      seeds.push_back(chunk);
      chunk.clear();
      continue;
    }
    chunk += line.str() + "\n";
  }
  seeds.push_back(chunk);
}

} // namespace

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  uint64_t runs = 1000, seed = 1, timeout = 0;
  double maxTime = 0;
  std::string artifact, ext;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef a = argv[i];
    auto value = [&](llvm::StringRef flag) {
      return a.starts_with(flag) ? a.drop_front(flag.size()) : llvm::StringRef();
    };
    if (a.starts_with("-runs=")) {
      if (value("-runs=").getAsInteger(10, runs))
        return llvm::errs() << "bad " << a << "\n", 2;
    } else if (a.starts_with("-seed=")) {
      if (value("-seed=").getAsInteger(10, seed))
        return llvm::errs() << "bad " << a << "\n", 2;
    } else if (a.starts_with("-max_time=")) {
      if (value("-max_time=").getAsDouble(maxTime))
        return llvm::errs() << "bad " << a << "\n", 2;
    } else if (a.starts_with("-timeout=")) {
      if (value("-timeout=").getAsInteger(10, timeout))
        return llvm::errs() << "bad " << a << "\n", 2;
    } else if (a.starts_with("-artifact=")) {
      artifact = value("-artifact=").str();
    } else if (a == "-split-input-file") {
      splitInputFile = true;
    } else if (a.starts_with("-ext=")) {
      ext = value("-ext=").str();
    } else if (a.starts_with("-")) {
      return llvm::errs() << "unknown flag " << a << "\n", 2;
    } else if (llvm::sys::fs::is_directory(a)) {
      std::vector<std::string> found;
      std::error_code ec;
      for (llvm::sys::fs::recursive_directory_iterator it(a, ec), end;
           it != end && !ec; it.increment(ec))
        if (llvm::sys::fs::is_regular_file(it->path()) &&
            llvm::StringRef(it->path()).ends_with(ext))
          found.push_back(it->path());
      std::sort(found.begin(), found.end()); // a deterministic order
      for (const std::string &f : found)
        addSeed(f, seeds);
    } else {
      addSeed(a, seeds);
    }
  }
  if (seeds.empty())
    return llvm::errs() << "no seed inputs\n", 2;

  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  auto runOne = [&](const std::string &input) {
    if (!artifact.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(artifact, ec);
      os << input;
    }
    // A copy in its own allocation, as libFuzzer hands it: reads past the
    // end are not hidden by the std::string's terminator.
    std::vector<uint8_t> bytes(input.begin(), input.end());
    if (timeout)
      alarm(static_cast<unsigned>(timeout));
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    if (timeout)
      alarm(0);
  };
  if (timeout)
    std::signal(SIGALRM, onTimeout);
  for (const std::string &s : seeds)
    runOne(s);
  Mutator mutator(seed, seeds);
  uint64_t done = 0;
  for (; done < runs && (maxTime <= 0 || elapsed() < maxTime); ++done)
    runOne(mutator.next());
  llvm::outs() << "seeds: " << seeds.size() << ", mutated inputs: " << done
               << ", seconds: " << llvm::format("%.1f", elapsed())
               << "\n";
  return 0;
}
