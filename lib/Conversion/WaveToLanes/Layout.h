//===- Layout.h - Lane layouts of wave tiles --------------------*- C++ -*-===//
//
// The C++ side of #uq.lane_layout: how a whole-wave tile's elements are
// spread over the 64 lanes of a gfx950 wave and over each lane's registers,
// the index arithmetic the distribution patterns need, and the named
// layouts of the MFMA operands (the only place in uq that knows them; each
// cites shared/docs/gfx950-notes.md).
//
// A layout gives every dimension d of an N-d tile `batch[d]`,
// `threads[d]`, `elems[d]` and `laneStride[d]`: logical index
// `i_d = (b * threads + t) * elems + e`, lane `sum_d t_d * laneStride[d]`.
// A lane holds its elements as one 1-D vector in (batch..., elems...)
// row-major order.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_WAVETOLANES_LAYOUT_H
#define UQ_LIB_CONVERSION_WAVETOLANES_LAYOUT_H

#include "uq/Codegen/MFMA.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace uq::lanes {

/// Lanes of a gfx950 wave.
constexpr int64_t kWaveSize = gfx950::kWaveLanes;

struct DimLayout {
  int64_t batch = 1, threads = 1, elems = 1, laneStride = 1;
  int64_t size() const { return batch * threads * elems; }
  bool operator==(const DimLayout &o) const {
    return batch == o.batch && threads == o.threads && elems == o.elems &&
           (threads == 1 || laneStride == o.laneStride);
  }
};

class Layout {
public:
  Layout() = default;
  explicit Layout(llvm::SmallVector<DimLayout> dims) : dims(std::move(dims)) {}
  static Layout fromAttr(LaneLayoutAttr attr);
  LaneLayoutAttr toAttr(mlir::MLIRContext *ctx) const;

  int64_t rank() const { return dims.size(); }
  const DimLayout &dim(int64_t d) const { return dims[d]; }
  DimLayout &dim(int64_t d) { return dims[d]; }
  llvm::SmallVector<int64_t> shape() const;
  /// Elements each lane holds.
  int64_t elementsPerLane() const;
  /// Lane-id bits the layout spreads the tile over.
  uint64_t usedLaneBits() const;
  bool operator==(const Layout &o) const { return dims == o.dims; }
  bool operator!=(const Layout &o) const { return !(*this == o); }
  bool isValid() const { return !dims.empty(); }

  /// The per-lane position of (batch, elem) indices: the index in the lane's
  /// 1-D vector.
  int64_t flatIndex(llvm::ArrayRef<int64_t> b, llvm::ArrayRef<int64_t> e) const;
  /// Per-lane index -> (batch indices, elem indices).
  void unflatten(int64_t f, llvm::SmallVectorImpl<int64_t> &b,
                 llvm::SmallVectorImpl<int64_t> &e) const;
  /// Logical index of (batch, thread, elem) in dimension d.
  int64_t logical(int64_t d, int64_t b, int64_t t, int64_t e) const {
    return (b * dims[d].threads + t) * dims[d].elems + e;
  }

  /// The layout of dimensions \p keep (in order) of this one.
  Layout project(llvm::ArrayRef<int64_t> keep) const;
  /// This layout with a new dimension of \p size inserted at \p pos, spread
  /// over the lowest lane bits this layout leaves unused (the rest in
  /// elements of each lane).
  Layout extend(int64_t pos, int64_t size) const;

  std::string str() const;

private:
  llvm::SmallVector<DimLayout> dims;
};

/// The layout of a 1-D or 2-D tile nobody constrains: the last dimension's
/// elements spread over as many lanes as there are (in runs of \p elemsPerRun
/// consecutive elements), the rest of the lanes over dimension 0.
Layout defaultLayout(llvm::ArrayRef<int64_t> shape, int64_t elemsPerRun = 1);

//===----------------------------------------------------------------------===//
// gfx950 MFMA operand layouts (the MFMA table, uq/Codegen/MFMA.h)
//===----------------------------------------------------------------------===//

/// The layout of a [rows x cols] wave tile of one MFMA operand whose single
/// instruction spreads as \p lanes (batches repeat it over the tile); with
/// \p transposed, of the tile stored as [cols x rows].
Layout mfmaLayout(const gfx950::OperandLanes &lanes, int64_t rows,
                  int64_t cols, bool transposed = false);

/// v_mfma_scale_f32_16x16x128_f8f6f4, FP8 operand of an [R x K] tile (A rows
/// or B columns = R): lane l holds row l % 16; bytes 0..15 are K 16g..16g+15
/// and bytes 16..31 K 64+16g.. (g = l / 16): K = (b * 4 + g) * 16 + e with
/// b = 2 * chunk + half.
Layout scaledMfmaFp8Operand(int64_t rows, int64_t k);
/// ... FP4 operand: lane l holds row l % 16, K 32g .. 32g+31 (nibbles low
/// first): K = (chunk * 4 + g) * 32 + e.
Layout scaledMfmaFp4Operand(int64_t rows, int64_t k);
/// ... the E8M0 scales [R x K/32]: byte of lane r + 16 j is the scale of
/// row r, K-block j.
Layout scaledMfmaScales(int64_t rows, int64_t kBlocks);
/// Result of any 16x16 MFMA over [M x N]: VGPR i of lane l holds
/// D[4 (l / 16) + i][l % 16].
Layout mfma16x16Result(int64_t m, int64_t n);
/// v_mfma_f32_16x16x32_{bf16,fp8_fp8} A operand [M x K]: lane l holds
/// A[l % 16][8 (l / 16) .. + 7].
Layout mfma16x16x32A(int64_t m, int64_t k);
/// ... B operand as [K x N] (\p kMajor false) or [N x K] (true): lane l holds
/// B[8 (l / 16) .. + 7][l % 16].
Layout mfma16x16x32B(int64_t k, int64_t n, bool nk);

/// Rows of a uq.load_rows that lie at a uniform pitch from one row base:
/// offsets = broadcast(base) + step * pitch (either operand order).
struct UniformRows {
  mlir::Value base;
  int64_t pitch;
};
/// Layout decision "transposing reads from a shared tile": a uq.load_rows
/// from a workgroup (LDS) buffer of 16-bit elements with uniform rows
/// (pitch a multiple of 4 elements, the base a multiple of 4 elements by
/// the kernel's construction) and every row read (a constant all-true
/// mask), demanded in \p l, the B-operand layout of a 16x16x32 MFMA as
/// [K x N], is read straight from the buffer with ds_read_b64_tr_b16 (no
/// staging copy); the rows of the load for such a load, none otherwise.
std::optional<UniformRows> transposeReadRows(uq::LoadRowsOp op,
                                             const Layout &l);

/// The layout in which each lane of a [R x K] code tile in \p codes finds the
/// E8M0 scales [R x K/32] of its own elements (runs of codes must not cross
/// a 32-element group); none if \p codes cannot be served that way.
std::optional<Layout> groupScalesFor(const Layout &codes, int64_t group = 32);

/// The layout a bitcast of the last dimension by \p ratio (new elements per
/// old element; < 1 narrows) gives; none if a lane's run cannot be cast.
std::optional<Layout> bitcastLayout(const Layout &l, int64_t num,
                                    int64_t den);

/// Bits one element of type \p t takes in a lane's registers (index: 64,
/// as the ROCDL lowering gives it).
int64_t laneElementBits(mlir::Type t);

/// The size bound of both distribution passes: why the wave tile \p t
/// cannot be distributed (none if it can). With layout \p l, its lane's
/// elements must fit the lane's register file (gfx950::kRegistersPerLane
/// 32-bit registers); without one, the tile spread evenly over the 64 lanes
/// must (no layout holds it otherwise). Every pattern of the distribution
/// emits work proportional to a lane's elements, so this bounds the
/// instructions each op unrolls into.
std::optional<std::string> tileSizeError(mlir::VectorType t,
                                         const Layout *l = nullptr);

/// Both passes of the distribution stage serve only gfx950 (its scaled MFMA
/// defines the layouts): a located error on \p op naming \p pass otherwise.
mlir::LogicalResult checkChip(mlir::Operation *op, llvm::StringRef pass,
                              llvm::StringRef chip);

} // namespace uq::lanes

#endif // UQ_LIB_CONVERSION_WAVETOLANES_LAYOUT_H
