//===- Dialects.cpp - C API: uq dialect and pass registration -------------===//

#include "uq-c/Dialects.h"

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/InitAll.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(UQ, uq, uq::UQDialect)

void uqRegisterAllDialects(MlirDialectRegistry registry) {
  uq::registerAllDialects(*unwrap(registry));
}

void uqRegisterAllPasses(void) {
  // The global pass registry must see each pipeline once.
  static std::once_flag once;
  std::call_once(once, [] { uq::registerAllPasses(); });
}
