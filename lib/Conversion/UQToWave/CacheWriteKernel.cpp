//===- CacheWriteKernel.cpp - Wave-level cache write ----------------------===//
//
// One workgroup codes one (token, KV head) row of K (z = 0) or V (z = 1)
// into its slot: the format's rotation (f64 butterfly, one rounding: the
// reference's ExactF64), the group absmax, the scale byte (log_round, or
// mse_search among three candidates with the f64 squared error summed as a
// tree in element order: vector.multi_reduction <add> is such a tree in
// every lowering of this stage), the ties-down FP4 codes, packed two per
// byte. FP8 E4M3 and bf16 rows are rounded to nearest even. Negative and
// out-of-range slots are skipped.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "uq/Codegen/Numerics.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace uq;
using namespace uq::wave;
using arith::CmpIPredicate;
using uq::ScalarEmitter;

namespace {

constexpr int64_t kGroup = 32;

/// Codes the f32 row \p x [D] in format \p fmt and stores its bytes at
/// byte offset \p slot of \p cache (codes at \p codeOff, scales at
/// \p scaleOff).
void writeRow(WaveBuilder &w, KVFormatAttr fmt, Value x, Value cache,
              Value slot, int64_t codeOff, int64_t scaleOff) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  const int64_t d = cast<VectorType>(x.getType()).getDimSize(0);
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  if (fmt.isRotated()) {
    Value x64 = arith::ExtFOp::create(b, loc, w.vec({d}, b.getF64Type()), x);
    x = arith::TruncFOp::create(b, loc, w.vec({d}, b.getF32Type()),
                                uq::RotateOp::create(b, loc, x64));
  }
  Value codeAt = w.add(slot, w.idx(codeOff));
  switch (fmt.getElement()) {
  case ElementCode::fp8_e4m3: {
    ScalarEmitter es(b, loc, {d});
    Value codes =
        arith::TruncIOp::create(b, loc, w.vec({d}, i8), es.fp8Encode(x));
    vector::StoreOp::create(b, loc, codes, cache, ValueRange{codeAt});
    return;
  }
  case ElementCode::bf16: {
    ScalarEmitter es(b, loc, {d});
    Value bits = arith::TruncIOp::create(b, loc, w.vec({d}, b.getI16Type()),
                                         es.bf16Bits(x));
    vector::StoreOp::create(b, loc, w.bitcast(bits, i8), cache,
                            ValueRange{codeAt});
    return;
  }
  case ElementCode::fp4_e2m1:
    break;
  }
  const int64_t groups = d / kGroup;
  Value xg = vector::ShapeCastOp::create(b, loc, w.vec({groups, kGroup},
                                                       b.getF32Type()), x);
  // Group absmax: NaN propagates (maximumf) and, like Inf, gives the zero
  // sentinel.
  Value amax = w.reduceRows(vector::CombiningKind::MAXIMUMF,
                            math::AbsFOp::create(b, loc, xg),
                            w.constSplat(b.getF32FloatAttr(0.0f), {groups}));
  ScalarEmitter gs(b, loc, {groups});
  ScalarEmitter es(b, loc, {groups, kGroup});
  bool tiesDown = fmt.getRounding() == Rounding::ties_down;
  // UE8M0 scales: codes fp4(x * 2^-e); E4M3 scales (values only): codes
  // fp4(x / S), S the byte's E4M3 value (a correctly rounded f32 division,
  // as uq::ref and the CPU path).
  const bool e4m3 = fmt.getScale() == ScaleEncoding::e4m3;
  Value byte0 = e4m3 ? gs.e4m3ScaleByte(gs.bits(amax), fmt.getCValue())
                     : gs.ue8m0ScaleByte(gs.bits(amax), fmt.getCValue());
  auto scaleOf = [&](Value byte) {
    return e4m3 ? gs.fp8Decode(byte) : gs.e8m0Normal(byte);
  };
  auto codesFor = [&](Value byte) {
    if (e4m3)
      return es.fp4Encode(
          arith::DivFOp::create(b, loc, xg,
                                w.broadcastRows(scaleOf(byte), kGroup)),
          tiesDown);
    Value inv = w.broadcastRows(gs.e8m0Reciprocal(byte), kGroup);
    return es.fp4Encode(arith::MulFOp::create(b, loc, xg, inv), tiesDown);
  };
  Value byte = byte0;
  if (fmt.getScaleRule() == ScaleRule::mse_search) {
    Value best, bestErr;
    Value x64 =
        arith::ExtFOp::create(b, loc, w.vec({groups, kGroup}, b.getF64Type()),
                              xg);
    for (int64_t k = 0; k < 3; ++k) {
      Value cb = gs.scaleCandidateByte(byte0, gs.i32(k - 1), e4m3);
      Value dec = arith::MulFOp::create(b, loc, es.fp4Decode(codesFor(cb)),
                                        w.broadcastRows(scaleOf(cb), kGroup));
      Value diff = arith::SubFOp::create(
          b, loc,
          arith::ExtFOp::create(b, loc, w.vec({groups, kGroup}, b.getF64Type()),
                                dec),
          x64);
      Value err = w.reduceRows(
          vector::CombiningKind::ADD, arith::MulFOp::create(b, loc, diff, diff),
          w.constSplat(b.getF64FloatAttr(0.0), {groups}));
      if (k == 0) {
        best = cb;
        bestErr = err;
        continue;
      }
      // Strictly smaller wins: ties keep the smaller exponent.
      Value better = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                           err, bestErr);
      best = w.select(better, cb, best);
      bestErr = w.select(better, err, bestErr);
    }
    Value sentinel = w.cmp(CmpIPredicate::eq, byte0, gs.i32(0));
    byte = w.select(sentinel, gs.i32(0), best);
  }
  Value codes = codesFor(byte);
  // A zero-sentinel group codes every element as 0.
  Value zeroGroup = w.broadcastRows(w.cmp(CmpIPredicate::eq, byte, gs.i32(0)),
                                    kGroup);
  codes = w.select(zeroGroup, es.i32(0), codes);
  Value flat = vector::ShapeCastOp::create(b, loc, w.vec({d}, i32), codes);
  Value nibbles =
      arith::TruncIOp::create(b, loc, w.vec({d}, b.getIntegerType(4)), flat);
  vector::StoreOp::create(b, loc, w.bitcast(nibbles, i8), cache,
                          ValueRange{codeAt});
  Value scales = arith::TruncIOp::create(b, loc, w.vec({groups}, i8), byte);
  vector::StoreOp::create(b, loc, scales, cache,
                          ValueRange{w.add(slot, w.idx(scaleOff))});
}

/// The k_mean / v_mean arguments (the channel means of docs/accuracy.md),
/// after the
/// scalars so that the other arguments keep their positions.
void addMeanArgs(const CacheWriteConfig &cfg, KernelSpec &spec) {
  const int64_t d = cfg.headDim, hkv = cfg.numKVHeads;
  if (cfg.kMean)
    spec.args.push_back({"k_mean", "global_buffer", "f32", {hkv, d}, "read",
                         "per-channel key mean of each KV head, subtracted "
                         "before the rotation"});
  if (cfg.vMean)
    spec.args.push_back({"v_mean", "global_buffer", "f32", {hkv, d}, "read",
                         "per-channel value mean of each KV head, subtracted "
                         "before the rotation"});
}

/// x - mean[head, :] (f32 subtraction, as ref::cacheWrite), the mean read
/// from the argument \p name.
Value subtractMean(WaveBuilder &w, const KernelSpec &spec, gpu::GPUFuncOp f,
                   StringRef name, Value x, Value head, int64_t d) {
  unsigned i = 0;
  while (spec.args[i].name != name)
    ++i;
  Value mean = vector::LoadOp::create(w.b, w.loc, w.vec({d}, w.b.getF32Type()),
                                      f.getArgument(i),
                                      ValueRange{w.mul(head, w.idx(d))});
  return arith::SubFOp::create(w.b, w.loc, x, mean);
}

} // namespace

gpu::GPUFuncOp uq::wave::buildCacheWriteKernel(OpBuilder &b, Location loc,
                                               const CacheWriteConfig &cfg,
                                               KernelSpec &spec) {
  const int64_t d = cfg.headDim, hkv = cfg.numKVHeads, bs = cfg.blockSize,
                sb = cfg.slotBytes;
  std::string it = typeToDtype(cfg.inputType);
  spec.name = cfg.name;
  spec.op = "cache_write";
  spec.args = {
      {"key", "global_buffer", it, {"num_tokens", hkv, d}, "read",
       "new keys [num_tokens, num_kv_heads, head_dim]"},
      {"value", "global_buffer", it, {"num_tokens", hkv, d}, "read",
       "new values [num_tokens, num_kv_heads, head_dim]"},
      {"slot_mapping", "global_buffer", "i64", {"num_tokens"}, "read",
       "cache slot of each token (block * block_size + offset); negative or "
       "past the cache = skip"},
      {"cache", "global_buffer", "u8", cacheShape(cfg.layout, bs, hkv, sb),
       "read_write",
       std::string("paged KV cache (") +
           (isHeadMajor(cfg.layout) ? "head-major" : "token-major") +
           "), updated in place"},
      {"num_tokens", "by_value", "i32", {}, "value", "number of new tokens"},
      {"num_blocks", "by_value", "i32", {}, "value", "blocks in the cache"}};
  addMeanArgs(cfg, spec);
  spec.grid = {Dim("num_tokens"), Dim(hkv), Dim(2)};
  spec.params = {{"head_dim", d},
                 {"num_kv_heads", hkv},
                 {"block_size", bs},
                 {"slot_bytes", sb}};
  spec.gridRule = "(num_tokens, num_kv_heads, 2): z = 0 writes K, z = 1 V; "
                  "no launch when num_tokens is 0";

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value tok = w.blockId(gpu::Dimension::x);
  Value head = w.blockId(gpu::Dimension::y);
  Value which = w.blockId(gpu::Dimension::z);
  Value numTokens = w.toIndex(f.getArgument(4));
  Value numBlocks = w.toIndex(f.getArgument(5));
  // Workgroups past the grid rule (tokens, kv heads, K/V) do nothing; the
  // token is checked before its slot is read.
  Value inGrid = w.andi(w.cmp(CmpIPredicate::ult, tok, numTokens),
                        w.andi(w.cmp(CmpIPredicate::ult, head, w.idx(hkv)),
                               w.cmp(CmpIPredicate::ult, which, w.idx(2))));
  auto gridGuard = scf::IfOp::create(b, loc, inGrid, /*withElse=*/false);
  b.setInsertionPointToStart(gridGuard.thenBlock());
  Value slot64 = memref::LoadOp::create(b, loc, f.getArgument(2),
                                        ValueRange{tok});
  // Checked in i64 before any index arithmetic: a negative slot, or one past
  // the cache, writes nothing.
  Value capacity = arith::MulIOp::create(
      b, loc,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), numBlocks),
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), bs));
  Value ok = w.andi(w.cmp(CmpIPredicate::sge, slot64,
                           arith::ConstantIntOp::create(b, loc,
                                                        b.getI64Type(), 0)),
                    w.cmp(CmpIPredicate::slt, slot64, capacity));
  auto guard = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  Value slot = w.toIndex(slot64);
  // Token-major: (slot * hkv + head) * sb; head-major: ((slot / bs * hkv +
  // head) * bs + slot % bs) * sb.
  Value slotByte =
      isHeadMajor(cfg.layout)
          ? w.mul(w.add(w.mul(w.add(w.mul(w.divu(slot, w.idx(bs)),
                                          w.idx(hkv)),
                                    head),
                              w.idx(bs)),
                        w.remu(slot, w.idx(bs))),
                  w.idx(sb))
          : w.mul(w.add(w.mul(slot, w.idx(hkv)), head), w.idx(sb));
  Value rowAt = w.mul(w.add(w.mul(tok, w.idx(hkv)), head), w.idx(d));
  auto side = [&](bool key) {
    Value src = f.getArgument(key ? 0 : 1);
    Value row =
        vector::LoadOp::create(b, loc, w.vec({d}, cfg.inputType), src,
                               ValueRange{rowAt});
    ScalarEmitter es(b, loc, {d});
    Value x = es.toF32(row);
    if (key ? cfg.kMean : cfg.vMean)
      x = subtractMean(w, spec, f, key ? "k_mean" : "v_mean", x, head, d);
    KVFormatAttr fmt = key ? cfg.kFormat : cfg.vFormat;
    int64_t codeOff =
        key ? 0 : cfg.layout.getValueCodeOffset(d, cfg.kFormat);
    int64_t scaleOff =
        key ? cfg.layout.getKeyScaleOffset(d, cfg.kFormat)
            : cfg.layout.getValueScaleOffset(d, cfg.kFormat, cfg.vFormat);
    writeRow(w, fmt, x, f.getArgument(3), slotByte, codeOff,
             scaleOff);
  };
  auto kOrV = scf::IfOp::create(b, loc, w.cmp(CmpIPredicate::eq, which,
                                               w.idx(0)),
                                /*withElse=*/true);
  b.setInsertionPointToStart(kOrV.thenBlock());
  side(true);
  b.setInsertionPointToStart(kOrV.elseBlock());
  side(false);
  b.setInsertionPointAfter(gridGuard);
  gpu::ReturnOp::create(b, loc);
  return f;
}
