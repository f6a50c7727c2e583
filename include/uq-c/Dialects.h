//===- Dialects.h - C API: uq dialect and pass registration -------*- C -*-===//
//
// Registration entry points of the uq C API. The dialect handle follows the
// upstream convention (mlirGetDialectHandle__<namespace>__), so that
// `mlirDialectHandleInsertDialect(mlirGetDialectHandle__uq__(), registry)`
// works like for any upstream dialect.
//
// libUQCAPI.so also carries the core MLIR C API (mlir-c/IR.h, Support.h):
// Debian's libMLIR.so exports only the C++ API, so the uq library bundles the
// C entry points a client needs (contexts, registries, modules).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_C_DIALECTS_H
#define UQ_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The handle of the uq dialect alone.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(UQ, uq);

/// Registers what uq-opt knows: the uq dialect, every upstream dialect and
/// extension the uq pipelines produce, and the translations to LLVM IR.
MLIR_CAPI_EXPORTED void uqRegisterAllDialects(MlirDialectRegistry registry);

/// Registers every upstream pass, the uq passes and the uq pipelines in the
/// global registry (what textual pipelines are parsed against). Idempotent.
MLIR_CAPI_EXPORTED void uqRegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

#endif // UQ_C_DIALECTS_H
