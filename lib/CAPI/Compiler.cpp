//===- Compiler.cpp - C API: uq IR in, code objects out -------------------===//

#include "uq-c/Compiler.h"

#include "uq-c/Dialects.h"
#include "uq/Target/Compiler.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdlib>
#include <cstring>

namespace {

/// Copies `bytes` into a malloc'ed, NUL-terminated buffer.
void fill(UqBuffer *buffer, llvm::StringRef bytes) {
  if (!buffer)
    return;
  buffer->data = static_cast<char *>(std::malloc(bytes.size() + 1));
  if (!buffer->data) {
    buffer->length = 0;
    return;
  }
  if (!bytes.empty())
    std::memcpy(buffer->data, bytes.data(), bytes.size());
  buffer->data[bytes.size()] = '\0';
  buffer->length = bytes.size();
}

void clear(UqBuffer *buffer) {
  if (buffer)
    *buffer = UqBuffer{nullptr, 0};
}

/// Name under which diagnostics report locations in the input.
constexpr const char *kBufferName = "<uq-c>";

} // namespace

void uqBufferFree(UqBuffer *buffer) {
  if (!buffer)
    return;
  std::free(buffer->data);
  clear(buffer);
}

MlirLogicalResult uqCompile(const char *ir, size_t irLength, const char *chip,
                            const char *emit, int64_t partitionSize,
                            UqBuffer *output, UqBuffer *kernelsJson,
                            UqBuffer *diagnostics) {
  clear(output);
  clear(kernelsJson);
  clear(diagnostics);

  uq::CompileOptions options;
  if (chip)
    options.chip = chip;
  if (emit) {
    std::optional<uq::EmitStage> stage = uq::parseEmitStage(emit);
    if (!stage) {
      fill(diagnostics, (llvm::Twine("error: unknown emit stage '") + emit +
                         "' (expected linalg, kernel, rocdl, llvmir, isa or "
                         "hsaco)")
                            .str());
      return mlirLogicalResultFailure();
    }
    options.emit = *stage;
  }
  if (partitionSize > 0)
    options.partitionSize = partitionSize;

  llvm::Expected<uq::CompileResult> result = uq::compileSource(
      llvm::StringRef(ir ? ir : "", ir ? irLength : 0), kBufferName, options);
  if (!result) {
    fill(diagnostics, llvm::toString(result.takeError()));
    return mlirLogicalResultFailure();
  }
  fill(output, result->output);
  fill(kernelsJson, result->kernelsJson);
  return mlirLogicalResultSuccess();
}

MlirLogicalResult uqRunPipeline(const char *ir, size_t irLength,
                                const char *pipeline, UqBuffer *output,
                                UqBuffer *diagnostics) {
  clear(output);
  clear(diagnostics);
  uqRegisterAllPasses();
  llvm::Expected<std::string> result =
      uq::runPipeline(llvm::StringRef(ir ? ir : "", ir ? irLength : 0),
                      pipeline ? pipeline : "");
  if (!result) {
    fill(diagnostics, llvm::toString(result.takeError()));
    return mlirLogicalResultFailure();
  }
  fill(output, *result);
  return mlirLogicalResultSuccess();
}
