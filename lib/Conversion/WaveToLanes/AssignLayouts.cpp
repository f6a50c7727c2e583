//===- AssignLayouts.cpp - Lane layouts for wave-level kernels ------------===//
//
// uq-assign-lane-layouts: gives every vector value of a wave-level gpu.func
// a #uq.lane_layout (attribute `uq.layout` on its defining op, `uq.layouts`
// on scf.for), in four steps:
//  1. Anchors: the results of uq.scaled_mma and vector.contract take the
//     MFMA result layout; layouts flow forward through elementwise ops,
//     reductions and loop-carried values (these values are "fixed").
//     Loop-carried values that nothing fixes take the default layout.
//  2. Demands: every operand of a fixed op needs a layout (the MFMA operand
//     layouts for the anchors, the same layout for elementwise ops, ...).
//     A free producer (load, index arithmetic, broadcast, decode) takes the
//     first layout demanded of it and is cloned for any other one (it is
//     cheap to recompute); a fixed value demanded in another layout goes
//     through a uq.to_layout (moved through LDS by the distribution).
//  3. Staging: an MFMA operand whose loads would need sub-dword pieces in
//     the operand layout (V, whose K runs along tokens) is loaded in a
//     staging layout instead (contiguous runs of each row per lane) and
//     converted through LDS.
//  4. Everything left (the cache write, the merge, the query prep: no
//     MFMA) takes layouts forward from its first source, which gets the
//     default layout (contiguous runs of the last dimension over the lanes).
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "uq/Codegen/StageAttrs.h"
#include "uq/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineMap.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include <functional>

namespace uq {
#define GEN_PASS_DEF_ASSIGNLANELAYOUTSPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;
using namespace uq::lanes;

namespace {

bool isVector(Value v) { return isa<VectorType>(v.getType()); }

VectorType vecType(Value v) { return cast<VectorType>(v.getType()); }

bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() &&
         llvm::any_of(op->getResultTypes(),
                      [](Type t) { return isa<VectorType>(t); });
}

/// Ops whose result layout cannot be derived from their operands (their
/// users decide) and that are cheap or harmless to recompute per layout.
bool isSource(Operation *op) {
  return isa<vector::StepOp, vector::BroadcastOp, vector::GatherOp,
             vector::LoadOp, uq::LoadRowsOp>(op) ||
         (isa<arith::ConstantOp>(op) && isVector(op->getResult(0)));
}

/// Whether \p m is the affine map (d0, d1, d2) -> (e0, e1).
bool isMap(AffineMap m, unsigned a, unsigned b) {
  return m.getNumDims() == 3 && m.getNumResults() == 2 &&
         m.getResult(0) == getAffineDimExpr(a, m.getContext()) &&
         m.getResult(1) == getAffineDimExpr(b, m.getContext());
}

class Assignment {
public:
  Assignment(gpu::GPUFuncOp func, bool transposeReads)
      : func(func), transposeReads(transposeReads) {}
  LogicalResult run();

private:
  // Step 1.
  void propagateFixed();
  std::optional<Layout> forwardLayout(Operation *op,
                                      ArrayRef<std::optional<Layout>> ins);
  // Step 2-4.
  LogicalResult demandOperands(Operation *op);
  /// The layout each vector operand of \p op needs for its result to have
  /// \p result; diagnostics only with \p emit (else a silent failure).
  LogicalResult operandLayouts(Operation *op, const Layout &result,
                               SmallVectorImpl<std::optional<Layout>> &out,
                               bool emit = true);
  /// \p l is taken by value: callers pass entries of `layout`, which the
  /// insertions below may move (a DenseMap grows by rehashing).
  FailureOr<Value> materialize(Value v, Layout l, Operation *user);
  bool needsStaging(Value v, const Layout &l);
  std::optional<Layout> stagingLayout(VectorType t, const Layout &dest,
                                      bool forTransposeReads);
  void write();

  gpu::GPUFuncOp func;
  /// The distribution reads 16-bit MFMA B operands with ds_read_b64_tr_b16
  /// (the passes' option transpose-reads).
  bool transposeReads;
  /// The layout of every value decided so far.
  llvm::DenseMap<Value, Layout> layout;
  /// Values whose layout came from step 1 (not recomputable by a clone).
  llvm::DenseSet<Value> fixed;
  /// Rematerialised copies and conversions: (value, layout) -> value.
  std::map<std::pair<void *, std::string>, Value> copies;
  bool failed = false;
};

//===----------------------------------------------------------------------===//
// Step 1: anchors and what follows from them
//===----------------------------------------------------------------------===//

std::optional<Layout>
Assignment::forwardLayout(Operation *op, ArrayRef<std::optional<Layout>> ins) {
  if (auto mma = dyn_cast<uq::ScaledMmaOp>(op)) {
    VectorType t = mma.getType();
    return mfma16x16Result(t.getDimSize(0), t.getDimSize(1));
  }
  if (auto c = dyn_cast<vector::ContractionOp>(op)) {
    auto t = cast<VectorType>(c.getType());
    return mfma16x16Result(t.getDimSize(0), t.getDimSize(1));
  }
  if (auto t = dyn_cast<uq::ToLayoutOp>(op))
    if (auto a = stage_attrs::layout.get(t))
      return Layout::fromAttr(a);
  if (auto red = dyn_cast<vector::MultiDimReductionOp>(op)) {
    if (!ins[0])
      return std::nullopt;
    SmallVector<int64_t> keep;
    for (int64_t d = 0; d < ins[0]->rank(); ++d)
      if (!llvm::is_contained(red.getReductionDims(), d))
        keep.push_back(d);
    return ins[0]->project(keep);
  }
  if (isElementwise(op) || isa<uq::RotateOp>(op)) {
    // Prefer an operand computed by the kernel over a constant, step or
    // load (those can take any layout).
    for (auto [i, l] : llvm::enumerate(ins)) {
      Operation *def = op->getOperand(i).getDefiningOp();
      if (l && !(def && isSource(def)))
        return l;
    }
    for (const std::optional<Layout> &l : ins)
      if (l)
        return l;
    return std::nullopt;
  }
  return std::nullopt;
}

void Assignment::propagateFixed() {
  bool changed = true;
  while (changed) {
    changed = false;
    func.walk([&](Operation *op) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        for (auto [i, res] : llvm::enumerate(loop.getResults())) {
          if (!isVector(res) || fixed.contains(res))
            continue;
          Value init = loop.getInitArgs()[i];
          Value yielded = loop.getBody()->getTerminator()->getOperand(i);
          std::optional<Layout> l;
          if (fixed.contains(yielded))
            l = layout[yielded];
          else if (fixed.contains(init))
            l = layout[init];
          if (!l)
            continue;
          for (Value v : {Value(res), Value(loop.getRegionIterArgs()[i])}) {
            layout[v] = *l;
            fixed.insert(v);
          }
          changed = true;
        }
        return;
      }
      if (op->getNumResults() != 1 || !isVector(op->getResult(0)) ||
          fixed.contains(op->getResult(0)))
        return;
      SmallVector<std::optional<Layout>> ins;
      for (Value v : op->getOperands())
        ins.push_back(fixed.contains(v) ? std::optional<Layout>(layout[v])
                                        : std::nullopt);
      if (std::optional<Layout> l = forwardLayout(op, ins)) {
        layout[op->getResult(0)] = *l;
        fixed.insert(op->getResult(0));
        changed = true;
      }
    });
  }
  // Loop-carried vectors nothing fixes (the merge's running sum): the
  // default layout.
  func.walk([&](scf::ForOp loop) {
    for (auto [i, res] : llvm::enumerate(loop.getResults())) {
      if (!isVector(res) || fixed.contains(res))
        continue;
      Layout l = defaultLayout(vecType(res).getShape());
      for (Value v : {Value(res), Value(loop.getRegionIterArgs()[i])}) {
        layout[v] = l;
        fixed.insert(v);
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// Steps 2-4: demands
//===----------------------------------------------------------------------===//

/// Layout of the source of a shape_cast whose result has layout \p r
/// (splitting or merging the last dimension, adding or dropping unit
/// dimensions); none when the lanes could not hold the same elements.
std::optional<Layout> shapeCastSource(VectorType src, VectorType res,
                                      const Layout &r) {
  ArrayRef<int64_t> s = src.getShape(), d = res.getShape();
  // [M] -> [M x 1] and back: unit dimensions.
  if (s.size() + 1 == d.size() && d.back() == 1 &&
      s == d.drop_back())
    return r.project(llvm::to_vector(llvm::seq<int64_t>(0, s.size())));
  if (s.size() == d.size() + 1 && s.back() == 1 && d == s.drop_back()) {
    Layout out = r;
    SmallVector<DimLayout> dims;
    for (int64_t i = 0; i < r.rank(); ++i)
      dims.push_back(r.dim(i));
    dims.push_back({1, 1, 1, 1});
    return Layout(dims);
  }
  // [A x B] -> [A*B] (merge): the inner dimension must be whole runs and
  // lanes, the outer one lanes above them.
  if (s.size() == 2 && d.size() == 1) {
    const DimLayout &m = r.dim(0);
    int64_t inner = s[1];
    if (inner % m.elems != 0)
      return std::nullopt;
    int64_t innerThreads = inner / m.elems;
    if (innerThreads > m.threads) {
      // The inner dimension spans batches too: not one run per lane.
      return std::nullopt;
    }
    if (m.threads % innerThreads != 0)
      return std::nullopt;
    DimLayout in{1, innerThreads, m.elems, m.laneStride};
    DimLayout out{m.batch, m.threads / innerThreads, 1,
                  m.laneStride * innerThreads};
    return Layout({out, in});
  }
  // [A*B] -> [A x B] (split): the reverse.
  if (s.size() == 1 && d.size() == 2) {
    const DimLayout &o = r.dim(0), &i = r.dim(1);
    if (i.batch != 1 || o.elems != 1 ||
        (o.threads > 1 && i.threads > 1 &&
         o.laneStride != i.laneStride * i.threads))
      return std::nullopt;
    if (o.threads > 1 && i.threads == 1)
      return std::nullopt;
    return Layout(
        {{o.batch, o.threads * i.threads, i.elems, i.laneStride}});
  }
  return std::nullopt;
}

LogicalResult
Assignment::operandLayouts(Operation *op, const Layout &r,
                           SmallVectorImpl<std::optional<Layout>> &out,
                           bool emit) {
  auto error = [&](const Twine &msg) -> LogicalResult {
    if (emit)
      return op->emitOpError(msg);
    return failure();
  };
  out.assign(op->getNumOperands(), std::nullopt);
  if (llvm::none_of(op->getOperands(), isVector))
    return success();
  if (isElementwise(op) || isa<uq::RotateOp, uq::ToLayoutOp>(op)) {
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (isVector(v))
        out[i] = r;
    return success();
  }
  if (auto b = dyn_cast<vector::BroadcastOp>(op)) {
    auto src = dyn_cast<VectorType>(b.getSourceType());
    if (!src)
      return success();
    int64_t lead = r.rank() - src.getRank();
    SmallVector<DimLayout> dims;
    for (int64_t i = 0; i < src.getRank(); ++i) {
      DimLayout dl = r.dim(lead + i);
      if (src.getDimSize(i) == 1 && dl.size() != 1)
        dl = {1, 1, 1, 1};
      dims.push_back(dl);
    }
    out[0] = Layout(dims);
    return success();
  }
  if (auto c = dyn_cast<vector::ShapeCastOp>(op)) {
    out[0] = shapeCastSource(c.getSourceVectorType(), c.getResultVectorType(),
                             r);
    if (!out[0])
      return error("cannot be distributed: no lane layout of its source holds "
                   "the elements of result layout " +
                   r.str() + " in the same lanes");
    return success();
  }
  if (auto c = dyn_cast<vector::BitCastOp>(op)) {
    unsigned from = c.getSourceVectorType().getElementTypeBitWidth();
    unsigned to = c.getResultVectorType().getElementTypeBitWidth();
    out[0] = bitcastLayout(r, to, from);
    if (!out[0])
      return error("cannot be distributed: a lane's run in " + r.str() +
                   " is not whole source elements");
    return success();
  }
  if (auto red = dyn_cast<vector::MultiDimReductionOp>(op)) {
    ArrayRef<int64_t> dims = red.getReductionDims();
    if (dims.size() != 1)
      return error("cannot be distributed: one reduced dimension is "
                   "supported");
    // A source that has its layout keeps it; else the reduced dimension
    // goes over the lanes the result leaves free.
    SmallVector<int64_t> keep;
    for (int64_t d = 0; d < red.getSourceVectorType().getRank(); ++d)
      if (d != dims[0])
        keep.push_back(d);
    auto have = layout.find(red.getSource());
    out[0] = have != layout.end() && have->second.project(keep) == r
                 ? have->second
                 : r.extend(dims[0],
                            red.getSourceVectorType().getDimSize(dims[0]));
    out[1] = r;
    return success();
  }
  if (auto ld = dyn_cast<uq::LoadRowsOp>(op)) {
    out[1] = out[2] = r.project({0});
    return success();
  }
  if (auto g = dyn_cast<vector::GatherOp>(op)) {
    // base, indices..., index vector, mask, pass-through.
    unsigned n = op->getNumOperands();
    out[n - 3] = out[n - 2] = out[n - 1] = r;
    return success();
  }
  if (auto s = dyn_cast<uq::ScaledExtOp>(op)) {
    out[0] = r;
    out[1] = groupScalesFor(r);
    if (!out[1])
      return error("cannot be distributed: the lanes of " + r.str() +
                   " cannot hold their scales");
    return success();
  }
  if (auto mma = dyn_cast<uq::ScaledMmaOp>(op)) {
    const gfx950::Intrinsic &mfma = gfx950::kScaled16x16x128;
    VectorType a = mma.getA().getType(), b = mma.getB().getType();
    int64_t m = a.getDimSize(0), n = b.getDimSize(0), k = a.getDimSize(1);
    if (std::optional<std::string> why = gfx950::tileError(
            mfma, m, n, k, a.getElementType(), b.getElementType()))
      return error("cannot be distributed: " + *why);
    auto operand = [&](VectorType t) {
      return mfmaLayout(mfma.formOf(t.getElementType())->lanes,
                        t.getDimSize(0), k);
    };
    out.assign({operand(a), mfmaLayout(mfma.scales, m, k / mfma.scaleBlock),
                operand(b), mfmaLayout(mfma.scales, n, k / mfma.scaleBlock),
                r});
    return success();
  }
  if (auto c = dyn_cast<vector::ContractionOp>(op)) {
    SmallVector<AffineMap> maps = c.getIndexingMapsArray();
    auto lt = cast<VectorType>(c.getLhs().getType());
    auto rt = cast<VectorType>(c.getRhs().getType());
    bool nk = isMap(maps[1], 1, 2);
    if (!isMap(maps[0], 0, 2) || !isMap(maps[2], 0, 1) ||
        (!nk && !isMap(maps[1], 2, 1)))
      return error("cannot be distributed: only [m x k] x [k x n] (or "
                   "[n x k]) contractions map to MFMAs");
    int64_t m = lt.getDimSize(0), k = lt.getDimSize(1);
    int64_t n = nk ? rt.getDimSize(0) : rt.getDimSize(1);
    const gfx950::Intrinsic &mfma = gfx950::k16x16x32;
    if (std::optional<std::string> why = gfx950::tileError(
            mfma, m, n, k, lt.getElementType(), rt.getElementType()))
      return error("cannot be distributed: " + *why);
    const gfx950::OperandLanes &lanes =
        mfma.formOf(lt.getElementType())->lanes;
    out.assign({mfmaLayout(lanes, m, k),
                mfmaLayout(lanes, n, k, /*transposed=*/!nk), r});
    return success();
  }
  return error("has no lane-distribution rule");
}

/// Bytes of the shortest contiguous piece a lane would load for a tile in
/// layout \p l read by \p load (0 = less than a byte), and how many such
/// pieces a lane loads.
std::pair<double, int64_t> loadPieces(uq::LoadRowsOp load, const Layout &l) {
  unsigned bits = load.getResult().getType().getElementTypeBitWidth();
  const DimLayout &c = l.dim(1);
  double bytes = double(c.elems) * bits / 8.0;
  int64_t pieces = l.dim(0).batch * l.dim(0).elems * c.batch;
  return {bytes, pieces};
}

bool Assignment::needsStaging(Value v, const Layout &l) {
  Operation *def = v.getDefiningOp();
  if (!def || fixed.contains(v))
    return false;
  if (auto load = dyn_cast<uq::LoadRowsOp>(def)) {
    // A shared LDS tile read straight in the operand layout (Layout.h,
    // transposeReadRows).
    if (transposeReads && transposeReadRows(load, l))
      return false;
    auto [bytes, pieces] = loadPieces(load, l);
    // Sub-byte pieces cannot be loaded; many small ones are slow.
    return bytes < 1.0 || (bytes < 4.0 && pieces > 4);
  }
  if (!(isElementwise(def) || isa<vector::BitCastOp, uq::ScaledExtOp>(def)))
    return false;
  SmallVector<std::optional<Layout>> ins;
  // A layout its producers cannot even take (a sub-byte run) needs staging.
  if (::failed(operandLayouts(def, l, ins, /*emit=*/false)))
    return true;
  for (auto [i, operand] : llvm::enumerate(def->getOperands()))
    if (ins[i] && isVector(operand) && needsStaging(operand, *ins[i]))
      return true;
  return false;
}

std::optional<Layout> Assignment::stagingLayout(VectorType t,
                                                const Layout &dest,
                                                bool forTransposeReads) {
  if (t.getRank() != 2)
    return std::nullopt;
  int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
  if (forTransposeReads) {
    // Layout decision "transposing reads" (Distribute.cpp): the LDS tile is
    // row-major, so a lane stages long runs along the columns: 32 columns
    // (one E8M0 group of an FP4 tile: 16 code bytes and one scale byte per
    // row; no two lanes load the same scale), the lanes' other bits over
    // the rows.
    const DimLayout &dk = dest.dim(0), &dn = dest.dim(1);
    if (!transposeReads || !t.getElementType().isIntOrFloat() ||
        t.getElementType().getIntOrFloatBitWidth() != 16 ||
        dk.threads != 4 || dk.elems != 8 || dk.laneStride != 16 ||
        dn.threads != 16 || dn.elems != 1 || dn.laneStride != 1)
      return std::nullopt;
    int64_t colElems = std::min<int64_t>(cols, 32);
    if (cols % colElems != 0 || kWaveSize % (cols / colElems) != 0)
      return std::nullopt;
    int64_t colThreads = cols / colElems;
    int64_t rowThreads = kWaveSize / colThreads;
    if (rows % rowThreads != 0)
      return std::nullopt;
    return Layout({{1, rowThreads, rows / rowThreads, 1},
                   {1, colThreads, colElems, rowThreads}});
  }
  // LDS keeps the destination's long runs contiguous: when they run along
  // the rows (dimension 0), a lane writes 4 consecutive rows of a column.
  bool rowsInner = dest.dim(0).elems > dest.dim(1).elems;
  int64_t rowElems = rowsInner ? std::min<int64_t>(4, rows) : 1;
  int64_t rowThreads = std::min<int64_t>(kWaveSize, rows / rowElems);
  int64_t colThreads = std::max<int64_t>(1, kWaveSize / rowThreads);
  colThreads = std::min(colThreads, cols);
  int64_t colElems = cols / colThreads;
  int64_t rowBatch = rows / (rowElems * rowThreads);
  return Layout({{rowBatch, rowThreads, rowElems, 1},
                 {1, colThreads, colElems, rowThreads}});
}

FailureOr<Value> Assignment::materialize(Value v, Layout l,
                                         Operation *user) {
  if (!isVector(v))
    return v;
  if (l.shape() != SmallVector<int64_t>(vecType(v).getShape()))
    return user->emitOpError() << "internal error: layout " << l.str()
                               << " does not fit " << v.getType();
  auto key = std::make_pair(v.getAsOpaquePointer(), l.str());
  if (auto it = copies.find(key); it != copies.end())
    return it->second;
  auto have = layout.find(v);
  if (have != layout.end() && have->second == l)
    return v;
  Operation *def = v.getDefiningOp();
  // Free values are loads, index arithmetic and decodes: recomputing one
  // in a second layout is cheaper than moving it through LDS.
  bool recompute = def && !fixed.contains(v) && def->getNumResults() == 1 &&
                   def->getNumRegions() == 0;
  if (have == layout.end() && def && !fixed.contains(v)) {
    // First demand of a free value: it takes this layout.
    layout[v] = l;
    copies[key] = v;
    if (::failed(demandOperands(def)))
      return failure();
    return v;
  }
  OpBuilder b(user);
  if (recompute && def) {
    // A free value wanted in a second layout: compute it again.
    b.setInsertionPointAfter(def);
    Operation *clone = b.clone(*def);
    Value c = clone->getResult(0);
    layout[c] = l;
    copies[key] = c;
    if (::failed(demandOperands(clone)))
      return failure();
    return c;
  }
  // A fixed value in another layout: through LDS.
  b.setInsertionPoint(user);
  auto conv = uq::ToLayoutOp::create(b, user->getLoc(), v);
  layout[conv] = l;
  fixed.insert(conv);
  copies[key] = conv;
  return Value(conv);
}

LogicalResult Assignment::demandOperands(Operation *op) {
  if (isa<scf::YieldOp>(op)) {
    auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
    if (!loop)
      return success();
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (!isVector(v))
        continue;
      FailureOr<Value> m = materialize(v, layout[loop.getResult(i)], op);
      if (::failed(m))
        return failure();
      op->setOperand(i, *m);
    }
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    for (auto [i, v] : llvm::enumerate(loop.getInitArgs())) {
      if (!isVector(v))
        continue;
      FailureOr<Value> m = materialize(v, layout[loop.getResult(i)], op);
      if (::failed(m))
        return failure();
      loop.getInitArgsMutable()[i].set(*m);
    }
    return success();
  }
  // Memory ops without a vector result: the stored value keeps its layout
  // (or the default), the addresses follow it.
  std::optional<Layout> valueLayout;
  Value stored;
  if (auto s = dyn_cast<uq::StoreRowsOp>(op))
    stored = s.getValue();
  else if (auto s = dyn_cast<vector::StoreOp>(op))
    stored = s.getValueToStore();
  else if (auto s = dyn_cast<vector::ScatterOp>(op))
    stored = s.getValueToStore();
  if (stored) {
    auto it = layout.find(stored);
    Layout l = it != layout.end() ? it->second
                                  : defaultLayout(vecType(stored).getShape());
    FailureOr<Value> m = materialize(stored, l, op);
    if (::failed(m))
      return failure();
    op->replaceUsesOfWith(stored, *m);
    if (auto s = dyn_cast<uq::StoreRowsOp>(op)) {
      Layout rows = l.project({0});
      for (OpOperand *o : {&s.getOffsetsMutable(), &s.getMaskMutable()}) {
        FailureOr<Value> a = materialize(o->get(), rows, op);
        if (::failed(a))
          return failure();
        o->set(*a);
      }
    } else if (auto s = dyn_cast<vector::ScatterOp>(op)) {
      for (OpOperand *o : {&s.getIndicesMutable(), &s.getMaskMutable()}) {
        FailureOr<Value> a = materialize(o->get(), l, op);
        if (::failed(a))
          return failure();
        o->set(*a);
      }
    }
    return success();
  }
  if (op->getNumResults() != 1 || !isVector(op->getResult(0)))
    return success();
  Layout r = layout.lookup(op->getResult(0));
  SmallVector<std::optional<Layout>> ins;
  if (::failed(operandLayouts(op, r, ins)))
    return failure();
  bool anchor = isa<uq::ScaledMmaOp, vector::ContractionOp>(op);
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (!ins[i] || !isVector(v))
      continue;
    Layout want = *ins[i];
    if (anchor && needsStaging(v, want)) {
      // Load in a staging layout, then through LDS into the operand layout.
      std::optional<Layout> stage =
          stagingLayout(vecType(v), want, /*forTransposeReads=*/true);
      if (!stage || needsStaging(v, *stage))
        stage = stagingLayout(vecType(v), want, /*forTransposeReads=*/false);
      if (stage && !needsStaging(v, *stage)) {
        FailureOr<Value> staged = materialize(v, *stage, op);
        if (::failed(staged))
          return failure();
        OpBuilder b(op);
        auto conv = uq::ToLayoutOp::create(b, op->getLoc(), *staged);
        layout[conv] = want;
        fixed.insert(conv);
        op->setOperand(i, conv);
        continue;
      }
    }
    FailureOr<Value> m = materialize(v, want, op);
    if (::failed(m))
      return failure();
    op->setOperand(i, *m);
  }
  return success();
}

void Assignment::write() {
  MLIRContext *ctx = func.getContext();
  func.walk([&](Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      SmallVector<Attribute> attrs;
      bool any = false;
      for (Value r : loop.getResults()) {
        auto it = layout.find(r);
        attrs.push_back(it != layout.end()
                            ? Attribute(it->second.toAttr(ctx))
                            : Attribute(UnitAttr::get(ctx)));
        any |= it != layout.end();
      }
      if (any)
        stage_attrs::layouts.set(op, ArrayAttr::get(ctx, attrs));
      return;
    }
    if (op->getNumResults() == 1)
      if (auto it = layout.find(op->getResult(0)); it != layout.end())
        stage_attrs::layout.set(op, it->second.toAttr(ctx));
  });
}

/// The layout of \p op's result that follows from its operands' layouts
/// \p ins (none when it does not, or the op is a source).
static std::optional<Layout>
forwardFromOperands(Operation *op, ArrayRef<std::optional<Layout>> ins,
                    const std::function<std::optional<Layout>(
                        Operation *, ArrayRef<std::optional<Layout>>)> &base) {
  if (auto c = dyn_cast<vector::ShapeCastOp>(op)) {
    if (!ins[0])
      return std::nullopt;
    VectorType rt = c.getResultVectorType();
    ArrayRef<int64_t> ss = c.getSourceVectorType().getShape();
    ArrayRef<int64_t> rs = rt.getShape();
    // Unit dimensions added or dropped.
    if (rs.size() == ss.size() + 1 && rs.back() == 1 && rs.drop_back() == ss) {
      SmallVector<DimLayout> dims;
      for (int64_t i = 0; i < ins[0]->rank(); ++i)
        dims.push_back(ins[0]->dim(i));
      dims.push_back({1, 1, 1, 1});
      return Layout(dims);
    }
    if (ss.size() == rs.size() + 1 && ss.back() == 1 && ss.drop_back() == rs)
      return ins[0]->project(
          llvm::to_vector(llvm::seq<int64_t>(0, rs.size())));
    if (rt.getRank() == 2 && ss.size() == 1) {
      const DimLayout &s = ins[0]->dim(0);
      int64_t inner = rt.getDimSize(1);
      if (inner % s.elems == 0 && s.threads % (inner / s.elems) == 0) {
        int64_t it = inner / s.elems;
        return Layout({{s.batch, s.threads / it, 1, s.laneStride * it},
                       {1, it, s.elems, s.laneStride}});
      }
      return std::nullopt;
    }
    if (rt.getRank() == 1 && ss.size() == 2) {
      const DimLayout &o = ins[0]->dim(0), &i = ins[0]->dim(1);
      if (i.batch == 1 && o.elems == 1)
        return Layout({{o.batch, o.threads * i.threads, i.elems, i.laneStride}});
    }
    return std::nullopt;
  }
  if (auto c = dyn_cast<vector::BitCastOp>(op)) {
    if (!ins[0])
      return std::nullopt;
    return bitcastLayout(*ins[0],
                         c.getSourceVectorType().getElementTypeBitWidth(),
                         c.getResultVectorType().getElementTypeBitWidth());
  }
  if (isa<uq::ScaledExtOp>(op))
    return ins[0];
  if (isElementwise(op) || isa<uq::RotateOp, vector::MultiDimReductionOp>(op))
    return base(op, ins);
  return std::nullopt;
}

LogicalResult Assignment::run() {
  // The size bound first (Layout.h, tileSizeError): a tile no layout can
  // hold is refused before any layout arithmetic or distribution scales
  // with it.
  WalkResult tooBig = func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (auto v = dyn_cast<VectorType>(t))
        if (std::optional<std::string> why = tileSizeError(v)) {
          op->emitOpError("cannot be distributed: ") << *why;
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  if (tooBig.wasInterrupted())
    return failure();
  // Step 1: anchors and what follows from them.
  propagateFixed();
  // Steps 2-3: every fixed op (and loop) demands its operands, in reverse
  // program order so that users are settled before their producers.
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops)) {
    bool settled =
        isa<scf::ForOp, scf::YieldOp>(op) ||
        (op->getNumResults() == 1 && fixed.contains(op->getResult(0)));
    if (settled && ::failed(demandOperands(op)))
      return failure();
  }
  // Step 4: the code no anchor reaches (cache write, merge, query prep,
  // epilogues). Layouts flow forward from computed values; when nothing
  // flows, the first unplaced load takes the default layout and flow
  // resumes. Sources (loads, index arithmetic, broadcasts, constants) are
  // then placed by their users' demands.
  auto isData = [](Operation *op) {
    return op->getNumResults() == 1 && isVector(op->getResult(0)) &&
           !isa<scf::ForOp>(op);
  };
  auto forward = [&](Operation *op, ArrayRef<std::optional<Layout>> ins) {
    return forwardLayout(op, ins);
  };
  ops.clear();
  func.walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
  // Loads placed by default: data flows forward from them.
  llvm::DenseSet<Value> origins;
  while (true) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation *op : ops) {
        if (!isData(op) || isSource(op) || layout.count(op->getResult(0)))
          continue;
        SmallVector<std::optional<Layout>> ins;
        for (Value v : op->getOperands()) {
          Operation *def = v.getDefiningOp();
          bool usable = layout.count(v) && (fixed.contains(v) || !def ||
                                            !isSource(def) ||
                                            origins.contains(v));
          ins.push_back(usable ? std::optional<Layout>(layout[v])
                               : std::nullopt);
        }
        if (std::optional<Layout> l = forwardFromOperands(op, ins, forward)) {
          layout[op->getResult(0)] = *l;
          changed = true;
        }
      }
    }
    // A load whose value something still needs, in program order.
    Operation *next = nullptr;
    for (Operation *op : ops)
      if (isData(op) && isa<vector::LoadOp, uq::LoadRowsOp, vector::GatherOp>(op) &&
          !layout.count(op->getResult(0)) &&
          llvm::any_of(op->getResult(0).getUsers(), [&](Operation *u) {
            return !isSource(u) &&
                   (u->getNumResults() == 0 || !layout.count(u->getResult(0)));
          })) {
        next = op;
        break;
      }
    if (!next)
      break;
    origins.insert(next->getResult(0));
    ArrayRef<int64_t> shape =
        cast<VectorType>(next->getResult(0).getType()).getShape();
    // A kernel's hint on a copy: each row over at most this many lanes
    // (longer runs per lane, the rows over the other lanes).
    int64_t run = 1;
    if (auto hint = stage_attrs::lanesPerRow.get(next);
        hint && hint.getInt() > 0)
      run = std::max<int64_t>(1, shape.back() / hint.getInt());
    layout[next->getResult(0)] = defaultLayout(shape, run);
  }
  // Whatever is still unplaced and not a source (dead or index-only code).
  for (Operation *op : ops)
    if (isData(op) && !isSource(op) && !layout.count(op->getResult(0)))
      layout[op->getResult(0)] =
          defaultLayout(cast<VectorType>(op->getResult(0).getType()).getShape());
  // Demands of everything placed in step 4 (and of stores), users first.
  for (Operation *op : llvm::reverse(ops)) {
    bool placed = isData(op) && layout.count(op->getResult(0)) &&
                  !fixed.contains(op->getResult(0));
    if (isa<uq::StoreRowsOp, vector::StoreOp, vector::ScatterOp>(op) ||
        placed) {
      if (::failed(demandOperands(op)))
        return failure();
    }
  }
  write();
  return success();
}

struct AssignLaneLayoutsPass
    : public uq::impl::AssignLaneLayoutsPassBase<AssignLaneLayoutsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(uq::lanes::checkChip(getOperation(), "uq-assign-lane-layouts", chip)))
      return signalPassFailure();
    WalkResult r = getOperation()->walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return WalkResult::advance();
      Assignment a(func, transposeReads);
      return ::failed(a.run()) ? WalkResult::interrupt()
                               : WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
