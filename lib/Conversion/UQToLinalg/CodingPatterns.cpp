//===- CodingPatterns.cpp - uq.rotate, uq.quantize, uq.dequantize ---------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The coding ops on tensors: rows flattened to [N, D], coded in tiles of
// TensorBuilder::kRowTile rows (RowCodes.h), expanded back.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RowCodes.h"

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

namespace {

struct RotateLowering : UQPattern<RotateOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(RotateOp op,
                                PatternRewriter &rewriter) const override {
    // Wave-level tiles (vectors) are uq-lower-tile-ops' business.
    if (!isa<RankedTensorType>(op.getType()))
      return failure();
    RowCoder l(rewriter, op.getLoc(), options);
    Value x = op.getInput();
    Type elem = TensorBuilder::elementType(x);
    int64_t dd = TensorBuilder::staticDim(x, TensorBuilder::rank(x) - 1);
    Value r = l.tiledRows(
        l.flattenRows(x), {{elem, dd}},
        [&](TensorBuilder &tb, Value rows) -> SmallVector<Value> {
          RowCoder t(tb);
          Value f = t.rotateRowsF32(rows);
          if (!elem.isF32())
            f = t.elementwise({f}, elem, [&](ScalarEmitter &es, ValueRange a) {
              return es.fromF32(a[0], elem);
            });
          return {f};
        })[0];
    rewriter.replaceOp(op, l.castTo(l.unflattenRows(r, x), op.getType()));
    return success();
  }
};

struct QuantizeLowering : UQPattern<QuantizeOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    KVFormatAttr format = op.getFormat();
    if (!unsupportedFormat(format).empty())
      return rewriter.notifyMatchFailure(op, unsupportedFormat(format));
    RowCoder l(rewriter, op.getLoc(), options);
    Value x = op.getInput();
    int64_t dd = TensorBuilder::staticDim(x, TensorBuilder::rank(x) - 1);
    SmallVector<std::pair<Type, int64_t>> kinds;
    Type i8 = rewriter.getI8Type(), bf16 = rewriter.getBF16Type();
    switch (format.getElement()) {
    case ElementCode::fp4_e2m1:
      kinds = {{i8, format.getCodeBytes(dd)}, {i8, format.getScaleBytes(dd)}};
      break;
    case ElementCode::fp8_e4m3:
      kinds = {{i8, dd}};
      break;
    case ElementCode::bf16:
      kinds = {{bf16, dd}};
      break;
    }
    SmallVector<Value> results =
        l.tiledRows(l.flattenRows(x), kinds,
                    [&](TensorBuilder &tb, Value rows) -> SmallVector<Value> {
                      RowCoder t(tb);
                      Value xf = t.codedDomainRows(rows, format);
                      switch (format.getElement()) {
                      case ElementCode::fp4_e2m1: {
                        auto [codes, scales] = t.encodeFp4(xf, format);
                        return {codes, scales};
                      }
                      case ElementCode::fp8_e4m3:
                        return {t.encodeFp8(xf)};
                      case ElementCode::bf16:
                        return {t.elementwise(
                            {xf}, bf16, [&](ScalarEmitter &es, ValueRange a) {
                              return es.fromF32(a[0], bf16);
                            })};
                      }
                      llvm_unreachable("unknown element code");
                    });
    for (Value &r : results)
      r = l.unflattenRows(r, x);
    for (auto [i, r] : llvm::enumerate(results))
      results[i] = l.castTo(r, op->getResult(i).getType());
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DequantizeLowering : UQPattern<DequantizeOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    KVFormatAttr format = op.getFormat();
    if (!unsupportedFormat(format).empty())
      return rewriter.notifyMatchFailure(op, unsupportedFormat(format));
    RowCoder l(rewriter, op.getLoc(), options);
    Value codes = op.getCodes();
    Type elem = TensorBuilder::elementType(op.getResult());
    Value c2 = l.flattenRows(codes);
    Value r;
    switch (format.getElement()) {
    case ElementCode::fp4_e2m1:
      r = l.decodeFp4(c2, l.flattenRows(op.getScales()), format, elem);
      break;
    case ElementCode::fp8_e4m3:
      r = l.decodeFp8(c2, elem);
      break;
    case ElementCode::bf16:
      r = l.elementwise({c2}, elem, [&](ScalarEmitter &es, ValueRange a) {
        return es.fromF32(es.toF32(a[0]), elem);
      });
      break;
    }
    rewriter.replaceOp(op, l.castTo(l.unflattenRows(r, codes), op.getType()));
    return success();
  }
};

} // namespace

void uq::to_linalg::populateCodingPatterns(RewritePatternSet &patterns,
                                           const UQToLinalgOptions &options) {
  patterns.add<RotateLowering, QuantizeLowering, DequantizeLowering>(
      patterns.getContext(), options);
}
