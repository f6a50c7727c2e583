//===- UQLayoutAttrs.td - Lane layouts of wave tiles -------*- tablegen -*-===//
//
// The attribute the distribution stage writes on every vector value of a
// wave-level kernel: how the elements of a whole-wave tile are spread over
// the 64 lanes of a wave and the registers of each lane.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_DIALECT_UQ_IR_UQLAYOUTATTRS_TD
#define UQ_DIALECT_UQ_IR_UQLAYOUTATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "uq/Dialect/UQ/IR/UQDialect.td"

def UQ_LaneLayoutAttr : AttrDef<UQ_Dialect, "LaneLayout"> {
  let mnemonic = "lane_layout";
  let summary = "How a wave tile's elements are spread over lanes";
  let description = [{
    For every dimension `d` of a tile, its index is split as
    `i = (b * threads[d] + t) * elems[d] + e`: `b < batch[d]` repeats the
    lane pattern, `t < threads[d]` is the lane coordinate and `e < elems[d]`
    a run of consecutive elements inside one lane. The lane that holds
    coordinate `t[d]` of every dimension is `sum_d t[d] * lane_strides[d]`
    (the strides use disjoint bits of the lane id; lanes that differ only
    in unused bits hold copies). Each lane keeps its elements in one 1-D
    vector ordered by (batch indices, then element indices), row-major over
    the dimensions, so a run of `elems` along the last dimension is
    contiguous.

    ```mlir
    // The 16x16 f32 result of v_mfma_*_16x16x*: VGPR i of lane l holds
    // D[4 (l / 16) + i][l % 16]; two such tiles side by side:
    #uq.lane_layout<batch = [1, 2], threads = [4, 16], elems = [4, 1],
                    lane_strides = [16, 1]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$batch,
                        ArrayRefParameter<"int64_t">:$threads,
                        ArrayRefParameter<"int64_t">:$elems,
                        ArrayRefParameter<"int64_t">:$laneStrides);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Rank of the tiles this layout describes.
    int64_t getRank() const { return getBatch().size(); }
    /// The tile shape: batch * threads * elems per dimension.
    ::llvm::SmallVector<int64_t> getShape() const;
    /// Elements each lane holds.
    int64_t getElementsPerLane() const;
  }];
}

#endif // UQ_DIALECT_UQ_IR_UQLAYOUTATTRS_TD
