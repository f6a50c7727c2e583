//===- UQAttrs.td - Attributes of the uq dialect -----------*- tablegen -*-===//

#ifndef UQ_DIALECT_UQ_IR_UQATTRS_TD
#define UQ_DIALECT_UQ_IR_UQATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "uq/Dialect/UQ/IR/UQDialect.td"
include "uq/Dialect/UQ/IR/UQEnums.td"

class UQ_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<UQ_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def UQ_KVFormatAttr : UQ_Attr<"KVFormat", "kv_format"> {
  let summary = "KV-cache row format (#uq.kv_format)";
  let description = [{
    Describes the code of cached elements: the element code, the group size
    along head_dim that shares one scale, the scale encoding, the constant `c`
    of the scale rule (`scale = 2^round(log2(c * absmax))`), the rotation
    applied before grouping and the rounding rule onto the element grid.

    Fields other than the element code are optional and take the defaults of
    that code: for `fp4_e2m1` group 32, `ue8m0` scales, `c = 0.156`, no
    rotation, `ties_down` rounding and the `log_round` scale rule (the
    vLLM-compatible UltraQuant format);
    for `fp8_e4m3` and `bf16` no group, no scale, no rotation and
    `nearest_even`.

    ```mlir
    // UltraQuant keys (rotated) and values.
    #uq.kv_format<fp4_e2m1, rotation = hadamard>
    #uq.kv_format<fp4_e2m1>
    // A variant with another constant.
    #uq.kv_format<fp4_e2m1, c = 0.1666, rotation = hadamard>
    // The accuracy study's encoder: c = 0.196 and a per-group search of the
    // exponent (same bytes layout, same decoder).
    #uq.kv_format<fp4_e2m1, c = 0.196, rotation = hadamard,
                  scale_rule = mse_search>
    // Baselines.
    #uq.kv_format<fp8_e4m3>
    #uq.kv_format<bf16>
    ```

    `c` must be a finite, positive, normal f32 value (the scale rule
    multiplies `float(c)` by the group maximum in f32) and is given only
    with scales. FP8 and BF16 take no scales: MX-style FP8 with UE8M0 group
    scales has no lowering and is rejected.
  }];
  let parameters = (ins
    "::uq::ElementCode":$element,
    "unsigned":$groupSize,
    "::uq::ScaleEncoding":$scale,
    APFloatParameter<"constant c of the scale rule">:$c,
    "::uq::Rotation":$rotation,
    "::uq::Rounding":$rounding,
    "::uq::ScaleRule":$scaleRule);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The UltraQuant defaults for `element` with every other field default.
    static KVFormatAttr getDefault(::mlir::MLIRContext *ctx,
                                   ::uq::ElementCode element,
                                   ::uq::Rotation rotation);
    /// Bits of one stored element code (4, 8 or 16).
    unsigned getElementBits() const;
    /// Bytes of codes for one row of `headDim` elements.
    int64_t getCodeBytes(int64_t headDim) const;
    /// Scale bytes for one row of `headDim` elements (0 without scales).
    int64_t getScaleBytes(int64_t headDim) const;
    bool hasScales() const { return getScale() != ::uq::ScaleEncoding::none; }
    bool isRotated() const { return getRotation() != ::uq::Rotation::none; }
    /// The constant c of the scale rule as a double.
    double getCValue() const { return getC().convertToDouble(); }
    /// Whether `c` can be a scale constant: the scale rule computes
    /// `float(c) * absmax` in f32, so c must be a finite, positive, normal
    /// f32 value, i.e. lie in [2^-126, FLT_MAX] (NaN does not).
    static bool isValidScaleConstant(double c);
    /// `c` as the printer writes it: the shortest decimal that reads back as
    /// the same double, always with a `.` in the mantissa (`1.0e-05`, never
    /// `1e-05`, which MLIR's float-literal lexer does not take).
    static std::string formatScaleConstant(double c);
  }];
}

def UQ_CacheLayoutAttr : UQ_Attr<"CacheLayout", "cache_layout"> {
  let summary = "paged KV-cache byte layout (#uq.cache_layout)";
  let description = [{
    `vllm_slot`: the cache is `tensor<num_blocks x block_size x num_kv_heads x
    slot_bytes x i8>`; the slot of (token, kv head) holds
    `[K codes][K scales][V codes][V scales]` back to back (136 bytes for
    head_dim 128 in the UltraQuant format); `slot_bytes` may be larger
    (padding). Token `t` of a sequence lives in block
    `block_tables[seq][t / block_size]` at offset `t % block_size`.

    `head_major`: the same slots in vLLM's head-major physical order
    (LBHNC, `VLLM_KV_CACHE_LAYOUT`): `tensor<num_blocks x num_kv_heads x
    block_size x slot_bytes x i8>`, so the `block_size` slots of one KV head
    in a block are contiguous (16 UltraQuant slots of head_dim 128: 2176
    bytes, 17 whole 128-byte lines) where `vllm_slot` interleaves the heads
    of a token. Block tables and slot mappings mean the same in both.

    ```mlir
    #uq.cache_layout<vllm_slot>
    #uq.cache_layout<head_major>
    ```
  }];
  let parameters = (ins "::uq::LayoutKind":$kind);
  let assemblyFormat = "`<` $kind `>`";
  let extraClassDeclaration = [{
    /// The cache tensor's dimension of the block size (1 for vllm_slot, 2
    /// for head_major) and of the KV heads (2, resp. 1).
    int64_t getBlockSizeDim() const;
    int64_t getKVHeadsDim() const;
    /// Bytes of one slot holding K and V of one head (without padding).
    int64_t getSlotBytes(int64_t headDim, KVFormatAttr kFormat,
                         KVFormatAttr vFormat) const;
    /// Byte offsets of the four parts within a slot.
    int64_t getKeyScaleOffset(int64_t headDim, KVFormatAttr kFormat) const;
    int64_t getValueCodeOffset(int64_t headDim, KVFormatAttr kFormat) const;
    int64_t getValueScaleOffset(int64_t headDim, KVFormatAttr kFormat,
                                KVFormatAttr vFormat) const;
  }];
}

#endif // UQ_DIALECT_UQ_IR_UQATTRS_TD
