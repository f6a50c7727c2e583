//===- Program.h - What decode and paged runs share -------------*- C++ -*-===//
//
// Internal to lib/Harness: random inputs as the kernels see them, the
// paging of a problem over a shuffled pool of cache blocks, the uq program's
// format attributes, and a compiled program (code object + kernel JSON)
// whose kernels are launched by the JSON's description alone.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_HARNESS_PROGRAM_H
#define UQ_LIB_HARNESS_PROGRAM_H

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/KernelsJson.h"
#include "uq/Harness/EmulatedAttention.h"
#include "uq/Target/Compiler.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace uq::harness {

llvm::Error makeError(const llvm::Twine &msg);

template <typename T> std::vector<uint8_t> toBytes(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T> std::vector<T> fromBytes(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

/// An IEEE half (bits) as a float.
float halfToFloat(uint16_t h);

/// Random values as the kernels see them (rounded to the element type) and
/// as floats for the reference.
struct Tensor {
  std::vector<float> values;
  std::vector<uint8_t> bytes;
};

Tensor makeTensor(std::mt19937_64 &rng, size_t n, float scale,
                  llvm::StringRef dtype);

/// Replaces the first `given.size()` values of `t` (element type `dtype`).
llvm::Error overwrite(Tensor &t, const std::vector<float> &given, size_t offset,
                      llvm::StringRef dtype, llvm::StringRef what);

/// Why the harness cannot build \p pb's problem ("" if it can): input
/// types it does not generate, options of UltraQuant caches given another
/// format (they would be ignored).
std::string configError(const AttentionProblem &pb);

/// The #uq.kv_format attributes of a problem.
std::string formatAttrs(const AttentionProblem &pb);

/// The optional operands of the accuracy options (docs/accuracy.md): ` k_mean
/// %mk : T` style text for the cache write (\p withTypes) or ` k_mean %mk` for
/// the attention.
std::string meanOperands(const AttentionProblem &pb, bool withTypes);

/// Function arguments (", %mk: T") or operand types (", T") of the means.
std::string meanArgs(const AttentionProblem &pb, bool names);

/// The channel means of a problem (AttentionProblem::kMean / vMean):
/// drawn from \p rng (after everything else, so that problems without them
/// keep their data) and added to the key / value rows, which the cache
/// write then centres again. Each mean stays empty when its option is off
/// (configError has refused them on other formats).
void drawMeans(const AttentionProblem &pb, std::mt19937_64 &rng, Tensor &k,
               Tensor &v, std::vector<float> &kMean, std::vector<float> &vMean);

/// Paging of a problem: block tables over a shuffled pool, slots.
struct Paging {
  int64_t seqs = 0, maxBlocks = 1, numBlocks = 1, slotBytes = 0;
  std::vector<int32_t> tables;
  /// One slot per token (sequence-major), then one skipped (-1) and one past
  /// the cache (also skipped).
  std::vector<int64_t> slots;
  int64_t tokens() const { return static_cast<int64_t>(slots.size()); }
};

llvm::Expected<Paging> makePaging(const AttentionProblem &pb,
                                  std::mt19937_64 &rng);

/// A compiled problem: its kernel JSON, code object and kernels (the base
/// of both compiled harnesses' Impl).
struct EmulatedProgram {
  std::string json, hsaco;
  std::unique_ptr<emu::CodeObject> codeObject;
  std::vector<emu::KernelDescription> kernels;
};

/// Compiles \p ir (named \p name in messages) through uq-compile's
/// pipeline and loads the code object and the kernel JSON.
llvm::Expected<EmulatedProgram> compileAndLoad(const std::string &ir,
                                               llvm::StringRef name,
                                               const CompileOptions &options);

/// Launches a kernel of the code object by the JSON's description: buffers
/// and scalars by argument name, the grid from the JSON's grid rule, every
/// argument checked against the JSON before the launch.
struct Launcher {
  emu::Emulator &em;
  const std::vector<emu::KernelDescription> &kernels;
  /// Workgroups added to each grid dimension (AttentionProblem::extraGrid).
  std::array<uint32_t, 3> extraGrid = {0, 0, 0};

  llvm::Error launch(llvm::StringRef name,
                     std::map<std::string, std::vector<uint8_t>> &buffers,
                     const std::map<std::string, int64_t> &scalars,
                     emu::Stats &stats);
};

} // namespace uq::harness

#endif // UQ_LIB_HARNESS_PROGRAM_H
