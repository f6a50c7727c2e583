//===- Distribute.cpp - Wave-level kernels to per-lane gfx950 code --------===//
//
// uq-distribute-to-lanes: rewrites a wave-level kernel whose vector values
// carry lane layouts (uq-assign-lane-layouts) into code per lane. Each
// wave-level vector becomes the lane's 1-D vector of its elements (Layout.h);
// every op has one distribution pattern below:
//  - elementwise ops: the same op on each lane's elements (exp2 becomes
//    v_exp_f32 through rocdl.exp2);
//  - constants, vector.step, broadcasts, shape casts, bitcasts: per-lane
//    constants and shuffles of the lane's own elements;
//  - reductions: a tree over the lane's elements, xor shuffles across the
//    lanes of the reduced dimension (in element order for float sums
//    unless the op allows reassociation);
//  - loads/stores/gathers/scatters, uq.load_rows/store_rows: each lane
//    moves its runs of consecutive elements; replicated lanes store once;
//  - uq.scaled_mma / vector.contract: one amdgpu.scaled_mfma / amdgpu.mfma
//    per 16x16 tile and K step on slices of the lanes' operand vectors;
//  - uq.scaled_ext: v_cvt_scalef32_pk_{bf16,f32}_fp4 with the group's
//    E8M0 byte as the f32 scale;
//  - uq.rotate: butterfly stages in increasing span, across lanes by xor
//    shuffles where the span's bit is a lane bit;
//  - uq.to_layout: through a workgroup (LDS) buffer, runs stored and loaded
//    along the destination's longest runs, with barriers.
// A kernel whose known block size is W > 1 waves (the multi-wave prefill
// kernel): the lane is thread_id.x % 64, gpu.subgroup_id becomes the wave
// index thread_id.x / 64 made uniform (v_readfirstlane), and each wave
// stages its uq.to_layout conversions in its own part of the LDS buffer.
// Workgroup buffers the wave-level kernel declares itself (its own LDS
// tiles) are read and written by the same load/store patterns as global
// memory: the address space only changes the instructions the ROCDL
// conversion selects (ds_read/ds_write).
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "uq/Codegen/StageAttrs.h"
#include "uq/Conversion/Passes.h"

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

#include <cmath>
#include <limits>

namespace uq {
#define GEN_PASS_DEF_DISTRIBUTETOLANESPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;
using namespace uq::lanes;

namespace {

bool isVector(Value v) { return isa<VectorType>(v.getType()); }

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
    Value normal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, e,
                                         ci(0));
    Value sig = arith::OrIOp::create(
        b, loc, m, arith::SelectOp::create(b, loc, normal, ci(8), ci(0)));
    Value e1 = arith::MaxUIOp::create(b, loc, e, ci(1));
    // 2^(e1 - 10) as f32 bits: (e1 - 10 + 127) << 23.
    Value pow = arith::BitcastOp::create(
        b, loc, f32,
        arith::ShLIOp::create(b, loc,
                              arith::AddIOp::create(b, loc, e1, ci(117)),
                              ci(23)));
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
    Value wide = m < n ? vector::ShuffleOp::create(b, loc, src, src, widen)
                       : src;
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
  Value mapped(Value v) { return map.lookupOrDefault(v); }

  // Patterns.
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
  LogicalResult scaledExt(uq::ScaledExtOp op, const Layout &l);
  LogicalResult rotate(uq::RotateOp op, const Layout &l);
  LogicalResult toLayout(uq::ToLayoutOp op, const Layout &l);
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

FailureOr<Layout> Distributor::layoutOf(Value v) {
  if (auto r = dyn_cast<OpResult>(v)) {
    Operation *op = r.getOwner();
    if (auto a = stage_attrs::layouts.get(op))
      if (auto l = dyn_cast<LaneLayoutAttr>(a[r.getResultNumber()]))
        return Layout::fromAttr(l);
    if (auto l = stage_attrs::layout.get(op))
      return Layout::fromAttr(l);
  } else if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp()))
      if (arg.getArgNumber() > 0)
        return layoutOf(loop.getResult(arg.getArgNumber() - 1));
  }
  Operation *at = v.getDefiningOp() ? v.getDefiningOp()
                                    : v.getParentBlock()->getParentOp();
  return at->emitOpError() << "has a vector value without a lane layout (run "
                              "uq-assign-lane-layouts first)";
}

Value Distributor::laneCoord(const DimLayout &d) {
  if (d.threads == 1)
    return idx(0);
  auto key = std::make_pair(d.threads, d.laneStride);
  if (auto it = coords.find(key); it != coords.end())
    return it->second;
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointAfterValue(lane);
  Value t = arith::DivUIOp::create(b, loc, lane, idx(d.laneStride));
  t = arith::RemUIOp::create(b, loc, t, idx(d.threads));
  coords[key] = t;
  return t;
}

Value Distributor::isCanonical(const Layout &l) {
  uint64_t unused = ~l.usedLaneBits() & uint64_t(kWaveSize - 1);
  if (unused == 0)
    return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value masked = arith::AndIOp::create(b, loc, lane, idx(int64_t(unused)));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, masked,
                               idx(0));
}

Value Distributor::logicalIndex(const Layout &l, int64_t d, int64_t batch,
                                int64_t elem) {
  const DimLayout &dl = l.dim(d);
  Value base = idx(batch * dl.threads * dl.elems + elem);
  if (dl.threads == 1)
    return base;
  Value t = arith::MulIOp::create(b, loc, laneCoord(dl), idx(dl.elems));
  return arith::AddIOp::create(b, loc, base, t);
}

Value Distributor::shuffleXor(Value x, int64_t offset) {
  Type t = x.getType();
  unsigned bits = t.getIntOrFloatBitWidth();
  Value off = i32(offset), width = i32(kWaveSize);
  auto one = [&](Value v) {
    return gpu::ShuffleOp::create(b, loc, v, off, width, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  if (bits == 32) {
    if (t.isInteger(32) || t.isF32())
      return one(x);
  }
  if (bits == 64) {
    // Both 32-bit halves.
    auto pair = VectorType::get({2}, b.getI32Type());
    Value v = arith::BitcastOp::create(
        b, loc, b.getIntegerType(64), x);
    Value halves = vector::BitCastOp::create(
        b, loc, pair,
        vector::BroadcastOp::create(b, loc, VectorType::get({1}, v.getType()),
                                    v));
    Value lo = one(extract(halves, 0)), hi = one(extract(halves, 1));
    Value back = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getIntegerType(64)),
        fromElements(b.getI32Type(), {lo, hi}));
    return arith::BitcastOp::create(b, loc, t, extract(back, 0));
  }
  // Narrow types: through i32.
  Value w = arith::ExtUIOp::create(
      b, loc, b.getI32Type(),
      arith::BitcastOp::create(b, loc, b.getIntegerType(bits), x));
  Value s = one(w);
  return arith::BitcastOp::create(
      b, loc, t, arith::TruncIOp::create(b, loc, b.getIntegerType(bits), s));
}

/// Layout decision "row butterfly by DPP": in step s of a butterfly over
/// lanes 16r..16r+15, a lane needs the value of a lane of the other half of
/// its aligned group of 2s lanes. After the steps before it, every lane of an
/// aligned group of s lanes holds the same value, so any partner in the other
/// half gives the xor partner's value bit for bit: quad_perm [1,0,3,2] (xor
/// 1) and [2,3,0,1] (xor 2) within quads, row_half_mirror (lane 7-i of its 8)
/// for s = 4, row_mirror (lane 15-i of its 16) for s = 8. A DPP operand is
/// read by the VALU op itself (the backend folds v_mov_b32_dpp into the
/// combining op), where a shuffle costs an LDS-pipe ds_swizzle and a wait.
/// Source: DPP controls in the CDNA4 ISA guide (section "DPP"), and
/// `DppCtrl` in LLVM's SIDefines.h; gfx950-notes.md (wave64, rows of 16).
Value Distributor::rowButterflyPartner(Value x, int64_t offset) {
  Type t = x.getType();
  if (!dppReductions || t.getIntOrFloatBitWidth() != 32)
    return shuffleXor(x, offset);
  // Every lane reads a lane of its own row, so no lane is out of bounds: the
  // old value is never used (poison, with bound_ctrl), which lets the
  // backend's DPP combiner fold the move into the combining op.
  Value old = ub::PoisonOp::create(b, loc, t);
  auto dpp = [&](amdgpu::DPPPerm kind, Attribute arg) -> Value {
    return amdgpu::DPPOp::create(b, loc, t, old, x, kind, arg, 0xf, 0xf,
                                 /*bound_ctrl=*/true);
  };
  switch (offset) {
  case 1:
    return dpp(amdgpu::DPPPerm::quad_perm, b.getI32ArrayAttr({1, 0, 3, 2}));
  case 2:
    return dpp(amdgpu::DPPPerm::quad_perm, b.getI32ArrayAttr({2, 3, 0, 1}));
  case 4:
    return dpp(amdgpu::DPPPerm::row_half_mirror, Attribute());
  case 8:
    return dpp(amdgpu::DPPPerm::row_mirror, Attribute());
  default:
    return shuffleXor(x, offset);
  }
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult Distributor::run() {
  Block &old = func.getBody().front();
  if (stage_attrs::distributed.isSet(func))
    return func.emitOpError("is already distributed");
  loc = func.getLoc();
  if (std::optional<ArrayRef<int32_t>> known = func.getKnownBlockSize()) {
    if ((*known)[0] % kWaveSize != 0 || (*known)[1] != 1 || (*known)[2] != 1)
      return func.emitOpError()
             << "cannot be distributed: the known block size must be whole "
                "64-lane waves along x, got "
             << (*known)[0] << "x" << (*known)[1] << "x" << (*known)[2];
    waves = std::max<int64_t>(1, (*known)[0] / kWaveSize);
  }
  // Distribute into a new entry block (LDS buffers are added to it as
  // workgroup attributions), then drop the old one.
  Block *fresh = new Block();
  func.getBody().push_front(fresh);
  for (BlockArgument a : old.getArguments())
    map.map(a, fresh->addArgument(a.getType(), a.getLoc()));
  b.setInsertionPointToStart(fresh);
  // The lane id, first thing in the kernel.
  lane = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  if (waves > 1) {
    Value tid = lane;
    lane = arith::RemUIOp::create(b, loc, tid, idx(kWaveSize));
    // The wave index is the same in every lane: one SGPR.
    Value w = arith::IndexCastOp::create(
        b, loc, b.getI32Type(),
        arith::DivUIOp::create(b, loc, tid, idx(kWaveSize)));
    w = ROCDL::ReadfirstlaneOp::create(b, loc, b.getI32Type(), w);
    waveId = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), w);
  }
  if (failed(distributeBlock(old)))
    return failure();
  old.dropAllDefinedValueUses();
  old.erase();
  stage_attrs::distributed.set(func);
  return success();
}

LogicalResult Distributor::distributeBlock(Block &src) {
  for (Operation &op : llvm::make_early_inc_range(src)) {
    if (failed(distribute(&op)))
      return failure();
  }
  return success();
}

LogicalResult Distributor::distribute(Operation *op) {
  loc = op->getLoc();
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return forLoop(loop);
  if (auto i = dyn_cast<scf::IfOp>(op))
    return ifOp(i);
  if (auto s = dyn_cast<gpu::SubgroupIdOp>(op)) {
    map.map(s.getResult(), waves > 1 ? waveId : idx(0));
    return success();
  }
  bool vectorOp = llvm::any_of(op->getOperandTypes(),
                               [](Type t) { return isa<VectorType>(t); }) ||
                  llvm::any_of(op->getResultTypes(),
                               [](Type t) { return isa<VectorType>(t); });
  if (!vectorOp || isa<scf::YieldOp>(op)) {
    if (auto e = dyn_cast<math::Exp2Op>(op); e && e.getType().isF32()) {
      // v_exp_f32 (math.exp2 would become an ocml call or a legalisation
      // failure on the GPU).
      map.map(e.getResult(), ROCDL::ROCDLExp2::create(b, loc, e.getType(),
                                                      mapped(e.getOperand())));
      return success();
    }
    b.clone(*op, map);
    return success();
  }
  // Stores, scatters: no vector result.
  if (auto s = dyn_cast<vector::StoreOp>(op))
    return store(s);
  if (auto s = dyn_cast<vector::ScatterOp>(op))
    return scatter(s);
  if (auto s = dyn_cast<uq::StoreRowsOp>(op))
    return storeRows(s);
  if (op->getNumResults() != 1)
    return op->emitOpError("has no lane-distribution pattern");
  FailureOr<Layout> l = layoutOf(op->getResult(0));
  if (failed(l))
    return failure();
  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return constant(c, *l);
  if (auto s = dyn_cast<vector::StepOp>(op))
    return step(s, *l);
  if (auto x = dyn_cast<vector::BroadcastOp>(op))
    return broadcast(x, *l);
  if (auto x = dyn_cast<vector::ShapeCastOp>(op))
    return shapeCast(x, *l);
  if (auto x = dyn_cast<vector::BitCastOp>(op))
    return bitcast(x, *l);
  if (auto x = dyn_cast<vector::MultiDimReductionOp>(op))
    return reduction(x, *l);
  if (auto x = dyn_cast<vector::GatherOp>(op))
    return gather(x, *l);
  if (auto x = dyn_cast<vector::LoadOp>(op))
    return load(x, *l);
  if (auto x = dyn_cast<uq::LoadRowsOp>(op))
    return loadRows(x, *l);
  if (auto x = dyn_cast<uq::ScaledMmaOp>(op))
    return scaledMma(x, *l);
  if (auto x = dyn_cast<vector::ContractionOp>(op))
    return contract(x, *l);
  if (auto x = dyn_cast<uq::ScaledExtOp>(op))
    return scaledExt(x, *l);
  if (auto x = dyn_cast<uq::RotateOp>(op))
    return rotate(x, *l);
  if (auto x = dyn_cast<uq::ToLayoutOp>(op))
    return toLayout(x, *l);
  if (op->hasTrait<OpTrait::Elementwise>())
    return elementwise(op, *l);
  return op->emitOpError("has no lane-distribution pattern");
}

//===----------------------------------------------------------------------===//
// Elementwise, constants, index vectors, reshapes
//===----------------------------------------------------------------------===//

LogicalResult Distributor::elementwise(Operation *op, const Layout &l) {
  Type resElem = cast<VectorType>(op->getResult(0).getType()).getElementType();
  SmallVector<Value> operands;
  for (Value v : op->getOperands()) {
    if (isVector(v)) {
      FailureOr<Layout> ol = layoutOf(v);
      if (failed(ol))
        return failure();
      if (*ol != l)
        return op->emitOpError() << "operand layout " << ol->str()
                                 << " differs from the result's " << l.str();
    }
    operands.push_back(mapped(v));
  }
  VectorType t = laneType(resElem, l);
  if (isa<math::Exp2Op>(op) && resElem.isF32()) {
    // v_exp_f32: the hardware's exp2 (math.exp2 would be an ocml call).
    SmallVector<Value> xs;
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      xs.push_back(ROCDL::ROCDLExp2::create(b, loc, b.getF32Type(),
                                            extract(operands[0], i)));
    map.map(op->getResult(0), fromElements(resElem, xs));
    return success();
  }
  OperationState st(loc, op->getName());
  st.addOperands(operands);
  st.addTypes(t);
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != stage_attrs::layout.getName())
      st.addAttribute(a.getName(), a.getValue());
  map.map(op->getResult(0), b.create(st)->getResult(0));
  return success();
}

LogicalResult Distributor::constant(arith::ConstantOp op, const Layout &l) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense || !dense.isSplat())
    return op.emitOpError("cannot be distributed: only splat vector "
                          "constants are");
  auto t = laneType(dense.getElementType(), l);
  map.map(op.getResult(), arith::ConstantOp::create(
                  b, loc, DenseElementsAttr::get(t, dense.getSplatValue<Attribute>())));
  return success();
}

LogicalResult Distributor::step(vector::StepOp op, const Layout &l) {
  const DimLayout &d = l.dim(0);
  SmallVector<int64_t> base;
  for (int64_t bi = 0; bi < d.batch; ++bi)
    for (int64_t e = 0; e < d.elems; ++e)
      base.push_back(bi * d.threads * d.elems + e);
  VectorType t = laneType(b.getIndexType(), l);
  Value c = arith::ConstantOp::create(b, loc, b.getIndexVectorAttr(base));
  if (d.threads > 1) {
    Value off = arith::MulIOp::create(b, loc, laneCoord(d), idx(d.elems));
    c = arith::AddIOp::create(b, loc, c,
                              vector::BroadcastOp::create(b, loc, t, off));
  }
  map.map(op->getResult(0), c);
  return success();
}

LogicalResult Distributor::broadcast(vector::BroadcastOp op, const Layout &l) {
  VectorType t = laneType(op.getResultVectorType().getElementType(), l);
  auto srcT = dyn_cast<VectorType>(op.getSourceType());
  if (!srcT) {
    map.map(op.getResult(),
            vector::BroadcastOp::create(b, loc, t, mapped(op.getSource())));
    return success();
  }
  FailureOr<Layout> sl = layoutOf(op.getSource());
  if (failed(sl))
    return failure();
  int64_t lead = l.rank() - srcT.getRank();
  SmallVector<int64_t> mask, bs, es, sb, se;
  for (int64_t f = 0; f < l.elementsPerLane(); ++f) {
    l.unflatten(f, bs, es);
    sb.assign(srcT.getRank(), 0);
    se.assign(srcT.getRank(), 0);
    for (int64_t i = 0; i < srcT.getRank(); ++i)
      if (srcT.getDimSize(i) != 1 || l.dim(lead + i).size() == 1) {
        sb[i] = bs[lead + i];
        se[i] = es[lead + i];
      }
    mask.push_back(sl->flatIndex(sb, se));
  }
  map.map(op->getResult(0), shuffle(mapped(op.getSource()), mask));
  return success();
}

/// Per-lane element of the source feeding each per-lane element of a
/// reshape, for the lane whose every thread coordinate is \p tc; false if a
/// result element comes from another lane.
static bool reshapeMask(const Layout &src, ArrayRef<int64_t> srcShape,
                        const Layout &res, ArrayRef<int64_t> resShape,
                        int64_t tc, SmallVectorImpl<int64_t> &mask) {
  SmallVector<int64_t> bs, es;
  mask.clear();
  for (int64_t f = 0; f < res.elementsPerLane(); ++f) {
    res.unflatten(f, bs, es);
    int64_t linear = 0;
    for (int64_t d = 0; d < res.rank(); ++d) {
      int64_t t = std::min(tc, res.dim(d).threads - 1);
      linear = linear * resShape[d] + res.logical(d, bs[d], t, es[d]);
    }
    SmallVector<int64_t> sb(src.rank()), se(src.rank());
    for (int64_t d = src.rank() - 1; d >= 0; --d) {
      int64_t i = linear % srcShape[d];
      linear /= srcShape[d];
      const DimLayout &dl = src.dim(d);
      se[d] = i % dl.elems;
      int64_t rest = i / dl.elems;
      sb[d] = rest / dl.threads;
    }
    mask.push_back(src.flatIndex(sb, se));
  }
  return true;
}

LogicalResult Distributor::shapeCast(vector::ShapeCastOp op, const Layout &l) {
  FailureOr<Layout> sl = layoutOf(op.getSource());
  if (failed(sl))
    return failure();
  SmallVector<int64_t> m0, m1;
  ArrayRef<int64_t> ss = op.getSourceVectorType().getShape(),
                    rs = op.getResultVectorType().getShape();
  reshapeMask(*sl, ss, l, rs, 0, m0);
  reshapeMask(*sl, ss, l, rs, 1, m1);
  if (m0 != m1)
    return op.emitOpError() << "cannot be distributed: layouts " << sl->str()
                            << " and " << l.str()
                            << " do not keep elements in their lanes";
  bool identity = true;
  for (auto [i, v] : llvm::enumerate(m0))
    identity &= int64_t(i) == v;
  Value src = mapped(op.getSource());
  map.map(op->getResult(0), identity && int64_t(m0.size()) == sl->elementsPerLane()
                  ? src
                  : shuffle(src, m0));
  return success();
}

LogicalResult Distributor::bitcast(vector::BitCastOp op, const Layout &l) {
  // Packing sub-byte integers (FP4 codes) from a truncation: shifts and ors
  // on the wider values, so that no vector of i4 reaches the backend (LLVM
  // legalises those through scratch memory).
  VectorType st = op.getSourceVectorType(), rt = op.getResultVectorType();
  unsigned sw = st.getElementTypeBitWidth(), rw = rt.getElementTypeBitWidth();
  auto trunc = op.getSource().getDefiningOp<arith::TruncIOp>();
  if (sw < 8 && rw % sw == 0 && trunc && rt.getElementType().isInteger(rw)) {
    Value wide = mapped(trunc.getIn());
    Type wt = cast<VectorType>(wide.getType()).getElementType();
    int64_t ratio = rw / sw;
    int64_t n = l.elementsPerLane();
    SmallVector<Value> out;
    for (int64_t j = 0; j < n; ++j) {
      Value acc;
      for (int64_t k = 0; k < ratio; ++k) {
        Value x = extract(wide, j * ratio + k);
        x = arith::AndIOp::create(
            b, loc, x,
            arith::ConstantIntOp::create(b, loc, wt, (int64_t(1) << sw) - 1));
        if (k)
          x = arith::ShLIOp::create(
              b, loc, x, arith::ConstantIntOp::create(b, loc, wt, k * sw));
        acc = acc ? arith::OrIOp::create(b, loc, acc, x).getResult() : x;
      }
      out.push_back(arith::TruncIOp::create(b, loc, rt.getElementType(), acc));
    }
    map.map(op.getResult(), fromElements(rt.getElementType(), out));
    return success();
  }
  map.map(op.getResult(), vector::BitCastOp::create(
                  b, loc, laneType(op.getResultVectorType().getElementType(), l),
                  mapped(op.getSource())));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult Distributor::reduction(vector::MultiDimReductionOp op,
                                     const Layout &l) {
  FailureOr<Layout> sl = layoutOf(op.getSource());
  if (failed(sl))
    return failure();
  int64_t rd = op.getReductionDims()[0];
  int64_t kd = 1 - rd;
  if (sl->rank() != 2)
    return op.emitOpError("cannot be distributed: 2-D sources only");
  const DimLayout &r = sl->dim(rd);
  vector::CombiningKind kind = op.getKind();
  Type elem = op.getSourceVectorType().getElementType();
  // Float sums keep the element-order tree unless reassociation is allowed.
  bool exact = kind == vector::CombiningKind::ADD && isa<FloatType>(elem) &&
               !stage_attrs::reassociate.isSet(op);
  Value src = mapped(op.getSource());
  Value acc = mapped(op.getAcc());
  auto tree = [&](SmallVector<Value> xs) {
    while (xs.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < xs.size(); i += 2)
        next.push_back(combine(kind, xs[i], xs[i + 1]));
      if (xs.size() % 2)
        next.push_back(xs.back());
      xs = next;
    }
    return xs[0];
  };
  auto acrossLanes = [&](Value x) {
    for (int64_t s = 1; s < r.threads; s *= 2)
      if (r.laneStride == 1 && s < 16 && dppReductions &&
          x.getType().getIntOrFloatBitWidth() == 32) {
        Value partner = rowButterflyPartner(x, s);
        // gfx9 folds DPP only into VOP1/VOP2 ops: v_max_f32 (maxnum), not
        // the VOP3 v_maximum3_f32 of maximumf. For a maximum marked
        // uq.max_ignores_nan (the softmax's row max): the lane's own elements were
        // combined with maximumf (a NaN among them stays NaN in this lane's
        // x); across lanes maxnum keeps the larger non-NaN value, so a row
        // holding a NaN gets a finite max only when another lane's is
        // finite. That changes no result: exp2(NaN - max) is NaN, so the
        // row's sum and output are NaN either way (docs/gpu-compiler.md,
        // "NaN in the softmax max").
        x = kind == vector::CombiningKind::MAXIMUMF &&
                    isa<FloatType>(x.getType()) &&
                    stage_attrs::maxIgnoresNaN.isSet(op)
                ? arith::MaxNumFOp::create(b, loc, x, partner).getResult()
                : combine(kind, x, partner);
      } else {
        x = combine(kind, x, shuffleXor(x, s * r.laneStride));
      }
    return x;
  };
  const DimLayout &k = sl->dim(kd);
  SmallVector<Value> outs;
  SmallVector<int64_t> bidx(2), eidx(2);
  for (int64_t kb = 0; kb < k.batch; ++kb)
    for (int64_t ke = 0; ke < k.elems; ++ke) {
      auto element = [&](int64_t rb, int64_t re) {
        bidx[kd] = kb;
        eidx[kd] = ke;
        bidx[rd] = rb;
        eidx[rd] = re;
        return extract(src, sl->flatIndex(bidx, eidx));
      };
      Value v;
      if (exact) {
        SmallVector<Value> perBatch;
        for (int64_t rb = 0; rb < r.batch; ++rb) {
          SmallVector<Value> run;
          for (int64_t re = 0; re < r.elems; ++re)
            run.push_back(element(rb, re));
          perBatch.push_back(acrossLanes(tree(run)));
        }
        v = tree(perBatch);
      } else {
        SmallVector<Value> all;
        for (int64_t rb = 0; rb < r.batch; ++rb)
          for (int64_t re = 0; re < r.elems; ++re)
            all.push_back(element(rb, re));
        v = acrossLanes(tree(all));
      }
      outs.push_back(v);
    }
  // Result order: the kept dimension's (batch, elem) = the 1-D layout's.
  Value red = fromElements(elem, outs);
  map.map(op->getResult(0), combine(kind, red, acc));
  return success();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

LogicalResult Distributor::gather(vector::GatherOp op, const Layout &l) {
  Value base = mapped(op.getBase());
  Value offset = mapped(op.getOffsets()[0]);
  Value index = mapped(op.getIndices()), mask = mapped(op.getMask()),
        pass = mapped(op.getPassThru());
  Type elem = op.getVectorType().getElementType();
  SmallVector<Value> xs;
  for (int64_t f = 0; f < l.elementsPerLane(); ++f) {
    Value i = arith::AddIOp::create(b, loc, offset, extract(index, f));
    Value p = extract(pass, f);
    auto ifOp = scf::IfOp::create(
        b, loc, extract(mask, f),
        [&](OpBuilder &tb, Location l) {
          scf::YieldOp::create(
              tb, l, ValueRange{memref::LoadOp::create(tb, l, base, i)});
        },
        [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, p); });
    xs.push_back(ifOp.getResult(0));
  }
  map.map(op->getResult(0), fromElements(elem, xs));
  return success();
}

LogicalResult Distributor::scatter(vector::ScatterOp op) {
  FailureOr<Layout> l = layoutOf(op.getValueToStore());
  if (failed(l))
    return failure();
  Value base = mapped(op.getBase());
  Value offset = mapped(op.getOffsets()[0]);
  Value index = mapped(op.getIndices()), mask = mapped(op.getMask()),
        value = mapped(op.getValueToStore());
  Value canonical = isCanonical(*l);
  for (int64_t f = 0; f < l->elementsPerLane(); ++f) {
    Value m = arith::AndIOp::create(b, loc, canonical, extract(mask, f));
    Value i = arith::AddIOp::create(b, loc, offset, extract(index, f));
    Value x = extract(value, f);
    scf::IfOp::create(b, loc, m, [&](OpBuilder &tb, Location l) {
      memref::StoreOp::create(tb, l, x, base, i);
      scf::YieldOp::create(tb, l);
    });
  }
  return success();
}

LogicalResult Distributor::load(vector::LoadOp op, const Layout &l) {
  if (l.rank() != 1)
    return op.emitOpError("cannot be distributed: 1-D loads only");
  const DimLayout &d = l.dim(0);
  Type elem = op.getVectorType().getElementType();
  Value base = mapped(op.getBase());
  Value start = mapped(op.getIndices()[0]);
  SmallVector<Value> runs;
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    Value at = arith::AddIOp::create(b, loc, start, logicalIndex(l, 0, bi, 0));
    runs.push_back(vector::LoadOp::create(
        b, loc, VectorType::get({d.elems}, elem), base, ValueRange{at}));
  }
  Value out = runs[0];
  if (runs.size() > 1) {
    out = zeros(laneType(elem, l));
    for (auto [i, r] : llvm::enumerate(runs))
      out = insertSlice(r, out, int64_t(i) * d.elems);
  }
  map.map(op->getResult(0), out);
  return success();
}

LogicalResult Distributor::store(vector::StoreOp op) {
  FailureOr<Layout> l = layoutOf(op.getValueToStore());
  if (failed(l))
    return failure();
  if (l->rank() != 1)
    return op.emitOpError("cannot be distributed: 1-D stores only");
  const DimLayout &d = l->dim(0);
  Value base = mapped(op.getBase());
  Value start = mapped(op.getIndices()[0]);
  Value value = mapped(op.getValueToStore());
  auto ifOp = scf::IfOp::create(b, loc, isCanonical(*l), false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  for (int64_t bi = 0; bi < d.batch; ++bi) {
    Value at = arith::AddIOp::create(b, loc, start, logicalIndex(*l, 0, bi, 0));
    vector::StoreOp::create(b, loc, slice(value, bi * d.elems, d.elems), base,
                            ValueRange{at});
  }
  return success();
}

std::pair<Value, int64_t> Distributor::rowOffsets(Value offsets) {
  auto add = offsets.getDefiningOp<arith::AddIOp>();
  FailureOr<Layout> whole = add ? layoutOf(offsets) : FailureOr<Layout>();
  if (add && succeeded(whole)) {
    for (int i = 0; i < 2; ++i) {
      Value c = add->getOperand(i), rest = add->getOperand(1 - i);
      std::optional<int64_t> k;
      SplatElementsAttr splat;
      APInt v;
      if (matchPattern(c, m_Constant(&splat)))
        k = splat.getSplatValue<APInt>().getSExtValue();
      else if (auto bc = c.getDefiningOp<vector::BroadcastOp>();
               bc && matchPattern(bc.getSource(), m_ConstantInt(&v)))
        k = v.getSExtValue();
      FailureOr<Layout> rl = layoutOf(rest);
      if (k && *k >= 0 && succeeded(rl) && *rl == *whole)
        return {mapped(rest), *k};
    }
  }
  return {mapped(offsets), 0};
}

Value Distributor::rowAddress(Value off, Value col, int64_t c) {
  auto flags = arith::IntegerOverflowFlags::nuw | arith::IntegerOverflowFlags::nsw;
  Value at = arith::AddIOp::create(b, loc, off, col, flags);
  if (c == 0)
    return at;
  return arith::AddIOp::create(b, loc, at, idx(c), flags);
}

LogicalResult Distributor::loadRows(uq::LoadRowsOp op, const Layout &l) {
  const DimLayout &rd = l.dim(0), &cd = l.dim(1);
  int64_t width = op.getRowWidth();
  if (width % cd.elems != 0)
    return op.emitOpError() << "cannot be distributed: row width " << width
                            << " is not whole runs of " << cd.elems;
  Type elem = op.getResult().getType().getElementType();
  VectorType run = VectorType::get({cd.elems}, elem);
  Value base = mapped(op.getBase());
  auto [offsets, constOff] = rowOffsets(op.getOffsets());
  Value mask = mapped(op.getMask());
  Value out = zeros(laneType(elem, l));
  Layout rows = l.project({0});
  for (int64_t rb = 0; rb < rd.batch; ++rb)
    for (int64_t re = 0; re < rd.elems; ++re) {
      int64_t ri = rows.flatIndex({rb}, {re});
      Value off = extract(offsets, ri), m = extract(mask, ri);
      for (int64_t cb = 0; cb < cd.batch; ++cb) {
        Value col = logicalIndex(l, 1, cb, 0);
        Value cond = m;
        if (width < l.shape()[1]) {
          // Lanes whose run starts past the data read zeros.
          Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                               col, idx(width));
          cond = arith::AndIOp::create(b, loc, cond, inside);
        }
        Value at = rowAddress(off, col, constOff);
        auto ifOp = scf::IfOp::create(
            b, loc, cond,
            [&](OpBuilder &tb, Location l) {
              scf::YieldOp::create(
                  tb, l,
                  ValueRange{vector::LoadOp::create(tb, l, run, base, at)});
            },
            [&](OpBuilder &eb, Location l) {
              scf::YieldOp::create(
                  eb, l,
                  ValueRange{arith::ConstantOp::create(eb, l,
                                                       eb.getZeroAttr(run))});
            });
        int64_t f = l.flatIndex({rb, cb}, {re, 0});
        out = insertSlice(ifOp.getResult(0), out, f);
      }
    }
  map.map(op->getResult(0), out);
  return success();
}

LogicalResult Distributor::storeRows(uq::StoreRowsOp op) {
  FailureOr<Layout> l = layoutOf(op.getValue());
  if (failed(l))
    return failure();
  const DimLayout &rd = l->dim(0), &cd = l->dim(1);
  Value base = mapped(op.getBase());
  auto [offsets, constOff] = rowOffsets(op.getOffsets());
  Value mask = mapped(op.getMask());
  Value value = mapped(op.getValue());
  Value canonical = isCanonical(*l);
  Layout rows = l->project({0});
  for (int64_t rb = 0; rb < rd.batch; ++rb)
    for (int64_t re = 0; re < rd.elems; ++re) {
      int64_t ri = rows.flatIndex({rb}, {re});
      Value off = extract(offsets, ri);
      Value m = arith::AndIOp::create(b, loc, canonical, extract(mask, ri));
      auto ifOp = scf::IfOp::create(b, loc, m, false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      for (int64_t cb = 0; cb < cd.batch; ++cb) {
        Value at = rowAddress(off, logicalIndex(*l, 1, cb, 0), constOff);
        int64_t f = l->flatIndex({rb, cb}, {re, 0});
        if (cd.elems == 1)
          memref::StoreOp::create(b, loc, extract(value, f), base, at);
        else
          vector::StoreOp::create(b, loc, slice(value, f, cd.elems), base,
                                  ValueRange{at});
      }
    }
  return success();
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// Whether \p op's MFMA tile is whole instructions of \p mfma that fit the
/// registers, and its operands (\p layouts) and result (\p result) are in
/// the layouts the table gives (\p expected); a located "cannot be
/// distributed" error otherwise. Stage IR from another compiler may carry
/// any layout.
static LogicalResult checkMfmaTile(Operation *op, const gfx950::Intrinsic &mfma,
                                   int64_t m, int64_t n, int64_t k, Type a,
                                   Type b, ArrayRef<Layout> layouts,
                                   ArrayRef<Layout> expected) {
  if (std::optional<std::string> why = gfx950::tileError(mfma, m, n, k, a, b))
    return op->emitOpError("cannot be distributed: ") << *why;
  for (auto [i, have, want] : llvm::enumerate(layouts, expected))
    if (have != want)
      return op->emitOpError("cannot be distributed: value ")
             << i << " of the " << mfma.mnemonic << " tile has lane layout "
             << have.str() << ", the instruction needs " << want.str();
  return success();
}

LogicalResult Distributor::scaledMma(uq::ScaledMmaOp op, const Layout &l) {
  const gfx950::Intrinsic &mfma = gfx950::kScaled16x16x128;
  VectorType at = op.getA().getType(), bt = op.getB().getType();
  int64_t m = at.getDimSize(0), n = bt.getDimSize(0), k = at.getDimSize(1);
  int64_t bm = m / mfma.m, bn = n / mfma.n, bk = k / mfma.k;
  FailureOr<Layout> al = layoutOf(op.getA()), bl = layoutOf(op.getB()),
                    sal = layoutOf(op.getAScales()),
                    sbl = layoutOf(op.getBScales());
  if (failed(al) || failed(bl) || failed(sal) || failed(sbl))
    return failure();
  if (const gfx950::OperandForm *fa = mfma.formOf(at.getElementType()),
      *fb = mfma.formOf(bt.getElementType());
      failed(checkMfmaTile(
          op, mfma, m, n, k, at.getElementType(), bt.getElementType(),
          {*al, *sal, *bl, *sbl, l},
          {mfmaLayout(fa ? fa->lanes : mfma.forms[0].lanes, m, k),
           mfmaLayout(mfma.scales, m, k / mfma.scaleBlock),
           mfmaLayout(fb ? fb->lanes : mfma.forms[0].lanes, n, k),
           mfmaLayout(mfma.scales, n, k / mfma.scaleBlock),
           mfmaLayout(mfma.result, m, n)})))
    return failure();
  Value a = mapped(op.getA()), bv = mapped(op.getB());
  Value sa = mapped(op.getAScales()), sb = mapped(op.getBScales());
  Value acc = mapped(op.getAcc());
  auto operand = [&](Value v, VectorType t, const Layout &ol, int64_t i,
                     int64_t c) {
    // The 32 (FP8) or 32 nibbles (FP4) of chunk c of row tile i.
    bool fp4 = isa<Float4E2M1FNType>(t.getElementType());
    int64_t f = fp4 ? ol.flatIndex({i, c}, {0, 0})
                    : ol.flatIndex({i, 2 * c}, {0, 0});
    return slice(v, f, 32);
  };
  VectorType accT = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> tiles;
  for (int64_t i = 0; i < bm; ++i)
    for (int64_t j = 0; j < bn; ++j) {
      Value c = slice(acc, l.flatIndex({i, j}, {0, 0}), 4);
      for (int64_t kc = 0; kc < bk; ++kc) {
        Value sA = extract(sa, sal->flatIndex({i, kc}, {0, 0}));
        Value sB = extract(sb, sbl->flatIndex({j, kc}, {0, 0}));
        c = amdgpu::ScaledMFMAOp::create(
            b, loc, accT, b.getI32IntegerAttr(16), b.getI32IntegerAttr(16),
            b.getI32IntegerAttr(128), operand(a, at, *al, i, kc),
            operand(bv, bt, *bl, j, kc), c, sA, sB, b.getI32IntegerAttr(0),
            b.getI32IntegerAttr(0));
      }
      tiles.push_back(c);
    }
  Value out = zeros(laneType(b.getF32Type(), l));
  for (auto [t, v] : llvm::enumerate(tiles))
    out = insertSlice(v, out, int64_t(t) * 4);
  map.map(op->getResult(0), out);
  return success();
}

LogicalResult Distributor::contract(vector::ContractionOp op, const Layout &l) {
  auto lt = cast<VectorType>(op.getLhs().getType());
  auto rt = cast<VectorType>(op.getRhs().getType());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool nk = maps[1].getResult(0) == getAffineDimExpr(1, op.getContext());
  const gfx950::Intrinsic &mfma = gfx950::k16x16x32;
  int64_t m = lt.getDimSize(0), k = lt.getDimSize(1);
  int64_t n = nk ? rt.getDimSize(0) : rt.getDimSize(1);
  int64_t bm = m / mfma.m, bk = k / mfma.k, bn = n / mfma.n;
  FailureOr<Layout> al = layoutOf(op.getLhs()), bl = layoutOf(op.getRhs());
  if (failed(al) || failed(bl))
    return failure();
  const gfx950::OperandForm *form = mfma.formOf(lt.getElementType());
  const gfx950::OperandLanes &lanes =
      form ? form->lanes : mfma.forms[0].lanes;
  if (failed(checkMfmaTile(op, mfma, m, n, k, lt.getElementType(),
                           rt.getElementType(), {*al, *bl, l},
                           {mfmaLayout(lanes, m, k),
                            mfmaLayout(lanes, n, k, /*transposed=*/!nk),
                            mfmaLayout(mfma.result, m, n)})))
    return failure();
  Value a = mapped(op.getLhs()), bv = mapped(op.getRhs()),
        acc = mapped(op.getAcc());
  VectorType accT = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> tiles;
  for (int64_t i = 0; i < bm; ++i)
    for (int64_t j = 0; j < bn; ++j) {
      Value c = slice(acc, l.flatIndex({i, j}, {0, 0}), 4);
      for (int64_t kc = 0; kc < bk; ++kc) {
        Value av = slice(a, al->flatIndex({i, kc}, {0, 0}), 8);
        int64_t bf = nk ? bl->flatIndex({j, kc}, {0, 0})
                        : bl->flatIndex({kc, j}, {0, 0});
        c = amdgpu::MFMAOp::create(b, loc, accT, 16, 16, 32, 1, av,
                                   slice(bv, bf, 8), c);
      }
      tiles.push_back(c);
    }
  Value out = zeros(laneType(b.getF32Type(), l));
  for (auto [t, v] : llvm::enumerate(tiles))
    out = insertSlice(v, out, int64_t(t) * 4);
  map.map(op->getResult(0), out);
  return success();
}

LogicalResult Distributor::scaledExt(uq::ScaledExtOp op, const Layout &l) {
  Type codeElem = op.getCodes().getType().getElementType();
  Type res = op.getResult().getType().getElementType();
  if (!isa<Float4E2M1FNType>(codeElem) || !(res.isBF16() || res.isF32()))
    return op.emitOpError("cannot be distributed: FP4 codes to bf16/f32 "
                          "only");
  FailureOr<Layout> sl = layoutOf(op.getScales());
  if (failed(sl))
    return failure();
  int64_t n = l.elementsPerLane();
  if (n % 8 != 0 || l.dim(1).elems % 2 != 0)
    return op.emitOpError("cannot be distributed: a lane needs whole bytes "
                          "of codes in runs of whole words");
  Value words = vector::BitCastOp::create(
      b, loc, VectorType::get({n / 8}, b.getI32Type()), mapped(op.getCodes()));
  Value scaleBytes = vector::BitCastOp::create(
      b, loc, VectorType::get({sl->elementsPerLane()}, b.getI8Type()),
      mapped(op.getScales()));
  // The E8M0 byte shifted into an f32 exponent: the instruction uses only
  // the exponent of its scale operand (gfx950-notes.md). An E4M3 scale
  // (the `scale = e4m3` value format) is not a power of two: the codes are
  // converted with scale 1 and multiplied by its f32 value, exactly (see
  // e4m3Value).
  const bool e4m3 = isa<Float8E4M3FNType>(
      op.getScales().getType().getElementType());
  std::map<int64_t, Value> scaleOf;
  auto scaleFor = [&](int64_t f) {
    SmallVector<int64_t> bs, es;
    l.unflatten(f, bs, es);
    int64_t col = l.logical(1, bs[1], 0, es[1]);
    const DimLayout &sd = sl->dim(1);
    int64_t group = col / 32;
    int64_t sb = group / (sd.threads * sd.elems);
    int64_t sf = sl->flatIndex({bs[0], sb}, {es[0], 0});
    if (auto it = scaleOf.find(sf); it != scaleOf.end())
      return it->second;
    Value byte = arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                        extract(scaleBytes, sf));
    Value s = e4m3 ? e4m3Value(byte)
                   : arith::BitcastOp::create(
                         b, loc, b.getF32Type(),
                         arith::ShLIOp::create(b, loc, byte, i32(23)));
    scaleOf[sf] = s;
    return s;
  };
  VectorType pair = VectorType::get({2}, res);
  SmallVector<Value> halves;
  if (e4m3) {
    // fp4 -> f32 with scale 1.0 (E8M0 127), times S in f32: code (at most 2
    // significant bits) times S (at most 4) is exact in f32 and in bf16.
    VectorType f32x2 = VectorType::get({2}, b.getF32Type());
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    for (int64_t f = 0; f < n; f += 2) {
      Value p = ROCDL::CvtScaleF32PkF32Fp4Op::create(
          b, loc, f32x2, extract(words, f / 8), one, (f % 8) / 2);
      // As pairs: v_pk_mul_f32, then one v_cvt_pk_bf16_f32.
      Value x = arith::MulFOp::create(
          b, loc, p, vector::BroadcastOp::create(b, loc, f32x2, scaleFor(f)));
      if (res.isBF16())
        x = arith::TruncFOp::create(b, loc, pair, x);
      halves.push_back(extract(x, 0));
      halves.push_back(extract(x, 1));
    }
    map.map(op->getResult(0), fromElements(res, halves));
    return success();
  }
  for (int64_t f = 0; f < n; f += 2) {
    Value w = extract(words, f / 8);
    uint32_t sel = (f % 8) / 2;
    Value p;
    if (res.isBF16())
      p = ROCDL::CvtScaleF32PkBf16Fp4Op::create(b, loc, pair, w, scaleFor(f),
                                                sel);
    else
      p = ROCDL::CvtScaleF32PkF32Fp4Op::create(b, loc, pair, w, scaleFor(f),
                                               sel);
    halves.push_back(extract(p, 0));
    halves.push_back(extract(p, 1));
  }
  map.map(op->getResult(0), fromElements(res, halves));
  return success();
}

LogicalResult Distributor::rotate(uq::RotateOp op, const Layout &l) {
  auto t = cast<VectorType>(op.getType());
  int64_t last = l.rank() - 1;
  const DimLayout &d = l.dim(last);
  int64_t len = t.getShape().back();
  Type elem = t.getElementType();
  Value v = mapped(op.getInput());
  int64_t n = l.elementsPerLane();
  SmallVector<Value> xs;
  for (int64_t f = 0; f < n; ++f)
    xs.push_back(extract(v, f));
  SmallVector<int64_t> bs, es;
  auto posOf = [&](int64_t f) {
    l.unflatten(f, bs, es);
    return std::make_pair(bs[last], es[last]);
  };
  for (int64_t span = 1; span < len; span *= 2) {
    SmallVector<Value> next(n);
    if (span < d.elems) {
      // Partner in the lane's own run.
      for (int64_t f = 0; f < n; ++f) {
        auto [bb, e] = posOf(f);
        SmallVector<int64_t> pb = bs, pe = es;
        pe[last] = e ^ span;
        Value p = xs[l.flatIndex(pb, pe)];
        bool upper = e & span;
        next[f] = upper ? arith::SubFOp::create(b, loc, p, xs[f]).getResult()
                        : arith::AddFOp::create(b, loc, xs[f], p).getResult();
      }
    } else if (span < d.elems * d.threads) {
      // Partner in lane ^ (laneStride * span / elems).
      int64_t bit = span / d.elems;
      Value upper = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, loc, laneCoord(d), idx(bit)), idx(0));
      for (int64_t f = 0; f < n; ++f) {
        Value p = shuffleXor(xs[f], bit * d.laneStride);
        Value sum = arith::AddFOp::create(b, loc, xs[f], p);
        Value diff = arith::SubFOp::create(b, loc, p, xs[f]);
        next[f] = arith::SelectOp::create(b, loc, upper, diff, sum);
      }
    } else {
      // Partner in another batch of the lane.
      int64_t bbit = span / (d.elems * d.threads);
      for (int64_t f = 0; f < n; ++f) {
        posOf(f);
        int64_t bb = bs[last];
        SmallVector<int64_t> pb = bs, pe = es;
        pb[last] = bb ^ bbit;
        Value p = xs[l.flatIndex(pb, pe)];
        bool upper = bb & bbit;
        next[f] = upper ? arith::SubFOp::create(b, loc, p, xs[f]).getResult()
                        : arith::AddFOp::create(b, loc, xs[f], p).getResult();
      }
    }
    xs = next;
  }
  FloatAttr norm = b.getFloatAttr(elem, 1.0 / std::sqrt(double(len)));
  Value c = arith::ConstantOp::create(b, loc, norm);
  for (Value &x : xs)
    x = arith::MulFOp::create(b, loc, x, c);
  map.map(op->getResult(0), fromElements(elem, xs));
  return success();
}

//===----------------------------------------------------------------------===//
// Layout conversion through LDS
//===----------------------------------------------------------------------===//

LogicalResult Distributor::toLayout(uq::ToLayoutOp op, const Layout &dst) {
  FailureOr<Layout> srcL = layoutOf(op.getInput());
  if (failed(srcL))
    return failure();
  if (*srcL == dst) {
    map.map(op->getResult(0), mapped(op.getInput()));
    return success();
  }
  auto t = cast<VectorType>(op.getType());
  if (t.getRank() != 2)
    return op.emitOpError("cannot be distributed: 2-D conversions only");
  Type elem = t.getElementType();
  int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
  // Layout decision "transposing reads": a 16-bit [K x N] tile bound for the
  // B operand of a 16x16x32 MFMA (lane l: K 8 (l / 16) .. + 7 of column
  // l % 16, Layout.h mfma16x16x32B) is staged row-major, so that the source
  // stores its runs along N as they are, and each lane reads its 8 K values
  // as two ds_read_b64_tr_b16. Lane map (docs/emulator.md "Transposing LDS
  // reads"; Triton's chooseDsReadB64TrLayout): in each group of 16 lanes,
  // lane j reads the 4 elements at [r0 + j / 4][c0 + 4 (j % 4) ..] and lane
  // i gets [r0 + e][c0 + i], e = 0..3.
  // Taken when the source's runs along N are at least as long as along K
  // (its stores are then no narrower than the K-major buffer's, and need no
  // permutes).
  const DimLayout &dk = dst.dim(0), &dn = dst.dim(1);
  const int64_t elemBits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 0;
  bool tr16 = transposeReads && elemBits == 16 &&
              srcL->dim(1).elems >= srcL->dim(0).elems &&
              dk.threads == 4 && dk.elems == 8 && dk.laneStride == 16 &&
              dn.threads == 16 && dn.elems == 1 && dn.laneStride == 1;
  // LDS keeps the destination's longest runs contiguous (row-major for the
  // transposing reads).
  int64_t inner = tr16 || dst.dim(0).elems <= dst.dim(1).elems ? 1 : 0;
  // Rows of the transposing reads' buffer are padded (option
  // transpose-row-pad, bytes): with 16 bytes, the 16 rows one 16-byte store
  // phase writes start 4 banks apart (no conflict) and the 8 rows of a
  // 32-lane ds_read_b64_tr_b16 phase meet at most twice per bank, where
  // unpadded 256-byte rows put every row on the same banks (16-way / 8-way
  // conflicts; the timing model's bank rule, docs/timing-model.md).
  int64_t rowStride = tr16 ? cols + (transposeRowPad + 1) / 2 : cols;
  // With several waves, wave w converts in elements [w * part, ...).
  const int64_t part = rows * rowStride;
  Value waveBase =
      waves > 1 ? arith::MulIOp::create(b, loc, waveId, idx(part)).getResult()
                : Value();
  auto linear = [&](Value r, Value c) {
    Value at = inner == 1
                   ? arith::AddIOp::create(
                         b, loc,
                         arith::MulIOp::create(b, loc, r, idx(rowStride)), c)
                         .getResult()
                   : arith::AddIOp::create(
                         b, loc, arith::MulIOp::create(b, loc, c, idx(rows)), r)
                         .getResult();
    return waveBase ? arith::AddIOp::create(b, loc, at, waveBase).getResult()
                    : at;
  };
  Value buf = acquireLds(MemRefType::get(
      {part * waves}, elem, AffineMap(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup)));

  // Writes: runs of the source along `inner`, gathered from the lane's
  // vector, one store each.
  auto writeOrRead = [&](const Layout &l, Value vec, bool write) -> Value {
    const DimLayout &in = l.dim(inner);
    int64_t outer = 1 - inner;
    const DimLayout &ot = l.dim(outer);
    VectorType runT = VectorType::get({in.elems}, elem);
    Value result = write ? Value() : zeros(laneType(elem, l));
    SmallVector<int64_t> bs(2), es(2);
    for (int64_t ob = 0; ob < ot.batch; ++ob)
      for (int64_t oe = 0; oe < ot.elems; ++oe)
        for (int64_t ib = 0; ib < in.batch; ++ib) {
          SmallVector<int64_t> positions;
          for (int64_t ie = 0; ie < in.elems; ++ie) {
            bs[outer] = ob;
            es[outer] = oe;
            bs[inner] = ib;
            es[inner] = ie;
            positions.push_back(l.flatIndex(bs, es));
          }
          Value rIdx = logicalIndex(l, 0, inner == 0 ? ib : ob,
                                    inner == 0 ? 0 : oe);
          Value cIdx = logicalIndex(l, 1, inner == 1 ? ib : ob,
                                    inner == 1 ? 0 : oe);
          Value at = linear(rIdx, cIdx);
          if (write) {
            Value run = in.elems == 1 ? Value() : shuffle(vec, positions);
            if (in.elems == 1)
              memref::StoreOp::create(b, loc, extract(vec, positions[0]), buf,
                                      at);
            else
              vector::StoreOp::create(b, loc, run, buf, ValueRange{at});
          } else {
            if (in.elems == 1) {
              Value x = memref::LoadOp::create(b, loc, buf, at);
              result = vector::InsertOp::create(b, loc, x, result,
                                                positions[0]);
            } else {
              Value run = vector::LoadOp::create(b, loc, runT, buf,
                                                 ValueRange{at});
              for (auto [k, p] : llvm::enumerate(positions))
                result = vector::InsertOp::create(b, loc, extract(run, k),
                                                  result, p);
            }
          }
        }
    return result;
  };
  {
    auto ifOp = scf::IfOp::create(b, loc, isCanonical(*srcL), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    writeOrRead(*srcL, mapped(op.getInput()), /*write=*/true);
  }
  gpu::BarrierOp::create(b, loc);
  if (tr16) {
    VectorType quad = VectorType::get({4}, elem);
    Value result = zeros(laneType(elem, dst));
    Value j = arith::RemUIOp::create(b, loc, lane, idx(16));
    Value g = arith::DivUIOp::create(b, loc, lane, idx(16));
    // Per lane: row j / 4 + 8 g, column 4 (j % 4) of each 4 x 16 block.
    Value r = arith::AddIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, j, idx(4)),
        arith::MulIOp::create(b, loc, g, idx(8)));
    Value c = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, j, idx(4)), idx(4));
    Value laneAt = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, r, idx(rowStride)), c);
    if (waveBase)
      laneAt = arith::AddIOp::create(b, loc, laneAt, waveBase);
    for (int64_t kb = 0; kb < dk.batch; ++kb)
      for (int64_t nb = 0; nb < dn.batch; ++nb)
        for (int64_t h = 0; h < 2; ++h) {
          int64_t at = (kb * 32 + 4 * h) * rowStride + nb * 16;
          Value x = amdgpu::TransposeLoadOp::create(
              b, loc, quad, buf, ValueRange{rowAddress(laneAt, idx(at), 0)});
          result = insertSlice(x, result, dst.flatIndex({kb, nb}, {4 * h, 0}));
        }
    map.map(op->getResult(0), result);
  } else {
    map.map(op->getResult(0), writeOrRead(dst, Value(), /*write=*/false));
  }
  if (loopDepth > 0) {
    loopUsedLds = true;
    loopLds.push_back(buf);
  } else {
    gpu::BarrierOp::create(b, loc);
    freeLds.push_back(buf);
  }
  return success();
}

Value Distributor::acquireLds(MemRefType type) {
  for (auto *it = freeLds.begin(); it != freeLds.end(); ++it)
    if (it->getType() == type) {
      Value buf = *it;
      freeLds.erase(it);
      return buf;
    }
  return func.addWorkgroupAttribution(type, loc);
}

//===----------------------------------------------------------------------===//
// Structured control flow
//===----------------------------------------------------------------------===//

LogicalResult Distributor::forLoop(scf::ForOp op) {
  SmallVector<Value> inits;
  for (Value v : op.getInitArgs())
    inits.push_back(mapped(v));
  SmallVector<Type> types;
  for (Value r : op.getResults()) {
    if (!isVector(r)) {
      types.push_back(r.getType());
      continue;
    }
    FailureOr<Layout> l = layoutOf(r);
    if (failed(l))
      return failure();
    types.push_back(laneType(cast<VectorType>(r.getType()).getElementType(), *l));
  }
  auto loop = scf::ForOp::create(b, loc, mapped(op.getLowerBound()),
                                 mapped(op.getUpperBound()),
                                 mapped(op.getStep()), inits);
  Block *body = loop.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  map.map(op.getInductionVar(), loop.getInductionVar());
  for (auto [o, n] : llvm::zip(op.getRegionIterArgs(), loop.getRegionIterArgs()))
    map.map(o, n);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToEnd(body);
  bool outer = loopUsedLds;
  loopUsedLds = false;
  SmallVector<Value> outerLds = std::move(loopLds);
  loopLds.clear();
  ++loopDepth;
  for (Operation &inner : op.getBody()->without_terminator())
    if (failed(distribute(&inner)))
      return failure();
  --loopDepth;
  // LDS buffers are written again by the next iteration.
  if (loopUsedLds)
    gpu::BarrierOp::create(b, loc);
  // After the loop's last trailing barrier its buffers are free (layout
  // decision "LDS reuse": sequential loops, e.g. the full tiles and the
  // last partial tile, stage through the same buffers).
  freeLds.append(loopLds.begin(), loopLds.end());
  loopLds = std::move(outerLds);
  loopUsedLds = outer || (loopDepth > 0 && loopUsedLds);
  SmallVector<Value> yields;
  for (Value v : op.getBody()->getTerminator()->getOperands())
    yields.push_back(mapped(v));
  scf::YieldOp::create(b, loc, yields);
  for (auto [o, n] : llvm::zip(op.getResults(), loop.getResults()))
    map.map(o, n);
  (void)types;
  return success();
}

LogicalResult Distributor::ifOp(scf::IfOp op) {
  if (llvm::any_of(op.getResultTypes(),
                   [](Type t) { return isa<VectorType>(t); }))
    return op.emitOpError("cannot be distributed: scf.if with vector results");
  auto n = scf::IfOp::create(b, loc, op.getResultTypes(),
                             mapped(op.getCondition()),
                             /*withElse=*/!op.getElseRegion().empty());
  auto fill = [&](Region &from, Region &to) -> LogicalResult {
    if (from.empty())
      return success();
    Block *blk = &to.front();
    if (!blk->empty())
      blk->getTerminator()->erase();
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToEnd(blk);
    for (Operation &inner : from.front())
      if (failed(distribute(&inner)))
        return failure();
    return success();
  };
  if (failed(fill(op.getThenRegion(), n.getThenRegion())) ||
      failed(fill(op.getElseRegion(), n.getElseRegion())))
    return failure();
  for (auto [o, r] : llvm::zip(op.getResults(), n.getResults()))
    map.map(o, r);
  return success();
}

struct DistributeToLanesPass
    : public uq::impl::DistributeToLanesPassBase<DistributeToLanesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(uq::lanes::checkChip(getOperation(), "uq-distribute-to-lanes", chip)))
      return signalPassFailure();
    SmallVector<gpu::GPUFuncOp> funcs;
    getOperation()->walk([&](gpu::GPUFuncOp f) {
      if (f.isKernel())
        funcs.push_back(f);
    });
    for (gpu::GPUFuncOp f : funcs) {
      if (transposeRowPad < 0 || transposeRowPad % 8 != 0)
        return (void)(f.emitError()
                          << "transpose-row-pad must be a non-negative "
                             "multiple of 8 bytes (ds_read_b64_tr_b16 reads "
                             "8-byte aligned), got "
                          << static_cast<int64_t>(transposeRowPad)),
               signalPassFailure();
      Distributor d(f, dppReductions, transposeReads, transposeRowPad);
      if (failed(d.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
