//===- MFMA.h - The gfx950 MFMA intrinsics the stages use -------*- C++ -*-===//
//
// One table of the matrix instructions uq's kernels are tiled for: each
// entry's shape, operand and accumulator types, scale rule and operand lane
// layouts. The tiling stage asks it for tile shapes, the lane-layout stage
// for the layouts its operands and results take, and both distribution
// stages check a wave tile against it before they unroll it into
// instructions. Adding an MFMA (the 32x32 ones, say) is one entry here plus,
// where its lanes are arranged as no entry's are, its lane dimensions.
//
// Source of every layout: shared/docs/gfx950-notes.md, section
// "v_mfma_scale_f32_16x16x128_f8f6f4" (which names its own sources:
// composable_kernel's scale_mapping_16x16x128 printout, Triton's AMD
// backend, vLLM's UltraQuant decode kernel); its "32x32x64 variant" section
// holds what a 32x32 entry needs.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_MFMA_H
#define UQ_CODEGEN_MFMA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class Type;
} // namespace mlir

namespace uq::gfx950 {

/// Lanes of a gfx950 wave.
inline constexpr int64_t kWaveLanes = 64;
/// 32-bit registers (VGPR + AGPR) a lane can hold at one wave per SIMD.
inline constexpr int64_t kRegistersPerLane = 512;

/// How one dimension of an MFMA operand spreads over the wave: `threads`
/// lanes, `laneStride` lane ids apart, each holding `elems` consecutive
/// elements (a tile of several instructions repeats this as batches).
struct LaneDim {
  int64_t threads, elems, laneStride;
  /// Elements of the dimension one instruction covers.
  constexpr int64_t span() const { return threads * elems; }
};

/// The lane layout of a 2-D operand of one instruction: A as [M x K], B as
/// [N x K], the E8M0 scales as [rows x K / 32], the result as [M x N].
struct OperandLanes {
  LaneDim rows, cols;
};

/// An element type A and B may take, and how its tile is laid out.
struct OperandForm {
  /// MLIR's name of the element type ("f8E4M3FN", "f4E2M1FN", "bf16").
  llvm::StringLiteral type;
  int64_t bits;
  OperandLanes lanes;
};

/// One MFMA instruction: D[M x N] (f32) += A[M x K] x B[N x K]^T, with one
/// E8M0 scale per `scaleBlock` K elements of each operand row when scaled.
struct Intrinsic {
  /// The ISA mnemonic (without the operand types of a family).
  llvm::StringLiteral mnemonic;
  int64_t m, n, k;
  /// Element types of A and B (both the same form or, scaled, any mix).
  OperandForm forms[3];
  int numForms;
  /// K elements per E8M0 scale (0: not scaled).
  int64_t scaleBlock;
  /// The scales of A or B ([rows x K / scaleBlock]); unused if not scaled.
  OperandLanes scales;
  /// The f32 result / accumulator [M x N].
  OperandLanes result;

  bool isScaled() const { return scaleBlock != 0; }
  llvm::ArrayRef<OperandForm> operandForms() const {
    return llvm::ArrayRef<OperandForm>(forms, numForms);
  }
  /// The form of element type \p elementType, if the instruction takes it.
  const OperandForm *formOf(mlir::Type elementType) const;
};

/// v_mfma_scale_f32_16x16x128_f8f6f4 (FP8 E4M3, BF8 E5M2 or FP4 E2M1
/// operands, E8M0 scales per 32 K): the QK product of every 4-bit and FP8
/// cache. FP8 rows: lane l holds row l % 16, bytes 0..15 are K 16g..16g+15 and
/// bytes 16..31 K 64+16g.. (g = l / 16); FP4 rows: K 32g .. 32g+31 (nibbles low
/// first); the scale byte of lane r + 16 j is that of row r, K-block j. Result
/// of every 16x16 MFMA: VGPR i of lane l holds D[4 (l / 16) + i][l % 16].
// Lane dimensions below are {threads, elems, laneStride}.
inline constexpr Intrinsic kScaled16x16x128 = {
    /*mnemonic=*/"v_mfma_scale_f32_16x16x128_f8f6f4",
    /*m=*/16,
    /*n=*/16,
    /*k=*/128,
    /*forms=*/
    {{"f8E4M3FN", 8, {/*rows=*/{16, 1, 1}, /*K=*/{4, 16, 16}}},
     {"f8E5M2", 8, {/*rows=*/{16, 1, 1}, /*K=*/{4, 16, 16}}},
     {"f4E2M1FN", 4, {/*rows=*/{16, 1, 1}, /*K=*/{4, 32, 16}}}},
    /*numForms=*/3,
    /*scaleBlock=*/32,
    /*scales=*/{/*rows=*/{16, 1, 1}, /*K blocks=*/{4, 1, 16}},
    /*result=*/{/*M=*/{4, 4, 16}, /*N=*/{16, 1, 1}}};

/// v_mfma_f32_16x16x32_{bf16,f16,fp8_fp8}: the PV product (bf16 or FP8 P
/// and V). A [M x K]: lane l holds A[l % 16][8 (l / 16) .. + 7]; B [N x K]
/// the same with N for M.
inline constexpr Intrinsic k16x16x32 = {
    /*mnemonic=*/"v_mfma_f32_16x16x32",
    /*m=*/16,
    /*n=*/16,
    /*k=*/32,
    /*forms=*/
    {{"bf16", 16, {/*rows=*/{16, 1, 1}, /*K=*/{4, 8, 16}}},
     {"f16", 16, {/*rows=*/{16, 1, 1}, /*K=*/{4, 8, 16}}},
     {"f8E4M3FN", 8, {/*rows=*/{16, 1, 1}, /*K=*/{4, 8, 16}}}},
    /*numForms=*/3,
    /*scaleBlock=*/0,
    /*scales=*/{{1, 1, 1}, {1, 1, 1}},
    /*result=*/{/*M=*/{4, 4, 16}, /*N=*/{16, 1, 1}}};

/// Every MFMA the stages use.
llvm::ArrayRef<Intrinsic> intrinsics();

/// Why a wave tile [M x K] x [N x K] -> [M x N] of \p mfma with operand
/// element types \p a and \p b cannot be distributed (none if it can): a
/// type the instruction does not take, M, N or K not whole instructions,
/// or operands, scales and accumulator needing more registers per lane than
/// a lane has (kRegistersPerLane).
std::optional<std::string> tileError(const Intrinsic &mfma, int64_t m,
                                     int64_t n, int64_t k, mlir::Type a,
                                     mlir::Type b);

} // namespace uq::gfx950

#endif // UQ_CODEGEN_MFMA_H
