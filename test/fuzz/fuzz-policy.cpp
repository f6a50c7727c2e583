//===- fuzz-policy.cpp - libFuzzer harness: precision-policy JSON ---------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Each input is a precision policy's JSON text, applied as
// uq-apply-precision-policy does (uq::applyPrecisionPolicy) for layers 0 and
// 1 to a module with a cache write and a decode attention over 2 KV heads,
// then verified and printed. Property: the printed module parses back (the
// formats a policy produces print in a form the parser takes; a failure
// traps).
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/Transforms/Passes.h"
#include "uq/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

static const char *kModule = R"mlir(
func.func @layer(%k: tensor<4x2x128xbf16>, %v: tensor<4x2x128xbf16>,
                 %slots: tensor<4xi64>, %cache: tensor<8x16x2x512xi8>,
                 %q: tensor<1x8x128xbf16>, %bt: tensor<1x8xi32>,
                 %lens: tensor<1xi32>) -> tensor<1x8x128xf32> {
  %c = uq.cache_write %k, %v, %slots into %cache
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<4x2x128xbf16>, tensor<4x2x128xbf16>, tensor<4xi64>
        into tensor<8x16x2x512xi8>
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.0883883
      {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<1x8x128xbf16>, tensor<8x16x2x512xi8>, tensor<1x8xi32>,
         tensor<1xi32>) -> tensor<1x8x128xf32>
  return %o : tensor<1x8x128xf32>
}
)mlir";

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef policy(reinterpret_cast<const char *>(data), size);
  DialectRegistry registry;
  uq::registerAllDialects(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  if (!module)
    __builtin_trap(); // the fixed module must parse
  for (int64_t layer : {0, 1}) {
    OwningOpRef<ModuleOp> copy = module->clone();
    if (failed(uq::applyPrecisionPolicy(*copy, policy, "fuzz.json", layer)) ||
        failed(verify(*copy)))
      continue;
    std::string text;
    llvm::raw_string_ostream os(text);
    copy->print(os);
    if (!parseSourceString<ModuleOp>(text, &ctx))
      __builtin_trap(); // printed IR that does not parse back
  }
  return 0;
}
