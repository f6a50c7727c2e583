//===- Layout.cpp - Lane layouts of wave tiles ----------------------------===//

#include "Layout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace uq;
using namespace uq::lanes;

Layout Layout::fromAttr(LaneLayoutAttr attr) {
  SmallVector<DimLayout> dims;
  for (int64_t d = 0; d < attr.getRank(); ++d)
    dims.push_back({attr.getBatch()[d], attr.getThreads()[d],
                    attr.getElems()[d], attr.getLaneStrides()[d]});
  return Layout(dims);
}

LaneLayoutAttr Layout::toAttr(MLIRContext *ctx) const {
  SmallVector<int64_t> b, t, e, s;
  for (const DimLayout &d : dims) {
    b.push_back(d.batch);
    t.push_back(d.threads);
    e.push_back(d.elems);
    s.push_back(d.threads == 1 ? 1 : d.laneStride);
  }
  return LaneLayoutAttr::get(ctx, b, t, e, s);
}

SmallVector<int64_t> Layout::shape() const {
  SmallVector<int64_t> s;
  for (const DimLayout &d : dims)
    s.push_back(d.size());
  return s;
}

int64_t Layout::elementsPerLane() const {
  int64_t n = 1;
  for (const DimLayout &d : dims)
    n *= d.batch * d.elems;
  return n;
}

uint64_t Layout::usedLaneBits() const {
  uint64_t bits = 0;
  for (const DimLayout &d : dims)
    if (d.threads > 1)
      bits |= uint64_t(d.threads - 1) * uint64_t(d.laneStride);
  return bits;
}

int64_t Layout::flatIndex(ArrayRef<int64_t> b, ArrayRef<int64_t> e) const {
  int64_t f = 0;
  for (int64_t d = 0; d < rank(); ++d)
    f = f * dims[d].batch + b[d];
  for (int64_t d = 0; d < rank(); ++d)
    f = f * dims[d].elems + e[d];
  return f;
}

void Layout::unflatten(int64_t f, SmallVectorImpl<int64_t> &b,
                       SmallVectorImpl<int64_t> &e) const {
  b.assign(rank(), 0);
  e.assign(rank(), 0);
  for (int64_t d = rank() - 1; d >= 0; --d) {
    e[d] = f % dims[d].elems;
    f /= dims[d].elems;
  }
  for (int64_t d = rank() - 1; d >= 0; --d) {
    b[d] = f % dims[d].batch;
    f /= dims[d].batch;
  }
}

Layout Layout::project(ArrayRef<int64_t> keep) const {
  SmallVector<DimLayout> out;
  for (int64_t d : keep)
    out.push_back(dims[d]);
  return Layout(out);
}

Layout Layout::extend(int64_t pos, int64_t size) const {
  uint64_t used = usedLaneBits();
  // Lowest unused lane bit, then as many contiguous unused bits as the
  // dimension can use.
  int64_t start = 0;
  while (start < 6 && (used >> start) & 1)
    ++start;
  int64_t threads = 1;
  while (start + llvm::Log2_64(threads) < 6 &&
         !((used >> (start + llvm::Log2_64(threads))) & 1) &&
         threads * 2 <= size && size % (threads * 2) == 0)
    threads *= 2;
  DimLayout nd{1, threads, size / threads, int64_t(1) << start};
  SmallVector<DimLayout> out(dims.begin(), dims.end());
  out.insert(out.begin() + pos, nd);
  return Layout(out);
}

std::string Layout::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  for (int64_t d = 0; d < rank(); ++d)
    os << (d ? ", " : "") << dims[d].batch << "x" << dims[d].threads << "@"
       << dims[d].laneStride << "x" << dims[d].elems;
  os << "]";
  return s;
}

Layout uq::lanes::defaultLayout(ArrayRef<int64_t> shape, int64_t elemsPerRun) {
  // The last dimension in contiguous runs over as many lanes as it fills
  // (a [128] tile: 2 consecutive elements per lane), then dimension 0 over
  // the lanes left.
  int64_t last = shape.back();
  // Runs of at least two elements when the tile has 64 or more: sub-byte
  // codes pack in-lane, and a lane loads at least two values at once.
  int64_t minRun = last >= kWaveSize ? 2 : 1;
  int64_t run = std::max<int64_t>(
      std::max(elemsPerRun, minRun), (last + kWaveSize - 1) / kWaveSize);
  run = std::min(run, last);
  while (last % run != 0)
    ++run;
  int64_t threads = 1;
  while (threads * 2 <= kWaveSize && last % (run * threads * 2) == 0)
    threads *= 2;
  DimLayout inner{last / (run * threads), threads, run, 1};
  SmallVector<DimLayout> dims;
  int64_t laneBits = threads;
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    int64_t t = 1;
    while (laneBits * t * 2 <= kWaveSize && shape[d] % (t * 2) == 0)
      t *= 2;
    dims.push_back({shape[d] / t, t, 1, laneBits});
    laneBits *= t;
  }
  dims.push_back(inner);
  return Layout(dims);
}

//===----------------------------------------------------------------------===//
// gfx950 MFMA operand layouts
//===----------------------------------------------------------------------===//

Layout uq::lanes::mfmaLayout(const gfx950::OperandLanes &lanes,
                             int64_t rows, int64_t cols, bool transposed) {
  auto dim = [](const gfx950::LaneDim &d, int64_t size) {
    return DimLayout{size / d.span(), d.threads, d.elems, d.laneStride};
  };
  DimLayout r = dim(lanes.rows, rows), c = dim(lanes.cols, cols);
  return transposed ? Layout({c, r}) : Layout({r, c});
}

namespace {
const gfx950::OperandLanes &scaledForm(llvm::StringRef type) {
  for (const gfx950::OperandForm &f :
       gfx950::kScaled16x16x128.operandForms())
    if (f.type == type)
      return f.lanes;
  llvm_unreachable("no such operand form of the scaled MFMA");
}
} // namespace

Layout uq::lanes::scaledMfmaFp8Operand(int64_t rows, int64_t k) {
  return mfmaLayout(scaledForm("f8E4M3FN"), rows, k);
}

Layout uq::lanes::scaledMfmaFp4Operand(int64_t rows, int64_t k) {
  return mfmaLayout(scaledForm("f4E2M1FN"), rows, k);
}

Layout uq::lanes::scaledMfmaScales(int64_t rows, int64_t kBlocks) {
  return mfmaLayout(gfx950::kScaled16x16x128.scales, rows, kBlocks);
}

Layout uq::lanes::mfma16x16Result(int64_t m, int64_t n) {
  return mfmaLayout(gfx950::kScaled16x16x128.result, m, n);
}

Layout uq::lanes::mfma16x16x32A(int64_t m, int64_t k) {
  return mfmaLayout(gfx950::k16x16x32.forms[0].lanes, m, k);
}

Layout uq::lanes::mfma16x16x32B(int64_t k, int64_t n, bool nk) {
  // The table gives B as [N x K]; a [K x N] tile is its transpose.
  return mfmaLayout(gfx950::k16x16x32.forms[0].lanes, n, k,
                    /*transposed=*/!nk);
}

std::optional<Layout> uq::lanes::groupScalesFor(const Layout &codes,
                                                int64_t group) {
  if (codes.rank() != 2)
    return std::nullopt;
  DimLayout c = codes.dim(1);
  // A run of elements stays in one group.
  if (c.elems > group || group % c.elems != 0)
    return std::nullopt;
  int64_t lanesPerGroup = group / c.elems;
  DimLayout s;
  if (lanesPerGroup >= c.threads) {
    // A whole row of lanes (and maybe several batches) inside one group.
    int64_t batchesPerGroup = lanesPerGroup / c.threads;
    if (lanesPerGroup % c.threads != 0 || c.batch % batchesPerGroup != 0)
      return std::nullopt;
    s = {c.batch / batchesPerGroup, 1, 1, 1};
  } else {
    if (c.threads % lanesPerGroup != 0)
      return std::nullopt;
    s = {c.batch, c.threads / lanesPerGroup, 1,
         c.laneStride * lanesPerGroup};
  }
  return Layout({codes.dim(0), s});
}

std::optional<Layout> uq::lanes::bitcastLayout(const Layout &l, int64_t num,
                                               int64_t den) {
  Layout out = l;
  DimLayout &d = out.dim(l.rank() - 1);
  if ((d.elems * num) % den != 0)
    return std::nullopt;
  d.elems = d.elems * num / den;
  return out;
}

int64_t uq::lanes::laneElementBits(Type t) {
  if (t.isIndex())
    return 64;
  if (t.isIntOrFloat())
    return t.getIntOrFloatBitWidth();
  return 32;
}

std::optional<std::string> uq::lanes::tileSizeError(VectorType t,
                                                    const Layout *l) {
  // Elements per lane, saturating (shapes and layouts of stage IR written
  // by another compiler may be anything up to 2^63 per dimension).
  bool overflow = false;
  uint64_t elems = 1;
  auto times = [&](int64_t x) {
    bool o = false;
    elems =
        llvm::SaturatingMultiply(elems, uint64_t(std::max<int64_t>(x, 0)), &o);
    overflow |= o;
  };
  if (l) {
    for (int64_t d = 0; d < l->rank(); ++d) {
      times(l->dim(d).batch);
      times(l->dim(d).elems);
    }
  } else {
    for (int64_t s : t.getShape())
      times(s);
    elems = elems / kWaveSize + (elems % kWaveSize != 0);
  }
  uint64_t bits = laneElementBits(t.getElementType());
  bool o = false;
  uint64_t laneBits = llvm::SaturatingMultiply(elems, bits, &o);
  overflow |= o;
  uint64_t regs = laneBits / 32 + (laneBits % 32 != 0);
  if (!overflow && regs <= uint64_t(gfx950::kRegistersPerLane))
    return std::nullopt;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "the tile " << t << " needs ";
  if (overflow) {
    os << "more than 2^64 bits in all, more than the "
       << gfx950::kRegistersPerLane << " registers of a gfx950 lane";
    return s;
  }
  os << (l ? "" : "at least ") << regs << " registers per lane";
  if (l)
    os << " in lane layout " << l->str();
  else
    os << " spread over the " << kWaveSize << " lanes";
  os << ", more than the " << gfx950::kRegistersPerLane
     << " of a gfx950 lane";
  return s;
}

LogicalResult uq::lanes::checkChip(Operation *op, llvm::StringRef pass,
                                   llvm::StringRef chip) {
  if (chip == "gfx950")
    return success();
  return op->emitError()
         << pass << ": chip '" << chip
         << "' is not supported (the lane layouts are gfx950's: its scaled "
            "MFMA v_mfma_scale_f32_16x16x128_f8f6f4)";
}

std::optional<UniformRows> uq::lanes::transposeReadRows(uq::LoadRowsOp op,
                                                      const Layout &l) {
  // The B operand of v_mfma_f32_16x16x32 as [K x N]: lane l holds
  // K 8 (l / 16) .. + 7 of column l % 16 (mfma16x16x32B), what two
  // ds_read_b64_tr_b16 per 16 columns fill (DistributeMemory.cpp).
  if (l.rank() != 2)
    return std::nullopt;
  const DimLayout &dk = l.dim(0), &dn = l.dim(1);
  if (dk.threads != 4 || dk.elems != 8 || dk.laneStride != 16 ||
      dn.threads != 16 || dn.elems != 1 || dn.laneStride != 1)
    return std::nullopt;
  auto buf = dyn_cast<MemRefType>(op.getBase().getType());
  Type elem = op.getResult().getType().getElementType();
  if (!buf || !elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() != 16 ||
      op.getRowWidth() != op.getResult().getType().getDimSize(1))
    return std::nullopt;
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(buf.getMemorySpace());
  if (!space || space.getValue() != gpu::AddressSpace::Workgroup)
    return std::nullopt;
  // Every row read.
  SplatElementsAttr mask;
  if (!matchPattern(op.getMask(), m_Constant(&mask)) ||
      !mask.getSplatValue<bool>())
    return std::nullopt;
  auto add = op.getOffsets().getDefiningOp<arith::AddIOp>();
  if (!add)
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    auto bc = add->getOperand(i).getDefiningOp<vector::BroadcastOp>();
    auto mul = add->getOperand(1 - i).getDefiningOp<arith::MulIOp>();
    if (!bc || !mul || isa<VectorType>(bc.getSourceType()))
      continue;
    for (int j = 0; j < 2; ++j) {
      SplatElementsAttr pitch;
      if (!mul->getOperand(j).getDefiningOp<vector::StepOp>() ||
          !matchPattern(mul->getOperand(1 - j), m_Constant(&pitch)))
        continue;
      int64_t p = pitch.getSplatValue<APInt>().getSExtValue();
      if (p <= 0 || p % 4 != 0)
        return std::nullopt;
      return UniformRows{bc.getSource(), p};
    }
  }
  return std::nullopt;
}
