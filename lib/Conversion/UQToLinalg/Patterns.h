//===- Patterns.h - The patterns of convert-uq-to-linalg --------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// One file per family of ops: the coding ops (CodingPatterns.cpp), the
// cache write (CacheWrite.cpp), the decode attention ops and the merge of
// their partitions (DecodeAttention.cpp), the paged (prefill) attention
// (PagedAttention.cpp). UQToLinalg.cpp adds them all and runs the pass.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOLINALG_PATTERNS_H
#define UQ_LIB_CONVERSION_UQTOLINALG_PATTERNS_H

#include "uq/Conversion/UQToLinalg/UQToLinalg.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace uq::to_linalg {

/// Why \p format cannot be lowered, or an empty string.
std::string unsupportedFormat(KVFormatAttr format);

/// A match failure naming the first of an op's key and value formats that
/// cannot be lowered; success when both can.
inline mlir::LogicalResult checkKVFormats(mlir::Operation *op,
                                          KVFormatAttr k, KVFormatAttr v,
                                          mlir::PatternRewriter &rewriter) {
  for (KVFormatAttr f : {k, v})
    if (std::string why = unsupportedFormat(f); !why.empty())
      return rewriter.notifyMatchFailure(op, why);
  return mlir::success();
}

/// A rewrite pattern of one uq op that carries the lowering's options.
template <typename OpTy>
struct UQPattern : public mlir::OpRewritePattern<OpTy> {
  UQPattern(mlir::MLIRContext *ctx, const UQToLinalgOptions &options)
      : mlir::OpRewritePattern<OpTy>(ctx), options(options) {}
  UQToLinalgOptions options;
};

/// uq.rotate on tensors, uq.quantize, uq.dequantize.
void populateCodingPatterns(mlir::RewritePatternSet &patterns,
                            const UQToLinalgOptions &options);
/// uq.cache_write.
void populateCacheWritePatterns(mlir::RewritePatternSet &patterns,
                                const UQToLinalgOptions &options);
/// uq.decode_attention, uq.decode_attention_partial, uq.merge_partitions.
void populateDecodeAttentionPatterns(mlir::RewritePatternSet &patterns,
                                     const UQToLinalgOptions &options);
/// uq.paged_attention.
void populatePagedAttentionPatterns(mlir::RewritePatternSet &patterns,
                                    const UQToLinalgOptions &options);

} // namespace uq::to_linalg

#endif // UQ_LIB_CONVERSION_UQTOLINALG_PATTERNS_H
