//===- DistributeMemory.cpp - Per-lane memory access
//------------------------===//
//
// Distribution patterns of loads, stores, gathers, scatters, row tiles
// (uq.load_rows / uq.store_rows) and layout conversions through LDS.
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"

namespace uq::lanes::distribution {

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
  auto flags =
      arith::IntegerOverflowFlags::nuw | arith::IntegerOverflowFlags::nsw;
  Value at = arith::AddIOp::create(b, loc, off, col, flags);
  if (c == 0)
    return at;
  return arith::AddIOp::create(b, loc, at, idx(c), flags);
}

LogicalResult Distributor::loadRows(uq::LoadRowsOp op, const Layout &l) {
  // Layout decision "transposing reads from a shared tile" (Layout.h): the
  // rows sit at base + r * pitch of an LDS buffer and every row is read, so
  // each lane reads its 8 K values of the B operand as two
  // ds_read_b64_tr_b16 per 16 columns, with toLayout's lane map: in each
  // group g of 16 lanes, lane j reads [8 g + 4 h + j / 4][c0 + 4 (j % 4)
  // ..] and lane i gets [8 g + 4 h + e][c0 + i], e = 0..3.
  if (transposeReads)
    if (std::optional<UniformRows> ur = transposeReadRows(op, l)) {
      const DimLayout &dk = l.dim(0), &dn = l.dim(1);
      Type elem = op.getResult().getType().getElementType();
      VectorType quad = VectorType::get({4}, elem);
      Value result = zeros(laneType(elem, l));
      Value j = arith::RemUIOp::create(b, loc, lane, idx(16));
      Value g = arith::DivUIOp::create(b, loc, lane, idx(16));
      Value r = arith::AddIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, j, idx(4)),
          arith::MulIOp::create(b, loc, g, idx(8)));
      Value c = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, j, idx(4)), idx(4));
      Value laneAt = rowAddress(
          mapped(ur->base),
          arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, r, idx(ur->pitch)), c),
          0);
      Value base = mapped(op.getBase());
      for (int64_t kb = 0; kb < dk.batch; ++kb)
        for (int64_t nb = 0; nb < dn.batch; ++nb)
          for (int64_t h = 0; h < 2; ++h) {
            int64_t at = (kb * 32 + 4 * h) * ur->pitch + nb * 16;
            Value x = amdgpu::TransposeLoadOp::create(
                b, loc, quad, base, ValueRange{rowAddress(laneAt, idx(at), 0)});
            result = insertSlice(x, result, l.flatIndex({kb, nb}, {4 * h, 0}));
          }
      map.map(op->getResult(0), result);
      return success();
    }
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
          Value inside = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, col, idx(width));
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
              scf::YieldOp::create(eb, l,
                                   ValueRange{arith::ConstantOp::create(
                                       eb, l, eb.getZeroAttr(run))});
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
// Layout conversion through LDS
//===----------------------------------------------------------------------===//

/// A conversion in three steps: the source's lanes write their runs into an
/// LDS buffer (ldsRuns), a barrier, the destination's lanes read theirs back
/// (ldsRuns, or transposingRead for the B operand of a 16-bit MFMA); the
/// buffer is then free for the next conversion of its type.
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
  bool tr16 = useTransposingReads(*srcL, dst, elem);
  LdsStaging st;
  st.rows = rows;
  // LDS keeps the destination's longest runs contiguous (row-major for the
  // transposing reads).
  st.inner = tr16 || dst.dim(0).elems <= dst.dim(1).elems ? 1 : 0;
  // Rows of the transposing reads' buffer are padded (option
  // transpose-row-pad, bytes): with 16 bytes, the 16 rows one 16-byte store
  // phase writes start 4 banks apart (no conflict) and the 8 rows of a
  // 32-lane ds_read_b64_tr_b16 phase meet at most twice per bank, where
  // unpadded 256-byte rows put every row on the same banks (16-way / 8-way
  // conflicts; the timing model's bank rule, docs/timing-model.md).
  st.rowStride = tr16 ? cols + (transposeRowPad + 1) / 2 : cols;
  // With several waves, wave w converts in elements [w * part, ...).
  const int64_t part = rows * st.rowStride;
  st.waveBase =
      waves > 1 ? arith::MulIOp::create(b, loc, waveId, idx(part)).getResult()
                : Value();
  st.buf = acquireLds(
      MemRefType::get({part * waves}, elem, AffineMap(),
                      gpu::AddressSpaceAttr::get(
                          b.getContext(), gpu::AddressSpace::Workgroup)));
  {
    auto ifOp = scf::IfOp::create(b, loc, isCanonical(*srcL), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    ldsRuns(st, *srcL, mapped(op.getInput()), /*write=*/true);
  }
  gpu::BarrierOp::create(b, loc);
  map.map(op->getResult(0), tr16 ? transposingRead(st, dst)
                                 : ldsRuns(st, dst, Value(), /*write=*/false));
  if (loopDepth > 0) {
    loopUsedLds = true;
    loopLds.push_back(st.buf);
  } else {
    gpu::BarrierOp::create(b, loc);
    freeLds.push_back(st.buf);
  }
  return success();
}

bool Distributor::useTransposingReads(const Layout &src, const Layout &dst,
                                      Type elem) {
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
  const int64_t elemBits =
      elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 0;
  return transposeReads && elemBits == 16 &&
         src.dim(1).elems >= src.dim(0).elems && dk.threads == 4 &&
         dk.elems == 8 && dk.laneStride == 16 && dn.threads == 16 &&
         dn.elems == 1 && dn.laneStride == 1;
}

Value Distributor::ldsIndex(const LdsStaging &st, Value r, Value c) {
  Value at =
      st.inner == 1
          ? arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, r, idx(st.rowStride)), c)
                .getResult()
          : arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, c, idx(st.rows)), r)
                .getResult();
  return st.waveBase
             ? arith::AddIOp::create(b, loc, at, st.waveBase).getResult()
             : at;
}

Value Distributor::ldsRuns(const LdsStaging &st, const Layout &l, Value vec,
                           bool write) {
  // Runs of the layout along `inner`, gathered from (or scattered into) the
  // lane's vector, one store (load) each.
  Type elem = cast<MemRefType>(st.buf.getType()).getElementType();
  const int64_t inner = st.inner;
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
        Value rIdx =
            logicalIndex(l, 0, inner == 0 ? ib : ob, inner == 0 ? 0 : oe);
        Value cIdx =
            logicalIndex(l, 1, inner == 1 ? ib : ob, inner == 1 ? 0 : oe);
        Value at = ldsIndex(st, rIdx, cIdx);
        if (write) {
          Value run = in.elems == 1 ? Value() : shuffle(vec, positions);
          if (in.elems == 1)
            memref::StoreOp::create(b, loc, extract(vec, positions[0]), st.buf,
                                    at);
          else
            vector::StoreOp::create(b, loc, run, st.buf, ValueRange{at});
        } else {
          if (in.elems == 1) {
            Value x = memref::LoadOp::create(b, loc, st.buf, at);
            result = vector::InsertOp::create(b, loc, x, result, positions[0]);
          } else {
            Value run =
                vector::LoadOp::create(b, loc, runT, st.buf, ValueRange{at});
            for (auto [k, p] : llvm::enumerate(positions))
              result =
                  vector::InsertOp::create(b, loc, extract(run, k), result, p);
          }
        }
      }
  return result;
}

Value Distributor::transposingRead(const LdsStaging &st, const Layout &dst) {
  Type elem = cast<MemRefType>(st.buf.getType()).getElementType();
  const DimLayout &dk = dst.dim(0), &dn = dst.dim(1);
  VectorType quad = VectorType::get({4}, elem);
  Value result = zeros(laneType(elem, dst));
  Value j = arith::RemUIOp::create(b, loc, lane, idx(16));
  Value g = arith::DivUIOp::create(b, loc, lane, idx(16));
  // Per lane: row j / 4 + 8 g, column 4 (j % 4) of each 4 x 16 block.
  Value r =
      arith::AddIOp::create(b, loc, arith::DivUIOp::create(b, loc, j, idx(4)),
                            arith::MulIOp::create(b, loc, g, idx(8)));
  Value c = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, j, idx(4)), idx(4));
  Value laneAt = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, r, idx(st.rowStride)), c);
  if (st.waveBase)
    laneAt = arith::AddIOp::create(b, loc, laneAt, st.waveBase);
  for (int64_t kb = 0; kb < dk.batch; ++kb)
    for (int64_t nb = 0; nb < dn.batch; ++nb)
      for (int64_t h = 0; h < 2; ++h) {
        int64_t at = (kb * 32 + 4 * h) * st.rowStride + nb * 16;
        Value x = amdgpu::TransposeLoadOp::create(
            b, loc, quad, st.buf, ValueRange{rowAddress(laneAt, idx(at), 0)});
        result = insertSlice(x, result, dst.flatIndex({kb, nb}, {4 * h, 0}));
      }
  return result;
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

} // namespace uq::lanes::distribution
