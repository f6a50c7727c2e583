//===- Emulator.h - CPU emulator for gfx950 code objects --------*- C++ -*-===//
//
// uq: a functional emulator that runs AMDGPU gfx950 (CDNA4) code objects on
// the CPU, so that generated kernels can be checked without AMD hardware.
// See docs/emulator.md for the design, the coverage and the semantic sources.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_EMULATOR_EMULATOR_H
#define UQ_EMULATOR_EMULATOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace uq::emu {

class TraceSink;

/// Input limits. Inputs beyond them are errors (docs/emulator.md, "Limits"),
/// so that no malformed or hostile input can exhaust memory or time.
/// Largest code object file or byte string CodeObject::load accepts.
constexpr uint64_t kMaxCodeObjectBytes = 256ull << 20;
/// Largest loaded image (extent of the PT_LOAD segments).
constexpr uint64_t kMaxImageBytes = 256ull << 20;
/// Largest kernarg segment (explicit and hidden arguments).
constexpr uint64_t kMaxKernargBytes = 64ull << 10;
/// LDS per workgroup on gfx950 (static + dynamic).
constexpr uint64_t kMaxLdsBytes = 160ull << 10;
/// Largest private (scratch) segment per work-item.
constexpr uint64_t kMaxPrivateBytes = 128ull << 10;

/// One kernel argument as the AMDHSA metadata note describes it.
struct ArgInfo {
  std::string name;
  std::string valueKind; ///< "global_buffer", "by_value", "hidden_block_count_x", ...
  std::string addressSpace;
  uint32_t offset = 0;
  uint32_t size = 0;
  /// True for the explicit (non-hidden) arguments the caller must supply.
  bool isExplicit() const { return valueKind.rfind("hidden_", 0) != 0; }
};

/// What the loader learnt about one kernel: metadata plus its descriptor.
struct KernelInfo {
  std::string name;
  std::string symbol;
  std::vector<ArgInfo> args;
  uint32_t kernargSegmentSize = 0;
  uint32_t kernargSegmentAlign = 8;
  uint32_t groupSegmentSize = 0;   ///< Static LDS bytes.
  uint32_t privateSegmentSize = 0; ///< Scratch bytes per work-item.
  uint32_t vgprCount = 0, agprCount = 0, sgprCount = 0;
  uint32_t wavefrontSize = 64;
  uint32_t maxFlatWorkgroupSize = 1024;
  /// Raw 64-byte kernel descriptor fields (llvm/Support/AMDHSAKernelDescriptor.h).
  uint64_t descriptorAddress = 0;
  uint64_t entryAddress = 0;
  uint32_t pgmRsrc1 = 0, pgmRsrc2 = 0, pgmRsrc3 = 0;
  uint16_t kernelCodeProperties = 0;
  uint16_t kernargPreload = 0;

  /// Number of explicit arguments.
  unsigned numExplicitArgs() const;
};

class CodeObject;

/// A loaded gfx950 code object (ELF with an AMDHSA metadata note).
class CodeObject {
public:
  /// Parses an ELF code object (v5/v6) held in `bytes` (copied).
  static llvm::Expected<std::unique_ptr<CodeObject>>
  load(llvm::ArrayRef<uint8_t> bytes);
  /// Reads and parses a code object file.
  static llvm::Expected<std::unique_ptr<CodeObject>> loadFile(llvm::StringRef path);

  /// All kernels of the code object, in metadata order.
  const std::vector<KernelInfo> &kernels() const { return kernelInfos; }
  /// Finds a kernel by metadata name or symbol name.
  llvm::Expected<const KernelInfo *> findKernel(llvm::StringRef name) const;
  /// The loaded image (PT_LOAD segments placed at their virtual addresses).
  llvm::ArrayRef<uint8_t> image() const { return imageBytes; }
  /// The gfx target from the metadata, e.g. "amdgcn-amd-amdhsa--gfx950".
  llvm::StringRef target() const { return targetName; }

private:
  CodeObject() = default;
  std::vector<uint8_t> imageBytes;
  std::vector<KernelInfo> kernelInfos;
  std::string targetName;
};

/// One kernel argument supplied by the caller.
struct KernelArg {
  enum class Kind { Buffer, Scalar };
  Kind kind = Kind::Scalar;
  /// Buffer contents (in and out) or the scalar's little-endian bytes.
  std::vector<uint8_t> bytes;
  /// Label used in error messages (e.g. the file name).
  std::string label;
  /// A buffer argument passed as the null pointer (address 0, no memory):
  /// for kernels that take optional pointers and test them against 0.
  bool isNull = false;

  /// A global buffer argument; the kernel sees a pointer to a copy of
  /// `data`, and `bytes` holds the contents after the launch.
  static KernelArg buffer(std::vector<uint8_t> data, std::string label = "");
  /// A global buffer argument that is the null pointer.
  static KernelArg nullBuffer(std::string label = "");
  /// A by-value scalar of any size.
  static KernelArg scalar(const void *data, size_t size, std::string label = "");
  template <typename T> static KernelArg value(T v) {
    return scalar(&v, sizeof(T));
  }
};

/// Dynamic statistics of one launch.
struct Stats {
  uint64_t waveInstructions = 0; ///< All instructions issued by all waves.
  uint64_t laneOps = 0;          ///< Sum of active lanes over vector instructions.
  uint64_t salu = 0, smem = 0, branch = 0, valu = 0, valuTrans = 0;
  uint64_t lds = 0, global = 0, scratch = 0, barriers = 0, waitcnts = 0,
           nops = 0, other = 0;
  uint64_t mfma = 0;
  std::map<std::string, uint64_t> mfmaByKind; ///< Mnemonic -> count.
  uint64_t globalBytesRead = 0, globalBytesWritten = 0;
  uint64_t ldsBytesRead = 0, ldsBytesWritten = 0;
  uint64_t workgroups = 0, waves = 0;
  double seconds = 0; ///< Host wall time of the launch.

  /// Human-readable multi-line summary.
  std::string str() const;
};

/// One dimension of a buffer argument's shape: a fixed extent, or the value
/// of a by-value integer argument of the same launch (`"num_seqs"` in the
/// kernel JSON of docs/uq-compile.md).
struct DimSpec {
  int64_t extent = 0; ///< The extent when argIndex < 0.
  int argIndex = -1;  ///< Explicit-argument index of a by_value integer.
  static DimSpec fixed(int64_t e) { return {e, -1}; }
  static DimSpec arg(int index) { return {0, index}; }
};

/// What the caller knows about one explicit kernel argument beyond the code
/// object's metadata: its name, element type size and shape. Buffers must
/// hold exactly product(shape) * elementSize bytes.
struct ArgSpec {
  std::string name;   ///< For messages (the metadata often has none).
  std::string dtype;  ///< For messages, e.g. "bf16", "i32".
  bool isBuffer = true;
  bool isInteger = false; ///< By-value integers can size other arguments.
  unsigned elementSize = 0;
  std::vector<DimSpec> shape; ///< Buffers only.
  /// The JSON's `access` ("read", "write", "read_write"; "value" for
  /// by-value arguments), or "" when not given.
  std::string access;
};

/// Launch geometry: `grid` counts workgroups per dimension (like HIP's
/// gridDim), `block` counts work-items per workgroup (blockDim).
struct LaunchConfig {
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {64, 1, 1};
  /// Extra dynamic LDS bytes on top of the kernel's static group segment.
  uint32_t dynamicLds = 0;
  /// Stop with an error after this many wave-instructions (0: no limit).
  uint64_t maxWaveInstructions = 0;
  /// When set, every explicit argument is checked against its spec before
  /// the launch (count, kind, scalar size, exact buffer byte size).
  std::optional<std::vector<ArgSpec>> argSpecs;
  /// When set, the block must be exactly this (the JSON's `block`: uq's
  /// kernels are compiled for one workgroup size).
  std::optional<std::array<uint32_t, 3>> requiredBlock;
  /// A workgroup that is not a whole number of waves is rejected unless
  /// this is set or the kernel's max_flat_workgroup_size is below 64:
  /// code written for full waves silently skips the missing lanes.
  bool allowPartialWaves = false;
  /// When set, every executed wave-instruction is reported to it (Trace.h).
  TraceSink *trace = nullptr;
  /// When set, only these workgroups (linear index x + y*gx + z*gx*gy) run;
  /// the kernel still sees the whole grid. For sampling representative
  /// workgroups of a large launch (TimingModel.h).
  std::optional<std::vector<uint64_t>> workgroupIndices;
};

/// Errors caused by the caller (arguments, geometry, limits) carry
/// std::errc::invalid_argument; faults of the kernel and load errors do not.
/// Returns the message of `e` and sets `isUsage` accordingly.
std::string errorMessage(llvm::Error e, bool &isUsage);

/// Checks `args` against `specs` for `kernel` (count, kind, scalar sizes,
/// buffer byte sizes with symbolic dimensions resolved from the scalars).
/// Errors are usage errors naming the argument.
llvm::Error checkArgs(const KernelInfo &kernel,
                      const std::vector<ArgSpec> &specs,
                      const std::vector<KernelArg> &args);

/// The explicit argument list of `kernel` from arguments placed by kernarg
/// offset, for kernels written against a host struct rather than a
/// signature (AMD's hand-written kernels pad every field to 16 bytes and
/// declare the padding as arguments). Every offset given must be that of an
/// explicit argument: buffers at global_buffer ones, scalars at by_value
/// ones no larger than the slot (zero-extended). Buffers not given are the
/// null pointer, scalars not given are zero. Mismatches are usage errors.
llvm::Expected<std::vector<KernelArg>>
argsByOffset(const KernelInfo &kernel,
             const std::map<uint32_t, KernelArg> &byOffset);

/// "'name'" (metadata name), else "'spec name'", else "#index".
std::string argLabel(const KernelInfo &kernel, unsigned index,
                     const std::vector<ArgSpec> *specs = nullptr);

/// Runs kernels of one code object.
class Emulator {
public:
  explicit Emulator(const CodeObject &co);
  ~Emulator();

  /// Runs `kernel` over the whole grid. Buffer arguments are updated in place
  /// with the device contents after the run. Errors (bad arguments,
  /// out-of-bounds accesses, unimplemented instructions) come back as
  /// llvm::Error naming the instruction address and lane where relevant.
  llvm::Error launch(llvm::StringRef kernel, const LaunchConfig &config,
                     std::vector<KernelArg> &args);

  /// Statistics of the last launch.
  const Stats &stats() const { return lastStats; }

  /// Number of distinct mnemonics the execution engine implements.
  static unsigned numImplementedOpcodes();
  /// Their names (sorted), for documentation and tests.
  static std::vector<std::string> implementedOpcodes();

private:
  const CodeObject &co;
  Stats lastStats;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace uq::emu

#endif // UQ_EMULATOR_EMULATOR_H
