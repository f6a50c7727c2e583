//===- UQEnums.td - Enumerations of the uq dialect ---------*- tablegen -*-===//

#ifndef UQ_DIALECT_UQ_IR_UQENUMS_TD
#define UQ_DIALECT_UQ_IR_UQENUMS_TD

include "mlir/IR/EnumAttr.td"
include "uq/Dialect/UQ/IR/UQDialect.td"

def UQ_ElementCode : I32EnumAttr<"ElementCode",
    "code of one cached element", [
      I32EnumAttrCase<"fp4_e2m1", 0>,
      I32EnumAttrCase<"fp8_e4m3", 1>,
      I32EnumAttrCase<"bf16", 2>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}

def UQ_ScaleEncoding : I32EnumAttr<"ScaleEncoding",
    "encoding of the per-group scale", [
      I32EnumAttrCase<"none", 0>,
      // A power of two 2^(byte - 127) (UltraQuant; the scaled MFMA's operand).
      I32EnumAttrCase<"ue8m0", 1>,
      // An OCP FP8 E4M3FN value (fp4_e2m1 only): byte = e4m3(c * absmax),
      // codes fp4(x / S); finer than a power of two for the same byte. For
      // values (read after conversion, or folded into the probabilities).
      I32EnumAttrCase<"e4m3", 2>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}

def UQ_Rotation : I32EnumAttr<"Rotation",
    "rotation applied before grouping", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"hadamard", 1>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}

def UQ_Rounding : I32EnumAttr<"Rounding",
    "rounding of a scaled value to the element grid", [
      // Round to nearest; exact midpoints go to the lower (more negative)
      // level. vLLM's UltraQuant reference (bucketize against midpoints).
      I32EnumAttrCase<"ties_down", 0>,
      // IEEE round to nearest, ties to even (what the hardware converts do).
      I32EnumAttrCase<"nearest_even", 1>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}

def UQ_ScaleRule : I32EnumAttr<"ScaleRule",
    "how the exponent of a group's UE8M0 scale is chosen", [
      // e = floor(log2(c * absmax) + 0.5), clamped (UltraQuant, vLLM).
      I32EnumAttrCase<"log_round", 0>,
      // The exponent among {e - 1, e, e + 1} (e from log_round, clamped)
      // whose codes give the least squared error over the group; ties keep
      // the smaller exponent. An encoder-only choice: the bytes decode with
      // the same rule as log_round (docs/accuracy.md).
      I32EnumAttrCase<"mse_search", 1>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}

def UQ_LayoutKind : I32EnumAttr<"LayoutKind", "paged KV-cache layout", [
      // [num_blocks, block_size, num_kv_heads, slot_bytes] u8, each slot
      // [K codes D/2][K scales D/32][V codes D/2][V scales D/32].
      I32EnumAttrCase<"vllm_slot", 0>,
      // [num_blocks, num_kv_heads, block_size, slot_bytes] u8 (vLLM's LBHNC
      // physical order): the block_size slots of one head are contiguous;
      // the same slots.
      I32EnumAttrCase<"head_major", 1>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}

def UQ_QueryPrecision : I32EnumAttr<"QueryPrecision",
    "precision of the rotated query in the QK product", [
      // Rounded to FP8 E4M3 with scale 1, NaN above 448 (vLLM reference).
      I32EnumAttrCase<"fp8_e4m3", 0>,
      // Kept in f32.
      I32EnumAttrCase<"f32", 1>,
      // FP8 E4M3 with one UE8M0 scale per 32 channels, 2^e with e the
      // smallest exponent that puts the group maximum at or below 448 (the
      // scaled MFMA's A-scale operand): no NaN for large queries.
      I32EnumAttrCase<"fp8_e4m3_scaled", 2>
    ]> {
  let cppNamespace = "::uq";
  let genSpecializedAttr = 0;
}
def UQ_QueryPrecisionAttr
    : EnumAttr<UQ_Dialect, UQ_QueryPrecision, "query_precision">;

#endif // UQ_DIALECT_UQ_IR_UQENUMS_TD
