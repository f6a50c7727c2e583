//===- Distributor.h - Distribution of one wave-level kernel ----*- C++ -*-===//
//
// The state and patterns of uq-distribute-to-lanes for one kernel
// (Distribute.cpp describes the stage). The patterns live in one file per
// family of ops; Distribute.cpp holds the driver, the pattern table and
// the control flow.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_WAVETOLANES_DISTRIBUTOR_H
#define UQ_LIB_CONVERSION_WAVETOLANES_DISTRIBUTOR_H

#include "Layout.h"

#include "uq/Codegen/StageAttrs.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Utils/VectorUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/DenseMap.h"
#include <cmath>
#include <limits>

#include <map>

namespace uq::lanes::distribution {

using namespace mlir;

inline bool isVector(Value v) { return isa<VectorType>(v.getType()); }

class Distributor {
public:
  Distributor(gpu::GPUFuncOp func, bool dppReductions, bool transposeReads,
              int64_t transposeRowPad)
      : func(func), b(func), dppReductions(dppReductions),
        transposeReads(transposeReads), transposeRowPad(transposeRowPad) {}
  LogicalResult run();

private:
  // Layouts and types.
  FailureOr<Layout> layoutOf(Value v);
  VectorType laneType(Type elem, const Layout &l) {
    return VectorType::get({l.elementsPerLane()}, elem);
  }

  // Lane arithmetic.
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  /// The f32 value of an OCP FP8 E4M3FN byte (\p byte: i32 0..255), as
  /// uq::ref::fp8e4m3Decode: (8 + m) * 2^(e - 10) for e > 0, m * 2^-9 for
  /// e = 0 (subnormals), NaN for 0x7F / 0xFF, the sign from bit 7. Built
  /// from exact integer and power-of-two steps. (The same function as
  /// ScalarEmitter::fp8Decode of the CPU path and the cache writer; that
  /// op sequence makes LLVM 22 schedule the E4M3 value decode of the decode
  /// kernel slower: 25.56 against 23.07 us at batch 1 / 4K by the timing
  /// model, `uq-kernel-report --ladder --v-scale-e4m3 --shapes 128:8:8
  /// --contexts 4096 --batches 1 --no-check`.)
  Value e4m3Value(Value byte) {
    Type f32 = b.getF32Type();
    auto ci = [&](int64_t v) { return i32(v); };
    Value e = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, byte, ci(3)), ci(15));
    Value m = arith::AndIOp::create(b, loc, byte, ci(7));
    Value normal =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, e, ci(0));
    Value sig = arith::OrIOp::create(
        b, loc, m, arith::SelectOp::create(b, loc, normal, ci(8), ci(0)));
    Value e1 = arith::MaxUIOp::create(b, loc, e, ci(1));
    // 2^(e1 - 10) as f32 bits: (e1 - 10 + 127) << 23.
    Value pow = arith::BitcastOp::create(
        b, loc, f32,
        arith::ShLIOp::create(
            b, loc, arith::AddIOp::create(b, loc, e1, ci(117)), ci(23)));
    Value mag = arith::MulFOp::create(
        b, loc, arith::UIToFPOp::create(b, loc, f32, sig), pow);
    Value isNan = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, loc, byte, ci(0x7F)), ci(0x7F));
    mag = arith::SelectOp::create(
        b, loc, isNan,
        arith::ConstantOp::create(
            b, loc, b.getF32FloatAttr(std::numeric_limits<float>::quiet_NaN())),
        mag);
    Value negative = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, byte, ci(0x80)), ci(0));
    return arith::SelectOp::create(b, loc, negative,
                                   arith::NegFOp::create(b, loc, mag), mag);
  }
  /// The coordinate t of this lane in dimension \p d of \p l.
  Value laneCoord(const DimLayout &d);
  /// i1: this lane is the first of its copies under \p l (stores once).
  Value isCanonical(const Layout &l);
  /// Logical index of (b, e) of dimension \p d for this lane (index).
  Value logicalIndex(const Layout &l, int64_t d, int64_t batch, int64_t elem);

  // Per-lane vector helpers.
  Value extract(Value v, int64_t i) {
    return vector::ExtractOp::create(b, loc, v, i);
  }
  Value fromElements(Type elem, ArrayRef<Value> xs) {
    return vector::FromElementsOp::create(
        b, loc, VectorType::get({int64_t(xs.size())}, elem), xs);
  }
  /// Elements [offset, offset + size) of a lane vector (a shufflevector:
  /// every per-lane vector op must lower in convert-gpu-to-rocdl).
  Value slice(Value v, int64_t offset, int64_t size) {
    int64_t n = cast<VectorType>(v.getType()).getNumElements();
    if (offset == 0 && size == n)
      return v;
    SmallVector<int64_t> mask;
    for (int64_t i = 0; i < size; ++i)
      mask.push_back(offset + i);
    return shuffle(v, mask);
  }
  /// \p dst with elements [offset, offset + size(src)) replaced by src.
  Value insertSlice(Value src, Value dst, int64_t offset) {
    int64_t n = cast<VectorType>(dst.getType()).getNumElements();
    int64_t m = cast<VectorType>(src.getType()).getNumElements();
    if (m == n)
      return src;
    // Widen src to n elements (positions past m are never selected).
    SmallVector<int64_t> widen;
    for (int64_t i = 0; i < n; ++i)
      widen.push_back(i < m ? i : 0);
    Value wide =
        m < n ? vector::ShuffleOp::create(b, loc, src, src, widen) : src;
    SmallVector<int64_t> mask;
    for (int64_t i = 0; i < n; ++i)
      mask.push_back(i >= offset && i < offset + m ? n + (i - offset) : i);
    return vector::ShuffleOp::create(b, loc, dst, wide, mask);
  }
  Value shuffle(Value v, ArrayRef<int64_t> mask) {
    return vector::ShuffleOp::create(b, loc, v, v, mask);
  }
  Value zeros(VectorType t) {
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
  }
  /// The value of the lane `lane ^ offset` (32- and 64-bit scalars).
  Value shuffleXor(Value x, int64_t offset);
  /// The value of the lane's partner in step \p offset (1, 2, 4 or 8) of a
  /// butterfly within a row of 16 lanes, by DPP when the value is 32-bit.
  Value rowButterflyPartner(Value x, int64_t offset);
  Value combine(vector::CombiningKind kind, Value x, Value y) {
    return vector::makeArithReduction(b, loc, kind, x, y);
  }

  LogicalResult distributeBlock(Block &src);
  LogicalResult distribute(Operation *op);

  /// One distribution pattern per op kind, looked up by the op's TypeID
  /// (Distribute.cpp, patterns()): ops without a vector result (stores)
  /// and ops whose result's layout the pattern takes.
  using ResultlessPattern = LogicalResult (*)(Distributor &, Operation *);
  using Pattern = LogicalResult (*)(Distributor &, Operation *, const Layout &);
  struct PatternTable {
    llvm::DenseMap<TypeID, ResultlessPattern> resultless;
    llvm::DenseMap<TypeID, Pattern> withLayout;
  };
  static const PatternTable &patterns();
  template <typename OpT, LogicalResult (Distributor::*Fn)(OpT)>
  static LogicalResult applyResultless(Distributor &d, Operation *op) {
    return (d.*Fn)(cast<OpT>(op));
  }
  template <typename OpT, LogicalResult (Distributor::*Fn)(OpT, const Layout &)>
  static LogicalResult apply(Distributor &d, Operation *op, const Layout &l) {
    return (d.*Fn)(cast<OpT>(op), l);
  }
  Value mapped(Value v) { return map.lookupOrDefault(v); }

  // Patterns, one file per family: DistributeConversions.cpp (elementwise,
  // constants, index vectors, reshapes, bitcasts, FP4 decodes),
  // DistributeReductions.cpp (reductions, the rotation's butterflies),
  // DistributeMemory.cpp (loads, stores, gathers, scatters, row tiles,
  // layout conversions through LDS), DistributeMMA.cpp (the MFMA
  // products), Distribute.cpp (control flow).
  LogicalResult elementwise(Operation *op, const Layout &l);
  LogicalResult constant(arith::ConstantOp op, const Layout &l);
  LogicalResult step(vector::StepOp op, const Layout &l);
  LogicalResult broadcast(vector::BroadcastOp op, const Layout &l);
  LogicalResult shapeCast(vector::ShapeCastOp op, const Layout &l);
  LogicalResult bitcast(vector::BitCastOp op, const Layout &l);
  LogicalResult reduction(vector::MultiDimReductionOp op, const Layout &l);
  LogicalResult gather(vector::GatherOp op, const Layout &l);
  LogicalResult scatter(vector::ScatterOp op);
  LogicalResult load(vector::LoadOp op, const Layout &l);
  LogicalResult store(vector::StoreOp op);
  LogicalResult loadRows(uq::LoadRowsOp op, const Layout &l);
  LogicalResult storeRows(uq::StoreRowsOp op);
  /// The lane's row offsets of a uq.load_rows/store_rows and a constant
  /// byte/element offset peeled off them (layout decision "constant row
  /// offsets"): `rows + splat(c)` with c >= 0 gives (rows, c), anything else
  /// (offsets, 0).
  std::pair<Value, int64_t> rowOffsets(Value offsets);
  /// `off + col + c` without unsigned wrap (in-bounds element indices), the
  /// constant outermost: LLVM moves it into the instruction's offset field.
  Value rowAddress(Value off, Value col, int64_t c);
  LogicalResult scaledMma(uq::ScaledMmaOp op, const Layout &l);
  LogicalResult contract(vector::ContractionOp op, const Layout &l);
  /// Maps \p op's result to the lane's f32 accumulators of its 16x16 MMA
  /// \p tiles (4 each, in tile order) in layout \p l.
  LogicalResult mapTiles(Operation *op, ArrayRef<Value> tiles,
                         const Layout &l);
  LogicalResult scaledExt(uq::ScaledExtOp op, const Layout &l);
  LogicalResult rotate(uq::RotateOp op, const Layout &l);
  LogicalResult toLayout(uq::ToLayoutOp op, const Layout &l);
  /// A tile of a layout conversion staged in LDS.
  struct LdsStaging {
    Value buf;
    /// The dimension whose runs are contiguous (1: row-major).
    int64_t inner = 1;
    /// The tile's rows, and the elements from one row to the next when
    /// row-major (padded for the transposing reads).
    int64_t rows = 0, rowStride = 0;
    /// This wave's first element with several waves, else null.
    Value waveBase;
  };
  /// Layout decision "transposing reads" for converting \p src to \p dst
  /// (a 2-D tile of \p elem).
  bool useTransposingReads(const Layout &src, const Layout &dst, Type elem);
  /// The element index of (\p r, \p c) in \p st's buffer.
  Value ldsIndex(const LdsStaging &st, Value r, Value c);
  /// Stores the lane's vector \p vec in layout \p l into \p st's buffer
  /// (\p write, returns null), or loads the lane's vector in layout \p l
  /// from it: one access per run along st.inner.
  Value ldsRuns(const LdsStaging &st, const Layout &l, Value vec, bool write);
  /// The lane's vector in \p dst (the B operand of a 16x16x32 MFMA) read
  /// with ds_read_b64_tr_b16 from \p st's row-major buffer.
  Value transposingRead(const LdsStaging &st, const Layout &dst);
  LogicalResult forLoop(scf::ForOp op);
  LogicalResult ifOp(scf::IfOp op);

  gpu::GPUFuncOp func;
  OpBuilder b;
  bool dppReductions, transposeReads;
  int64_t transposeRowPad;
  Location loc = UnknownLoc::get(func.getContext());
  IRMapping map;
  Value lane;
  std::map<std::pair<int64_t, int64_t>, Value> coords;
  /// Whether the op being distributed is inside an scf.for (conversions
  /// there need a barrier before the next iteration writes LDS again).
  int loopDepth = 0;
  bool loopUsedLds = false;
  /// LDS buffers no conversion is using any more: a barrier follows their
  /// last read (at top level right after it, in a loop at the end of each
  /// iteration), so a later conversion of the same type may reuse one.
  SmallVector<Value> freeLds;
  /// Buffers of the conversions of the loop being distributed: free once
  /// the loop is closed by its trailing barrier.
  SmallVector<Value> loopLds;
  /// A workgroup buffer of \p type: a free one, or a new attribution.
  Value acquireLds(MemRefType type);
  /// Waves per workgroup (the known block size / 64) and, with more than
  /// one, the uniform wave index.
  int64_t waves = 1;
  Value waveId;
};

} // namespace uq::lanes::distribution

#endif // UQ_LIB_CONVERSION_WAVETOLANES_DISTRIBUTOR_H
