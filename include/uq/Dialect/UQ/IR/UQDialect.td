//===- UQDialect.td - The uq dialect definition ------------*- tablegen -*-===//
//
// The uq dialect: 4-bit (UltraQuant) KV-cache attention.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_DIALECT_UQ_IR_UQDIALECT_TD
#define UQ_DIALECT_UQ_IR_UQDIALECT_TD

include "mlir/IR/OpBase.td"

def UQ_Dialect : Dialect {
  let name = "uq";
  let cppNamespace = "::uq";
  let summary = "Quantized (UltraQuant FP4/UE8M0) KV-cache attention";
  let description = [{
    The `uq` dialect expresses the operations of a paged, quantized KV cache
    for LLM decode attention: the Walsh-Hadamard rotation of keys, the
    quantization of 32-channel groups to FP4 E2M1 codes with one UE8M0
    power-of-two scale (the UltraQuant format, bit-compatible with vLLM's
    `ultraquant_4bit` cache), the paged cache write through a slot mapping, and
    decode attention over the paged cache (GQA, block tables, sequence lengths,
    optional attention sinks).

    Ops work on tensors. Raw bytes (packed FP4 codes, UE8M0 scale bytes, FP8
    codes, cache slots) are `i8` tensors; their meaning is given by a
    `#uq.kv_format` attribute and, for the cache, a `#uq.cache_layout`.
    The executable meaning of every op is its lowering to linalg on the CPU
    (`convert-uq-to-linalg`), checked against the reference library.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes (defined with their storage in UQAttrs.cpp).
    void registerAttributes();
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

class UQ_Op<string mnemonic, list<Trait> traits = []>
    : Op<UQ_Dialect, mnemonic, traits>;

#endif // UQ_DIALECT_UQ_IR_UQDIALECT_TD
