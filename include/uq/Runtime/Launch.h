//===- Launch.h - Run the uq ops of a code object ---------------*- C++ -*-===//
//
// The launch runtime: given a code object from uq-compile and its kernel
// JSON, one call per uq op compiled into it (uq.cache_write,
// uq.decode_attention, uq.decode_attention_partial, uq.merge_partitions,
// uq.paged_attention) takes the op's operands as host arrays and does the
// launch sequence of docs/uq-compile.md: it infers the run-time sizes from
// the operands' shapes, checks dtypes, shapes and index operands against the
// description (an error names the operand), allocates the workspaces, picks
// the partition count and the grids by the description's rules, launches the
// kernels in order and returns the outputs.
//
// Kernels run on a Device: the gfx950 emulator (the default), or HIP, whose
// runtime library (libamdhip64.so) is loaded with dlopen when the device is
// created, so building uq needs no ROCm. docs/runtime.md says what has run
// where.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_RUNTIME_LAUNCH_H
#define UQ_RUNTIME_LAUNCH_H

#include "uq/Emulator/KernelsJson.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uq::launch {

/// A dense, row-major host array. `dtype` is a kernel JSON element type:
/// "bf16" (bit patterns), "f16", "f32", "i32", "i64", "u8"; "i8" is
/// accepted where the JSON says "u8" (the cache is bytes either way).
struct Array {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numElements() const;
  /// An array of \p dtype and \p shape holding \p values' bytes.
  template <typename T>
  static Array of(std::string dtype, std::vector<int64_t> shape,
                  const std::vector<T> &values) {
    Array a{std::move(dtype), std::move(shape), {}};
    a.bytes.resize(values.size() * sizeof(T));
    if (!values.empty())
      std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
    return a;
  }
  /// The bytes as elements of T.
  template <typename T> std::vector<T> values() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty())
      std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

/// A device allocation (a device address; 0 for an empty buffer).
using DevicePtr = uint64_t;

/// One explicit kernel argument of a launch: a buffer or an i32 size.
struct LaunchArg {
  bool isBuffer = false;
  DevicePtr buffer = 0;
  int32_t value = 0;
};

/// Where kernels run. Every call either succeeds or returns an error; a
/// Device is used by one thread at a time.
class Device {
public:
  virtual ~Device();
  /// "emulator", or "hip (<path of the loaded library>)".
  virtual std::string name() const = 0;
  /// Loads the code object whose kernels later launches name (once).
  virtual llvm::Error loadCodeObject(llvm::ArrayRef<uint8_t> bytes) = 0;
  /// \p bytes > 0.
  virtual llvm::Expected<DevicePtr> allocate(size_t bytes) = 0;
  virtual llvm::Error release(DevicePtr p) = 0;
  virtual llvm::Error copyToDevice(DevicePtr dst, const void *src,
                                   size_t bytes) = 0;
  virtual llvm::Error copyToHost(void *dst, DevicePtr src, size_t bytes) = 0;
  /// Launches \p kernel (explicit arguments in the JSON's order; null
  /// buffers are empty ones). May return before the kernel finishes.
  virtual llvm::Error launch(const emu::KernelDescription &kernel,
                             std::array<uint32_t, 3> grid,
                             std::array<uint32_t, 3> block,
                             llvm::ArrayRef<LaunchArg> args) = 0;
  /// Waits for every launch.
  virtual llvm::Error synchronize() = 0;
};

/// The gfx950 emulator (uq::emu), every launch checked against the JSON's
/// argument specs (exact buffer sizes, the compiled block).
std::unique_ptr<Device> createEmulatorDevice();

/// HIP: loads \p library with dlopen ("" = $UQ_HIP_LIBRARY if set, else
/// "libamdhip64.so", found by the dynamic loader's search path) and uses
/// hipModuleLoadData, hipModuleGetFunction, hipMalloc, hipMemcpy,
/// hipModuleLaunchKernel, hipStreamSynchronize and hipFree (optionally
/// hipGetErrorString and hipModuleUnload) on the null stream of the current
/// device. An error if the library or one of the entry points is missing.
llvm::Expected<std::unique_ptr<Device>>
createHipDevice(llvm::StringRef library = "");

/// The uq ops a code object can hold.
enum class OpKind {
  CacheWrite,
  DecodeAttention,
  DecodeAttentionPartial,
  MergePartitions,
  PagedAttention,
};
/// "cache_write", "decode_attention", ... (the op's name without "uq.").
const char *opKindName(OpKind k);

/// One operand, output or workspace of an op: a kernel buffer argument.
struct BufferInfo {
  std::string name;
  std::string dtype;
  /// Extents, and the size names of symbolic ones (name non-empty).
  std::vector<std::pair<int64_t, std::string>> shape;
};

/// One uq op of the program, as its kernels describe it.
struct OpInfo {
  /// The kernels' common prefix `<func>_<n>` ("decode_0").
  std::string name;
  OpKind kind;
  /// Kernels in launch order.
  std::vector<std::string> kernels;
  /// Buffers the op reads from the caller (in argument order), those it
  /// returns (a read_write input such as cache_write's cache is both), and
  /// those it allocates itself (written by one kernel, read by a later one).
  std::vector<BufferInfo> inputs, outputs, workspaces;
  /// Run-time sizes (the by-value arguments), in first-use order.
  std::vector<std::string> sizes;
};

struct RunOptions {
  /// Sizes that no operand's shape gives: num_partitions (default
  /// max(1, ceil(max_blocks * block_size / partition_size))) and
  /// num_query_tiles (default num_tokens / tokens_per_tile + num_seqs + 2).
  /// A size an operand gives must not be repeated here with another value.
  std::map<std::string, int64_t> sizes;
  /// Check the index operands' values before launching: every block-table
  /// entry a sequence uses inside the cache, seq_lens within the block
  /// table's capacity, slots before the cache's end (negative = skip),
  /// query_start_loc ascending within the query. The kernels clamp such
  /// indices (docs/kernel-input-policy.md); the check makes them errors.
  bool checkIndices = true;
  /// The most bytes the run's device buffers (operands, workspaces and
  /// outputs together) may take; more is an error before anything is
  /// allocated. 0 = no limit.
  uint64_t maxBufferBytes = uint64_t(16) << 30;
};

/// Operands by argument name (the JSON's: "query", "cache", ...).
using Operands = std::map<std::string, const Array *>;
/// Outputs by argument name.
using Results = std::map<std::string, Array>;

/// Errors about the caller's input (operands, sizes, unknown ops) carry
/// std::errc::invalid_argument (emu::errorMessage's isUsage); everything
/// else (device, code object) does not.
class Program {
public:
  /// \p codeObject and \p kernelsJson as uq-compile wrote them; \p device
  /// null = the emulator. The JSON's kernels must be in the code object.
  static llvm::Expected<std::unique_ptr<Program>>
  load(llvm::ArrayRef<uint8_t> codeObject, llvm::StringRef kernelsJson,
       std::unique_ptr<Device> device = nullptr);
  /// Reads both files (\p jsonPath "" = \p codeObjectPath + ".json").
  static llvm::Expected<std::unique_ptr<Program>>
  loadFile(llvm::StringRef codeObjectPath, llvm::StringRef jsonPath = "",
           std::unique_ptr<Device> device = nullptr);
  ~Program();

  const std::vector<OpInfo> &ops() const;
  Device &device();
  /// The op named \p name ("decode_0"), or the only op of kind \p name
  /// ("decode_attention"; an error if the program has several).
  llvm::Expected<const OpInfo *> findOp(llvm::StringRef name) const;

  /// Checks \p operands and returns every size of \p op (inferred, given or
  /// by rule) without touching the device.
  llvm::Expected<std::map<std::string, int64_t>>
  plan(llvm::StringRef op, const Operands &operands,
       const RunOptions &options = {}) const;
  /// plan(), then allocates, uploads, launches the op's kernels in order,
  /// synchronizes and returns its outputs. Runs of one Program are
  /// serialized (it may be shared between threads).
  llvm::Expected<Results> run(llvm::StringRef op, const Operands &operands,
                              const RunOptions &options = {});

  // The ops with their operands in the uq op's order. Optional operands
  // (sinks, k_mean, v_mean) are required exactly when the op was compiled
  // with them. \p op "" = the only op of that kind.

  /// uq.cache_write: the new cache (the argument is not modified).
  llvm::Expected<Array> cacheWrite(const Array &key, const Array &value,
                                   const Array &slotMapping,
                                   const Array &cache,
                                   const Operands &extra = {},
                                   llvm::StringRef op = "",
                                   const RunOptions &options = {});
  /// uq.decode_attention: out [num_seqs, num_q_heads, head_dim].
  llvm::Expected<Array> decodeAttention(const Array &query, const Array &cache,
                                        const Array &blockTables,
                                        const Array &seqLens,
                                        const Array *sinks = nullptr,
                                        const Operands &extra = {},
                                        llvm::StringRef op = "",
                                        const RunOptions &options = {});
  /// uq.paged_attention: out [num_tokens, num_q_heads, head_dim].
  llvm::Expected<Array>
  pagedAttention(const Array &query, const Array &cache,
                 const Array &blockTables, const Array &seqLens,
                 const Array &queryStartLoc, const Array *sinks = nullptr,
                 const Operands &extra = {}, llvm::StringRef op = "",
                 const RunOptions &options = {});
  /// uq.decode_attention_partial: partial_out, partial_max, partial_sum.
  llvm::Expected<Results>
  decodeAttentionPartial(const Array &query, const Array &cache,
                         const Array &blockTables, const Array &seqLens,
                         const Operands &extra = {}, llvm::StringRef op = "",
                         const RunOptions &options = {});
  /// uq.merge_partitions: out [num_seqs, num_q_heads, head_dim].
  llvm::Expected<Array> mergePartitions(const Array &partialOut,
                                        const Array &partialMax,
                                        const Array &partialSum,
                                        const Array *sinks = nullptr,
                                        llvm::StringRef op = "",
                                        const RunOptions &options = {});

private:
  Program();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace uq::launch

#endif // UQ_RUNTIME_LAUNCH_H
