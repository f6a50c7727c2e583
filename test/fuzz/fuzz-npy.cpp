//===- fuzz-npy.cpp - libFuzzer harness: .npy reading ---------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Each input is a .npy file's bytes, parsed as uq-run and uq-emu read them
// (uq::runtime::parseNpy), then converted for an argument of every element
// type (npyToTensor) and back (tensorToNpy). Property: what parseNpy
// accepts, serializeNpy writes back to bytes that parse to the same array
// (a mismatch traps).
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/CPURunner.h"
#include "uq/Runtime/Npy.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include "llvm/Support/Error.h"

#include <cstdint>

using namespace uq::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<NpyArray> array = parseNpy(bytes, "fuzz.npy");
  if (!array) {
    llvm::consumeError(array.takeError());
    return 0;
  }
  std::string again = serializeNpy(*array);
  llvm::Expected<NpyArray> back = parseNpy(again, "again.npy");
  if (!back || back->descr != array->descr || back->shape != array->shape ||
      back->data != array->data)
    __builtin_trap();
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I1,
                  DType::I8, DType::I16, DType::I32, DType::I64, DType::F8,
                  DType::F4}) {
    TensorSpec spec{"argument 0", "fuzz", t,
                    std::vector<int64_t>(array->shape.size(),
                                         mlir::ShapedType::kDynamic)};
    llvm::Expected<HostTensor> tensor = npyToTensor(*array, spec, "fuzz.npy");
    if (!tensor) {
      llvm::consumeError(tensor.takeError());
      continue;
    }
    (void)tensorToNpy(*tensor);
  }
  return 0;
}
