//===- UQOps.cpp - Operations of the uq dialect ---------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace uq;

#define GET_OP_CLASSES
#include "uq/Dialect/UQ/IR/UQOps.cpp.inc"

namespace {
/// Largest GQA ratio: one KV head's query heads must fit the 16 rows of the
/// 16x16x128 scaled MFMA.
constexpr int64_t kMaxGroupSize = 16;

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

bool compatibleDim(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

std::string dimText(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// Checks that `type` has `rank` dimensions; names it `what` in the error.
LogicalResult verifyRank(Operation *op, RankedTensorType type, int64_t rank,
                         StringRef what) {
  if (type.getRank() != rank)
    return op->emitOpError()
           << what << " must have rank " << rank << ", got " << type;
  return success();
}

/// Checks dimension `dim` of `type` against `expected` (dynamic matches
/// anything).
LogicalResult verifyDim(Operation *op, RankedTensorType type, int64_t dim,
                        int64_t expected, StringRef what, StringRef meaning) {
  if (!compatibleDim(type.getDimSize(dim), expected))
    return op->emitOpError()
           << what << " dimension " << dim << " (" << meaning << ") must be "
           << dimText(expected) << ", got " << dimText(type.getDimSize(dim));
  return success();
}

/// Checks that a static head dimension `d` can be coded in `format`.
LogicalResult verifyHeadDim(Operation *op, int64_t d, KVFormatAttr format,
                            StringRef what) {
  if (ShapedType::isDynamic(d))
    return op->emitOpError() << what << " head dimension must be static";
  if (d <= 0)
    return op->emitOpError() << what << " head dimension must be positive";
  if (format.hasScales() && d % format.getGroupSize() != 0)
    return op->emitOpError()
           << what << " head dimension " << d
           << " must be a multiple of the group size " << format.getGroupSize();
  if (format.isRotated() && !llvm::isPowerOf2_64(d))
    return op->emitOpError() << what << " head dimension " << d
                             << " must be a power of two for the "
                                "Walsh-Hadamard rotation";
  return success();
}

/// Checks that `a` and `b` agree on all but the last dimension.
LogicalResult verifyLeadingDims(Operation *op, RankedTensorType a,
                                RankedTensorType b, StringRef aName,
                                StringRef bName) {
  if (a.getRank() != b.getRank())
    return op->emitOpError()
           << aName << " and " << bName << " must have the same rank, got " << a
           << " and " << b;
  for (int64_t i = 0; i + 1 < a.getRank(); ++i)
    if (!compatibleDim(a.getDimSize(i), b.getDimSize(i)))
      return op->emitOpError()
             << aName << " and " << bName << " must agree on dimension " << i
             << ", got " << a << " and " << b;
  return success();
}

/// Type that codes of `format` have: i8 bytes, or bf16 for the bf16 format.
bool isCodeElementType(KVFormatAttr format, Type t) {
  if (format.getElement() == ElementCode::bf16)
    return t.isBF16();
  return t.isInteger(8);
}

/// Common checks of the paged cache against the formats; returns the head
/// dimension the formats need in `headDim`.
LogicalResult verifyCache(Operation *op, RankedTensorType cache,
                          int64_t numKVHeads, int64_t headDim,
                          KVFormatAttr kFormat, KVFormatAttr vFormat,
                          CacheLayoutAttr layout) {
  if (failed(verifyRank(op, cache, 4, "cache")))
    return failure();
  if (failed(verifyHeadDim(op, headDim, kFormat, "key")) ||
      failed(verifyHeadDim(op, headDim, vFormat, "value")))
    return failure();
  const bool headMajor = layout.getKind() == LayoutKind::head_major;
  for (int64_t i = 1; i < 4; ++i)
    if (cache.isDynamicDim(i))
      return op->emitOpError()
             << "cache dimension " << i
             << (headMajor ? " (KV heads, block size, slot bytes)"
                           : " (block size, KV heads, slot bytes)")
             << " must be static, got " << cache;
  if (failed(verifyDim(op, cache, layout.getKVHeadsDim(), numKVHeads, "cache",
                       "KV heads")))
    return failure();
  int64_t need = layout.getSlotBytes(headDim, kFormat, vFormat);
  if (cache.getDimSize(3) < need)
    return op->emitOpError()
           << "cache slots of " << cache.getDimSize(3)
           << " bytes are too small: K and V of head dimension " << headDim
           << " need " << need << " bytes";
  if (cache.getDimSize(layout.getBlockSizeDim()) <= 0)
    return op->emitOpError() << "cache block size must be positive";
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// RotateOp
//===----------------------------------------------------------------------===//

LogicalResult RotateOp::verify() {
  auto type = cast<ShapedType>(getInput().getType());
  if (type.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  int64_t d = type.getDimSize(type.getRank() - 1);
  if (ShapedType::isDynamic(d) || !llvm::isPowerOf2_64(d))
    return emitOpError() << "last dimension must be a static power of two, got "
                         << dimText(d);
  return success();
}

//===----------------------------------------------------------------------===//
// QuantizeOp / DequantizeOp
//===----------------------------------------------------------------------===//

/// Shared shape rules of quantize and dequantize for values `values` and
/// codes/scales types.
static LogicalResult verifyCodedShapes(Operation *op, RankedTensorType values,
                                       RankedTensorType codes,
                                       RankedTensorType scales,
                                       KVFormatAttr format) {
  if (values.getRank() < 1)
    return op->emitOpError("values must have rank >= 1");
  int64_t d = values.getDimSize(values.getRank() - 1);
  if (failed(verifyHeadDim(op, d, format, "row")))
    return failure();
  if (!isCodeElementType(format, codes.getElementType()))
    return op->emitOpError()
           << "codes of " << stringifyElementCode(format.getElement())
           << " must have element type "
           << (format.getElement() == ElementCode::bf16 ? "bf16" : "i8")
           << ", got " << codes.getElementType();
  if (failed(verifyLeadingDims(op, values, codes, "values", "codes")))
    return failure();
  int64_t codeDim =
      format.getElement() == ElementCode::bf16 ? d : format.getCodeBytes(d);
  if (failed(verifyDim(op, codes, codes.getRank() - 1, codeDim, "codes",
                       "bytes of codes per row")))
    return failure();
  if (format.hasScales() != static_cast<bool>(scales))
    return op->emitOpError()
           << (format.hasScales() ? "a format with scales needs a scales "
                                    "tensor"
                                  : "a format without scales takes no scales "
                                    "tensor");
  if (scales) {
    if (failed(verifyLeadingDims(op, values, scales, "values", "scales")))
      return failure();
    if (failed(verifyDim(op, scales, scales.getRank() - 1,
                         format.getScaleBytes(d), "scales",
                         "scale bytes per row")))
      return failure();
  }
  return success();
}

LogicalResult QuantizeOp::verify() {
  RankedTensorType scales =
      getScales() ? tensorType(getScales()) : RankedTensorType();
  return verifyCodedShapes(*this, tensorType(getInput()),
                           tensorType(getCodes()), scales, getFormat());
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType scales =
      getScales() ? tensorType(getScales()) : RankedTensorType();
  return verifyCodedShapes(*this, tensorType(getResult()),
                           tensorType(getCodes()), scales, getFormat());
}

/// Checks an optional channel-mean operand: [numKVHeads, headDim] f32.
static LogicalResult verifyMean(Operation *op, Value mean, int64_t numKVHeads,
                                int64_t headDim, StringRef what) {
  if (!mean)
    return success();
  RankedTensorType type = tensorType(mean);
  if (failed(verifyRank(op, type, 2, what)) ||
      failed(verifyDim(op, type, 0, numKVHeads, what, "KV heads")) ||
      failed(verifyDim(op, type, 1, headDim, what, "head dimension")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// CacheWriteOp
//===----------------------------------------------------------------------===//

LogicalResult CacheWriteOp::verify() {
  RankedTensorType key = tensorType(getKey());
  RankedTensorType value = tensorType(getValue());
  RankedTensorType slots = tensorType(getSlotMapping());
  if (failed(verifyRank(*this, key, 3, "key")))
    return failure();
  if (key.getShape() != value.getShape())
    return emitOpError() << "key and value must have the same shape, got "
                         << key << " and " << value;
  if (failed(verifyRank(*this, slots, 1, "slot_mapping")) ||
      failed(verifyDim(*this, slots, 0, key.getDimSize(0), "slot_mapping",
                       "tokens")))
    return failure();
  if (key.isDynamicDim(1))
    return emitOpError("key dimension 1 (KV heads) must be static");
  if (failed(verifyCache(*this, getCacheType(), key.getDimSize(1),
                         key.getDimSize(2), getKFormat(), getVFormat(),
                         getLayout())) ||
      failed(verifyMean(*this, getKMean(), key.getDimSize(1), key.getDimSize(2),
                        "k_mean")) ||
      failed(verifyMean(*this, getVMean(), key.getDimSize(1), key.getDimSize(2),
                        "v_mean")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Attention ops
//===----------------------------------------------------------------------===//

/// Checks shared by decode_attention and decode_attention_partial.
template <typename OpTy> static LogicalResult verifyAttentionOperands(OpTy op) {
  RankedTensorType query = op.getQueryType();
  if (failed(verifyRank(op, query, 3, "query")))
    return failure();
  if (query.isDynamicDim(1) || query.isDynamicDim(2))
    return op.emitOpError()
           << "query heads and head dimension must be static, got " << query;
  RankedTensorType cache = op.getCacheType();
  if (failed(verifyRank(op, cache, 4, "cache")))
    return failure();
  int64_t hq = query.getDimSize(1),
          hkv = cache.getDimSize(op.getLayout().getKVHeadsDim());
  if (ShapedType::isDynamic(hkv) || hkv <= 0)
    return op.emitOpError("cache KV heads must be static and positive");
  if (hq % hkv != 0)
    return op.emitOpError()
           << "query heads (" << hq << ") must be a multiple of KV heads ("
           << hkv << ")";
  if (hq / hkv > kMaxGroupSize)
    return op.emitOpError()
           << "GQA ratio " << hq / hkv << " exceeds " << kMaxGroupSize
           << " (the query heads of one KV head must fit 16 MFMA rows)";
  if (failed(verifyCache(op, cache, hkv, query.getDimSize(2), op.getKFormat(),
                         op.getVFormat(), op.getLayout())))
    return failure();
  RankedTensorType tables = tensorType(op.getBlockTables());
  if (failed(verifyRank(op, tables, 2, "block_tables")) ||
      failed(verifyDim(op, tables, 0, query.getDimSize(0), "block_tables",
                       "sequences")))
    return failure();
  RankedTensorType lens = tensorType(op.getSeqLens());
  if (failed(verifyRank(op, lens, 1, "seq_lens")) ||
      failed(
          verifyDim(op, lens, 0, query.getDimSize(0), "seq_lens", "sequences")))
    return failure();
  float scale = op.getScale().convertToFloat();
  if (!std::isfinite(scale))
    return op.emitOpError("scale must be finite");
  if (op.getQueryPrecision() == QueryPrecision::fp8_e4m3_scaled &&
      query.getDimSize(2) % 32 != 0)
    return op.emitOpError()
           << "query_precision fp8_e4m3_scaled needs a head dimension that is "
              "a multiple of 32 (one scale per 32 channels), got "
           << query.getDimSize(2);
  if (failed(verifyMean(op, op.getKMean(), hkv, query.getDimSize(2),
                        "k_mean")) ||
      failed(verifyMean(op, op.getVMean(), hkv, query.getDimSize(2),
                        "v_mean")))
    return failure();
  return success();
}

LogicalResult DecodeAttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this)))
    return failure();
  if (getSinks()) {
    RankedTensorType sinks = tensorType(getSinks());
    if (failed(verifyRank(*this, sinks, 1, "sinks")) ||
        failed(verifyDim(*this, sinks, 0, getNumQueryHeads(), "sinks",
                         "query heads")))
      return failure();
  }
  RankedTensorType result = tensorType(getResult());
  if (failed(verifyRank(*this, result, 3, "result")))
    return failure();
  for (int64_t i = 0; i < 3; ++i)
    if (failed(verifyDim(*this, result, i, getQueryType().getDimSize(i),
                         "result", "same as the query")))
      return failure();
  return success();
}

LogicalResult DecodeAttentionPartialOp::verify() {
  if (failed(verifyAttentionOperands(*this)))
    return failure();
  RankedTensorType out = tensorType(getOut());
  RankedTensorType max = tensorType(getMax());
  RankedTensorType sum = tensorType(getSum());
  if (failed(verifyRank(*this, out, 4, "out")) ||
      failed(verifyRank(*this, max, 3, "max")) ||
      failed(verifyRank(*this, sum, 3, "sum")))
    return failure();
  if (max != sum)
    return emitOpError() << "max and sum must have the same type, got " << max
                         << " and " << sum;
  RankedTensorType query = getQueryType();
  if (failed(
          verifyDim(*this, out, 0, query.getDimSize(0), "out", "sequences")) ||
      failed(verifyDim(*this, out, 1, query.getDimSize(1), "out",
                       "query heads")) ||
      failed(verifyDim(*this, out, 3, query.getDimSize(2), "out",
                       "head dimension")))
    return failure();
  for (int64_t i = 0; i < 3; ++i)
    if (failed(
            verifyDim(*this, max, i, out.getDimSize(i), "max", "same as out")))
      return failure();
  int64_t maxBlocks = getMaxBlocksPerSeq();
  if (out.isDynamicDim(2) || ShapedType::isDynamic(maxBlocks))
    return emitOpError("the partition count and the block table width must "
                       "be static");
  int64_t capacity = maxBlocks * getBlockSize();
  int64_t parts = llvm::divideCeil(capacity, getPartitionSize());
  if (out.getDimSize(2) != std::max<int64_t>(parts, 1))
    return emitOpError() << "out dimension 2 (partitions) must be " << parts
                         << " = ceil(" << capacity << " tokens / partition "
                         << getPartitionSize() << "), got "
                         << out.getDimSize(2);
  return success();
}

LogicalResult MergePartitionsOp::verify() {
  RankedTensorType out = tensorType(getOut());
  RankedTensorType max = tensorType(getMax());
  RankedTensorType sum = tensorType(getSum());
  if (failed(verifyRank(*this, out, 4, "out")) ||
      failed(verifyRank(*this, max, 3, "max")))
    return failure();
  if (max != sum)
    return emitOpError() << "max and sum must have the same type, got " << max
                         << " and " << sum;
  for (int64_t i = 0; i < 3; ++i)
    if (failed(
            verifyDim(*this, max, i, out.getDimSize(i), "max", "same as out")))
      return failure();
  if (getSinks()) {
    RankedTensorType sinks = tensorType(getSinks());
    if (failed(verifyRank(*this, sinks, 1, "sinks")) ||
        failed(verifyDim(*this, sinks, 0, out.getDimSize(1), "sinks",
                         "query heads")))
      return failure();
  }
  RankedTensorType result = tensorType(getResult());
  if (failed(verifyRank(*this, result, 3, "result")))
    return failure();
  if (failed(verifyDim(*this, result, 0, out.getDimSize(0), "result",
                       "sequences")) ||
      failed(verifyDim(*this, result, 1, out.getDimSize(1), "result",
                       "query heads")) ||
      failed(verifyDim(*this, result, 2, out.getDimSize(3), "result",
                       "head dimension")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// PagedAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult PagedAttentionOp::verify() {
  RankedTensorType query = getQueryType();
  if (failed(verifyRank(*this, query, 3, "query")))
    return failure();
  if (query.isDynamicDim(1) || query.isDynamicDim(2))
    return emitOpError()
           << "query heads and head dimension must be static, got " << query;
  RankedTensorType cache = getCacheType();
  if (failed(verifyRank(*this, cache, 4, "cache")))
    return failure();
  int64_t hq = query.getDimSize(1),
          hkv = cache.getDimSize(getLayout().getKVHeadsDim());
  if (ShapedType::isDynamic(hkv) || hkv <= 0)
    return emitOpError("cache KV heads must be static and positive");
  if (hq % hkv != 0)
    return emitOpError() << "query heads (" << hq
                         << ") must be a multiple of KV heads (" << hkv << ")";
  if (hq / hkv > kMaxGroupSize)
    return emitOpError() << "GQA ratio " << hq / hkv << " exceeds "
                         << kMaxGroupSize
                         << " (the query heads of one KV head must fit 16 "
                            "MFMA rows)";
  if (failed(verifyCache(*this, cache, hkv, query.getDimSize(2), getKFormat(),
                         getVFormat(), getLayout())))
    return failure();

  // The sequence count comes from seq_lens, else block_tables, else
  // query_start_loc; the others must agree where static.
  RankedTensorType lens = tensorType(getSeqLens());
  RankedTensorType tables = tensorType(getBlockTables());
  RankedTensorType starts = tensorType(getQueryStartLoc());
  if (failed(verifyRank(*this, lens, 1, "seq_lens")) ||
      failed(verifyRank(*this, tables, 2, "block_tables")) ||
      failed(verifyRank(*this, starts, 1, "query_start_loc")))
    return failure();
  if (starts.getDimSize(0) == 0)
    return emitOpError("query_start_loc must have num_seqs + 1 >= 1 entries, "
                       "got 0");
  int64_t seqs = lens.getDimSize(0);
  if (ShapedType::isDynamic(seqs))
    seqs = tables.getDimSize(0);
  if (ShapedType::isDynamic(seqs) && !starts.isDynamicDim(0))
    seqs = starts.getDimSize(0) - 1;
  if (failed(verifyDim(*this, tables, 0, seqs, "block_tables", "sequences")) ||
      failed(verifyDim(*this, starts, 0,
                       ShapedType::isDynamic(seqs) ? seqs : seqs + 1,
                       "query_start_loc", "sequences + 1")))
    return failure();

  if (!std::isfinite(getScale().convertToFloat()))
    return emitOpError("scale must be finite");
  if (getQueryPrecision() == QueryPrecision::fp8_e4m3_scaled &&
      query.getDimSize(2) % 32 != 0)
    return emitOpError()
           << "query_precision fp8_e4m3_scaled needs a head dimension that is "
              "a multiple of 32 (one scale per 32 channels), got "
           << query.getDimSize(2);
  if (getSinks()) {
    RankedTensorType sinks = tensorType(getSinks());
    if (failed(verifyRank(*this, sinks, 1, "sinks")) ||
        failed(verifyDim(*this, sinks, 0, hq, "sinks", "query heads")))
      return failure();
  }
  if (failed(verifyMean(*this, getKMean(), hkv, query.getDimSize(2),
                        "k_mean")) ||
      failed(verifyMean(*this, getVMean(), hkv, query.getDimSize(2),
                        "v_mean")))
    return failure();
  RankedTensorType result = tensorType(getResult());
  if (failed(verifyRank(*this, result, 3, "result")))
    return failure();
  for (int64_t i = 0; i < 3; ++i)
    if (failed(verifyDim(*this, result, i, query.getDimSize(i), "result",
                         "same as the query")))
      return failure();
  return success();
}
