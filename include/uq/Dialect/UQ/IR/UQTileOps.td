//===- UQTileOps.td - Wave-level tile ops of uq ------------*- tablegen -*-===//
//
// The few operations the wave-level stage of the GPU path needs that upstream
// MLIR lacks. Everything else in a wave-level kernel is scf/arith/math/vector
// /memref/gpu. Operands are whole-wave tiles (vectors with no lane layout);
// the distribution stage (uq-assign-lane-layouts, uq-distribute-to-lanes)
// maps them to lanes, and uq-lower-tile-ops gives them a CPU meaning.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_DIALECT_UQ_IR_UQTILEOPS_TD
#define UQ_DIALECT_UQ_IR_UQTILEOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "uq/Dialect/UQ/IR/UQDialect.td"
include "uq/Dialect/UQ/IR/UQAttrs.td"

def UQ_Vector2D : VectorOfRank<[2]>;
def UQ_Buffer1D : MemRefRankOf<[AnyType], [1]>;
def UQ_IndexVector : VectorOfRankAndType<[1], [Index]>;
def UQ_MaskVector : VectorOfRankAndType<[1], [I1]>;
def UQ_ScaleTile : VectorOfRankAndType<[2], [F8E8M0FNU]>;
// Scales uq.scaled_ext decodes: E8M0, or FP8 E4M3 (the `scale = e4m3`
// value format; the MFMA's scale operands stay E8M0).
def UQ_ExtScaleTile : VectorOfRankAndType<[2], [F8E8M0FNU, F8E4M3FN]>;
def UQ_MXDataTile : VectorOfRankAndType<[2], [F8E4M3FN, F8E5M2, F4E2M1FN]>;

//===----------------------------------------------------------------------===//
// uq.load_rows / uq.store_rows
//===----------------------------------------------------------------------===//

def UQ_LoadRowsOp : UQ_Op<"load_rows"> {
  let summary = "Gather rows of consecutive elements from a 1-D buffer";
  let description = [{
    A wave-level gather of whole rows, the access of a paged cache:
    `result[i][j] = base[offsets[i] + j]` for `mask[i]` and `j < width`, and
    `0` elsewhere. `width` (default: the row length of the result) lets a
    tile be wider than the data, padded with zeros (a 64-element head read
    into a 128-element MFMA operand). Rows whose mask is off are not read.

    ```mlir
    %k = uq.load_rows %cache[%offsets] mask %valid
        : memref<?xi8>, vector<32xindex>, vector<32xi1> -> vector<32x64xi8>
    %q = uq.load_rows %q8[%rows] mask %heads {width = 64}
        : memref<?xi8>, vector<16xindex>, vector<16xi1> -> vector<16x128xi8>
    ```
  }];
  let arguments = (ins Arg<UQ_Buffer1D, "buffer", [MemRead]>:$base,
                       UQ_IndexVector:$offsets, UQ_MaskVector:$mask,
                       OptionalAttr<I64Attr>:$width);
  let results = (outs UQ_Vector2D:$result);
  let assemblyFormat = [{
    $base `[` $offsets `]` `mask` $mask attr-dict `:` type($base) `,`
    type($offsets) `,` type($mask) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Elements of a row that are read (the rest are zeros).
    int64_t getRowWidth();
  }];
}

def UQ_StoreRowsOp : UQ_Op<"store_rows"> {
  let summary = "Scatter rows of a tile to consecutive elements of a buffer";
  let description = [{
    `base[offsets[i] + j] = value[i][j]` for every `i` with `mask[i]`; rows
    whose mask is off are not written.

    ```mlir
    uq.store_rows %o, %out[%rows] mask %heads
        : vector<16x128xf32>, memref<?xf32>, vector<16xindex>, vector<16xi1>
    ```
  }];
  let arguments = (ins UQ_Vector2D:$value,
                       Arg<UQ_Buffer1D, "buffer", [MemWrite]>:$base,
                       UQ_IndexVector:$offsets, UQ_MaskVector:$mask);
  let assemblyFormat = [{
    $value `,` $base `[` $offsets `]` `mask` $mask attr-dict `:`
    type($value) `,` type($base) `,` type($offsets) `,` type($mask)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// uq.scaled_mma
//===----------------------------------------------------------------------===//

def UQ_ScaledMmaOp : UQ_Op<"scaled_mma", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Product of two microscaled (OCP MX) tiles";
  let description = [{
    `result[m][n] = acc[m][n] + sum_kb 2^(a_scales[m][kb] - 127) *
    2^(b_scales[n][kb] - 127) * sum_{k in block kb} a[m][k] * b[n][k]`,
    K-blocks of 32 consecutive `k`: the OCP MX product that gfx950's
    `v_mfma_scale_f32_16x16x128_f8f6f4` computes for one 16x16x128 tile.
    Both operands run along K in their last dimension (`b` is `N x K`, as a
    row of keys is stored). Element types: FP8 E4M3, BF8 E5M2 or FP4 E2M1,
    mixed freely; scales are E8M0 (`2^(s - 127)`; byte 255 is NaN).
    Products and their sums are exact; the result is rounded to f32 once.

    ```mlir
    %s = uq.scaled_mma %q, %qs, %k, %ks, %zero
        : vector<16x128xf8E4M3FN>, vector<16x4xf8E8M0FNU>,
          vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU>, vector<16x32xf32>
    ```
  }];
  let arguments = (ins UQ_MXDataTile:$a, UQ_ScaleTile:$a_scales,
                       UQ_MXDataTile:$b, UQ_ScaleTile:$b_scales,
                       VectorOfRankAndType<[2], [F32]>:$acc);
  let results = (outs VectorOfRankAndType<[2], [F32]>:$result);
  let assemblyFormat = [{
    $a `,` $a_scales `,` $b `,` $b_scales `,` $acc attr-dict `:` type($a) `,`
    type($a_scales) `,` type($b) `,` type($b_scales) `,` type($acc)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// uq.scaled_ext
//===----------------------------------------------------------------------===//

def UQ_ScaledExtOp : UQ_Op<"scaled_ext", [Pure]> {
  let summary = "Decode MX codes with one scale per 32 elements";
  let description = [{
    `result[..., i] = value(codes[..., i]) * scale(scales[..., i / 32])`,
    `scale(b) = 2^(b - 127)` for E8M0 scales and the FP8 E4M3FN value for
    E4M3 scales (the `scale = e4m3` value format), rounded to the result
    type (exact for FP4 codes into bf16 or f32 with either scale, unless the
    product leaves the type's range): the decoding of a slot tile.

    ```mlir
    %v = uq.scaled_ext %codes, %scales
        : vector<32x128xf4E2M1FN>, vector<32x4xf8E8M0FNU> -> vector<32x128xbf16>
    ```
  }];
  let arguments = (ins UQ_MXDataTile:$codes, UQ_ExtScaleTile:$scales);
  let results = (outs VectorOfRankAndType<[2], [F32, BF16, F16]>:$result);
  let assemblyFormat = [{
    $codes `,` $scales attr-dict `:` type($codes) `,` type($scales) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// uq.to_layout
//===----------------------------------------------------------------------===//

def UQ_ToLayoutOp : UQ_Op<"to_layout", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Move a tile to another lane layout (distribution stage)";
  let description = [{
    Inserted by `uq-assign-lane-layouts` where a value is needed in another
    lane layout than the one its producer gives it; the identity on the
    wave-level value. `uq-distribute-to-lanes` moves the data through LDS.

    ```mlir
    %p2 = uq.to_layout %p {uq.layout = #uq.lane_layout<...>} : vector<16x32xbf16>
    ```
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$input);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // UQ_DIALECT_UQ_IR_UQTILEOPS_TD
