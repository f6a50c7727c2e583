//===- Compiler.h - C API: uq IR in, code objects out -------------*- C -*-===//
//
// A string-in/bytes-out interface over uq::compileSource and uq::runPipeline
// (include/uq/Target/Compiler.h). No MLIR object crosses the boundary: the
// input is IR text, the outputs are byte buffers owned by the caller, and
// failures come back as the MLIR diagnostics text (with locations).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_C_COMPILER_H
#define UQ_C_COMPILER_H

#include "mlir-c/Support.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bytes allocated by the uq C API. `data` is NUL-terminated (the terminator
/// is not counted in `length`), so text outputs can be used as C strings;
/// binary outputs (code objects) may contain NUL bytes. Release with
/// uqBufferFree.
typedef struct UqBuffer {
  char *data;
  size_t length;
} UqBuffer;

/// Frees `buffer->data` and resets the buffer to {NULL, 0}. Accepts NULL and
/// empty buffers.
MLIR_CAPI_EXPORTED void uqBufferFree(UqBuffer *buffer);

/// Compiles uq IR text (`ir`, `irLength` bytes, need not be NUL-terminated).
///
/// - `chip`: target chip, NULL for "gfx950".
/// - `emit`: stage to stop at ("linalg", "kernel", "rocdl", "llvmir", "isa",
///   "hsaco"), NULL for "hsaco".
/// - `partitionSize`: tokens per split-K partition; <= 0 for the default
///   (256).
///
/// On success fills `output` (text, or the ELF bytes for "hsaco") and
/// `kernelsJson` (the kernel description, empty below "hsaco") and returns
/// success. On failure fills `diagnostics` with the error text and returns
/// failure; `output` and `kernelsJson` are then left empty. Every out
/// parameter may be NULL; each one that is not is always initialised.
MLIR_CAPI_EXPORTED MlirLogicalResult
uqCompile(const char *ir, size_t irLength, const char *chip, const char *emit,
          int64_t partitionSize, UqBuffer *output, UqBuffer *kernelsJson,
          UqBuffer *diagnostics);

/// Parses `ir`, runs the textual pass pipeline `pipeline` (NUL-terminated,
/// e.g. "builtin.module(canonicalize)", as for `uq-opt --pass-pipeline=`)
/// and prints the result into `output`. Registers every pass first. Errors
/// go to `diagnostics` as for uqCompile.
MLIR_CAPI_EXPORTED MlirLogicalResult uqRunPipeline(const char *ir,
                                                   size_t irLength,
                                                   const char *pipeline,
                                                   UqBuffer *output,
                                                   UqBuffer *diagnostics);

#ifdef __cplusplus
}
#endif

#endif // UQ_C_COMPILER_H
