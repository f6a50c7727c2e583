//===- Attention.h - The attention steps on tensors -------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The steps every attention op of convert-uq-to-linalg is made of: the
// operands and geometry (Attention), the prepared query, the decoded K/V
// rows of one sequence read through its block table, the logits and the
// softmax-weighted sum (Partial). The patterns (DecodeAttention.cpp,
// PagedAttention.cpp) put them in loops over sequences, partitions and
// query tokens.
//
// Arithmetic order follows uq::ref so that the CPU path is bit-exact for the
// codes and (f32 accumulation, same summation order, same libm expf) very
// close for the attention: dot products accumulate over the head dimension
// from 0 upwards, the softmax sum and the PV product over tokens from 0
// upwards, the sink joins the max first and the sum last.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOLINALG_ATTENTION_H
#define UQ_LIB_CONVERSION_UQTOLINALG_ATTENTION_H

#include "RowCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace uq::to_linalg {

namespace arith = mlir::arith;

/// Geometry and operands shared by the attention ops.
struct Attention {
  Value cache, tables, lens;
  /// k_mean / v_mean [Hkv, D] in the coded domain of their rows, or null.
  Value kMean, vMean;
  KVFormatAttr kFormat, vFormat;
  int64_t headDim, numKV, group, blockSize;
  int64_t kScaleOff, vCodeOff, vScaleOff;
  /// #uq.cache_layout<head_major>: [blocks, H, bs, slot].
  bool headMajor = false;
  Value numBlocks, capacity; // index
  float scale;
};

struct Partial {
  Value out, max, sum; // [Hkv, group, D], [Hkv, group], [Hkv, group]
};

/// Builds the attention steps at one location.
class AttentionBuilder : public TensorBuilder {
public:
  using TensorBuilder::TensorBuilder;

  /// The operands and geometry of the attention op \p op (any of the
  /// attention ops: they share these accessors).
  template <typename OpTy> Attention attention(OpTy op) {
    Attention a;
    a.cache = op.getCache();
    a.tables = op.getBlockTables();
    a.lens = op.getSeqLens();
    a.kFormat = op.getKFormat();
    a.vFormat = op.getVFormat();
    a.headDim = op.getHeadDim();
    a.numKV = op.getNumKVHeads();
    a.group = op.getGroupSize();
    a.blockSize = op.getBlockSize();
    CacheLayoutAttr layout = op.getLayout();
    a.headMajor = layout.getKind() == LayoutKind::head_major;
    a.kScaleOff = layout.getKeyScaleOffset(a.headDim, a.kFormat);
    a.vCodeOff = layout.getValueCodeOffset(a.headDim, a.kFormat);
    a.vScaleOff = layout.getValueScaleOffset(a.headDim, a.kFormat, a.vFormat);
    a.numBlocks = dimValue(a.cache, 0);
    a.capacity = arith::MulIOp::create(b, loc, dimValue(a.tables, 1),
                                       s.index(a.blockSize));
    // A cache without blocks holds no keys: every sequence has length 0
    // (the block-id clamp to [0, num_blocks - 1] would have no target and
    // read block -1). Every attention op, as the reference and the kernels.
    Value noBlocks = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           a.numBlocks, s.index(0));
    a.capacity =
        arith::SelectOp::create(b, loc, noBlocks, s.index(0), a.capacity);
    a.scale = op.getScale().convertToFloat();
    // Channel means (k_mean / v_mean operands of every attention op).
    if (Value m = op.getKMean())
      a.kMean = RowCoder(*this).codedDomainRows(m, a.kFormat);
    if (Value m = op.getVMean())
      a.vMean = RowCoder(*this).codedDomainRows(m, a.vFormat);
    return a;
  }

  /// The query [S, Hq, D] rotated like the keys and rounded per
  /// \p precision, as [S, Hkv, group, D] f32.
  Value prepareQuery(Value q, const Attention &a, QueryPrecision precision);
  /// The per-query-head sink logits [Hq] as [KV heads, group], or null
  /// without sinks.
  Value groupedSinks(const Attention &a, Value sinks);

  /// min(max(lens[s], 0), capacity) as an index.
  Value seqLen(const Attention &a, Value sIdx);

  /// Decoded K or V rows [len, Hkv, D] f32 of sequence \p sIdx, read through
  /// the block table. Block ids are clamped into the cache (the reference
  /// rejects such tables; compiled code must not read out of bounds).
  Value decodeSequence(const Attention &a, Value sIdx, Value len, bool key);

  /// Logits [Hkv, group, len] = (q . k) * scale, the dot product
  /// accumulated in f32 over the head dimension in order.
  Value logits(const Attention &a, Value qs, Value kd, Value len);

  /// Softmax over \p n logits [Hkv, group, n] with values [n, Hkv, D]: the
  /// max (starting from \p sink when given, else -inf), the sum of
  /// exp(l - max) (plus exp(sink - max) last), and sum_t p_t v_t / sum (0
  /// when n == 0).
  Partial attend(const Attention &a, Value lg, Value vd, Value n, Value sink);

  /// The query rows of sequence \p sIdx as [Hkv, group, D].
  Value querySlice(const Attention &a, Value q4, Value sIdx);
};

} // namespace uq::to_linalg

#endif // UQ_LIB_CONVERSION_UQTOLINALG_ATTENTION_H
