//===- CPURunner.h - Run uq functions on the host CPU -----------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Compiles a function whose arguments and results are ranked tensors with
/// the CPU pipeline (uq-cpu-pipeline) and runs it with MLIR's ExecutionEngine.
///
/// Calling convention: the pipeline bufferizes across function boundaries
/// with identity layouts and asks for C wrappers (`llvm.emit_c_interface`),
/// so `_mlir_ciface_<entry>` takes a pointer to the result descriptors
/// (one struct of memref descriptors) followed by one pointer per argument
/// descriptor. Results are copied out of the returned buffers (any strides)
/// into HostTensors and the buffers are freed, unless a result aliases an
/// argument (bufferized in place) or a global constant.
///
//===----------------------------------------------------------------------===//

#ifndef UQ_RUNTIME_CPURUNNER_H
#define UQ_RUNTIME_CPURUNNER_H

#include "uq/Pipelines/Pipelines.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uq {
namespace runtime {

/// Element type of a tensor that crosses the host boundary.
enum class DType {
  F32,
  F64,
  F16,
  BF16,
  I1,
  I8,
  I16,
  I32,
  I64,
  /// Any 8-bit float (f8E4M3FN, f8E8M0FNU, ...): raw bytes.
  F8,
  /// Any 4-bit float (f4E2M1FN): one element per byte in memory, two per
  /// byte (element 2i in the low nibble) in files.
  F4,
};

/// Bytes one element occupies in a HostTensor (sub-byte types: 1).
int64_t storageBytes(DType t);

/// What a function argument or result must be.
struct TensorSpec {
  /// "argument 1" / "result 0".
  std::string name;
  /// The MLIR type, printed ("tensor<4x128xbf16>").
  std::string type;
  DType dtype;
  /// Static sizes; ShapedType::kDynamic (any size) where dynamic.
  std::vector<int64_t> shape;
};

/// A dense row-major tensor in host memory.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// numElements() * storageBytes(dtype) bytes.
  std::vector<uint8_t> data;

  int64_t numElements() const;
  /// Zero-filled tensor of \p shape.
  static HostTensor zeros(DType dtype, std::vector<int64_t> shape);
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data.data());
  }
};

/// Options of CPUProgram::compile.
struct CPURunOptions {
  /// Rotation arithmetic of uq-cpu-pipeline (its other options keep their
  /// defaults: the C interface is required).
  RotationArithmetic rotation = RotationArithmetic::ExactF64;
  /// LLVM optimisation level of the JIT (0..3).
  unsigned optLevel = 2;
  /// Run cache writes and attention through the GPU path's wave-level
  /// kernels (uq-cpu-pipeline's wave-kernels option) instead of
  /// convert-uq-to-linalg.
  bool waveKernels = false;
  /// Split-K partition of the wave-level attention kernels (tokens).
  int64_t partitionSize = 256;
};

/// A compiled entry function, ready to run any number of times.
class CPUProgram {
public:
  /// Parses \p source (MLIR text; \p bufferName names it in diagnostics),
  /// checks that \p entry exists and takes and returns only ranked tensors
  /// of supported element types, lowers the module and JIT-compiles it.
  static llvm::Expected<std::unique_ptr<CPUProgram>>
  compile(llvm::StringRef source, llvm::StringRef entry,
          const CPURunOptions &options = {},
          llvm::StringRef bufferName = "<source>");

  /// compile() on the contents of the file \p path.
  static llvm::Expected<std::unique_ptr<CPUProgram>>
  compileFile(llvm::StringRef path, llvm::StringRef entry,
              const CPURunOptions &options = {});

  ~CPUProgram();

  const std::vector<TensorSpec> &inputs() const { return inputSpecs; }
  const std::vector<TensorSpec> &outputs() const { return outputSpecs; }

  /// Checks \p args against inputs() (count, dtype, shape), runs the entry
  /// and returns its results. The arguments' buffers are handed to the
  /// function as they are and may be updated in place (a bufferized
  /// destination such as the cache of uq.cache_write).
  llvm::Expected<std::vector<HostTensor>> run(std::vector<HostTensor> &args);

  /// Checks one argument against its spec; the error names the argument.
  llvm::Error checkArgument(size_t index, const HostTensor &arg) const;

private:
  CPUProgram();
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::vector<TensorSpec> inputSpecs, outputSpecs;
  std::string entryName;
};

/// "f32", "bf16", "i8", ...
const char *dtypeName(DType t);

} // namespace runtime
} // namespace uq

#endif // UQ_RUNTIME_CPURUNNER_H
