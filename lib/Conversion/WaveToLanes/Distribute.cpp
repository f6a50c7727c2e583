//===- Distribute.cpp - Wave-level kernels to per-lane gfx950 code --------===//
//
// uq-distribute-to-lanes: rewrites a wave-level kernel whose vector values
// carry lane layouts (uq-assign-lane-layouts) into code per lane. Each
// wave-level vector becomes the lane's 1-D vector of its elements (Layout.h);
// every op kind has one distribution pattern, looked up in a table
// (patterns() below; Distributor.h lists the files of each family):
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

#include "Distributor.h"

#include "uq/Conversion/Passes.h"

namespace uq {
#define GEN_PASS_DEF_DISTRIBUTETOLANESPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

namespace uq::lanes::distribution {

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
  Operation *at =
      v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp();
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
    Value v = arith::BitcastOp::create(b, loc, b.getIntegerType(64), x);
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

const Distributor::PatternTable &Distributor::patterns() {
  static const PatternTable table = [] {
    PatternTable t;
    t.resultless[TypeID::get<vector::StoreOp>()] =
        &applyResultless<vector::StoreOp, &Distributor::store>;
    t.resultless[TypeID::get<vector::ScatterOp>()] =
        &applyResultless<vector::ScatterOp, &Distributor::scatter>;
    t.resultless[TypeID::get<uq::StoreRowsOp>()] =
        &applyResultless<uq::StoreRowsOp, &Distributor::storeRows>;
    auto &p = t.withLayout;
    p[TypeID::get<arith::ConstantOp>()] =
        &apply<arith::ConstantOp, &Distributor::constant>;
    p[TypeID::get<vector::StepOp>()] =
        &apply<vector::StepOp, &Distributor::step>;
    p[TypeID::get<vector::BroadcastOp>()] =
        &apply<vector::BroadcastOp, &Distributor::broadcast>;
    p[TypeID::get<vector::ShapeCastOp>()] =
        &apply<vector::ShapeCastOp, &Distributor::shapeCast>;
    p[TypeID::get<vector::BitCastOp>()] =
        &apply<vector::BitCastOp, &Distributor::bitcast>;
    p[TypeID::get<vector::MultiDimReductionOp>()] =
        &apply<vector::MultiDimReductionOp, &Distributor::reduction>;
    p[TypeID::get<vector::GatherOp>()] =
        &apply<vector::GatherOp, &Distributor::gather>;
    p[TypeID::get<vector::LoadOp>()] =
        &apply<vector::LoadOp, &Distributor::load>;
    p[TypeID::get<uq::LoadRowsOp>()] =
        &apply<uq::LoadRowsOp, &Distributor::loadRows>;
    p[TypeID::get<uq::ScaledMmaOp>()] =
        &apply<uq::ScaledMmaOp, &Distributor::scaledMma>;
    p[TypeID::get<vector::ContractionOp>()] =
        &apply<vector::ContractionOp, &Distributor::contract>;
    p[TypeID::get<uq::ScaledExtOp>()] =
        &apply<uq::ScaledExtOp, &Distributor::scaledExt>;
    p[TypeID::get<uq::RotateOp>()] = &apply<uq::RotateOp, &Distributor::rotate>;
    p[TypeID::get<uq::ToLayoutOp>()] =
        &apply<uq::ToLayoutOp, &Distributor::toLayout>;
    return t;
  }();
  return table;
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
  const PatternTable &table = patterns();
  TypeID id = op->getName().getTypeID();
  // Stores, scatters: no vector result.
  if (auto it = table.resultless.find(id); it != table.resultless.end())
    return it->second(*this, op);
  if (op->getNumResults() != 1)
    return op->emitOpError("has no lane-distribution pattern");
  FailureOr<Layout> l = layoutOf(op->getResult(0));
  if (failed(l))
    return failure();
  // The size bound: every pattern emits work proportional to a lane's
  // elements (operands were results of ops checked before).
  if (auto t = dyn_cast<VectorType>(op->getResult(0).getType()))
    if (std::optional<std::string> why = tileSizeError(t, &*l))
      return op->emitOpError("cannot be distributed: ") << *why;
  if (auto it = table.withLayout.find(id); it != table.withLayout.end())
    return it->second(*this, op, *l);
  if (op->hasTrait<OpTrait::Elementwise>())
    return elementwise(op, *l);
  return op->emitOpError("has no lane-distribution pattern");
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
    if (std::optional<std::string> why =
            tileSizeError(cast<VectorType>(r.getType()), &*l))
      return op.emitOpError("cannot be distributed: result ")
             << cast<OpResult>(r).getResultNumber() << ": " << *why;
    types.push_back(
        laneType(cast<VectorType>(r.getType()).getElementType(), *l));
  }
  auto loop = scf::ForOp::create(b, loc, mapped(op.getLowerBound()),
                                 mapped(op.getUpperBound()),
                                 mapped(op.getStep()), inits);
  Block *body = loop.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  map.map(op.getInductionVar(), loop.getInductionVar());
  for (auto [o, n] :
       llvm::zip(op.getRegionIterArgs(), loop.getRegionIterArgs()))
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
  auto n =
      scf::IfOp::create(b, loc, op.getResultTypes(), mapped(op.getCondition()),
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

} // namespace uq::lanes::distribution

namespace {

using namespace mlir;
using uq::lanes::distribution::Distributor;

struct DistributeToLanesPass
    : public uq::impl::DistributeToLanesPassBase<DistributeToLanesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(uq::lanes::checkChip(getOperation(), "uq-distribute-to-lanes",
                                    chip)))
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
