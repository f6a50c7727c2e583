//===- Passes.td - Conversion passes of uq -----------------*- tablegen -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CONVERSION_PASSES_TD
#define UQ_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// UQToLinalg
//===----------------------------------------------------------------------===//

def ConvertUQToLinalgPass : Pass<"convert-uq-to-linalg"> {
  let summary = "Lower uq ops on tensors to linalg/tensor/arith/math/scf";
  let description = [{
    Gives every uq op executable semantics on tensors, bit-exact with the
    reference library (`uq::ref`) for the coding steps:

    - `uq.rotate`: the Sylvester butterfly (`log2 D` stages of
      `(a + b, a - b)`), by default in f64 with one multiply by
      `1/sqrt(D)` and one rounding to f32 (the reference's `ExactF64`).
    - `uq.quantize` / `uq.dequantize`: FP4 E2M1 against the 14 midpoints
      (ties down or ties to even, as the format says), UE8M0 scales decided
      on the bits of `c * absmax` (exactly `floor(log2(c * m) + 0.5)`), the
      zero sentinel, FP8 E4M3FN (RNE, NaN above 448) and bf16 (RNE), all in
      integer/float arith with no generic truncation op.
    - `uq.cache_write`: codes all rows, then an `scf.for` over tokens inserts
      the bytes of each slot (negative or out-of-range slots are skipped).
    - `uq.decode_attention`, `uq.decode_attention_partial`: an `scf.for`
      over sequences (and partitions) around `linalg.generic`s that decode
      K/V through the block table, form the logits, the softmax and the PV
      product, all accumulated in f32 in the reference's order.
    - `uq.merge_partitions`: flash-decoding's log-sum-exp merge.

    Example:

    ```mlir
    // uq-opt --convert-uq-to-linalg
    %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1>}
        : tensor<4x128xf32> -> tensor<4x64xi8>, tensor<4x4xi8>
    // becomes linalg.generic ops on tensors (absmax, scale byte, codes).
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    Option<"rotationArithmetic", "rotation-arithmetic",
           "::uq::RotationArithmetic",
           /*default=*/"::uq::RotationArithmetic::ExactF64",
           "Arithmetic of the Walsh-Hadamard rotation", [{::llvm::cl::values(
             clEnumValN(::uq::RotationArithmetic::ExactF64, "exact-f64",
                        "f64 butterfly, one 1/sqrt(D) multiply, one rounding "
                        "to f32 (the reference's default)"),
             clEnumValN(::uq::RotationArithmetic::ButterflyF32, "butterfly-f32",
                        "f32 butterfly, (a +- b) / sqrt(2) rounded per stage "
                        "(vLLM's Triton store kernel)"))}]>,
  ];
}

//===----------------------------------------------------------------------===//
// UQToWave: the tiling stage of the GPU path
//===----------------------------------------------------------------------===//

def ConvertUQToWavePass : Pass<"convert-uq-to-wave", "::mlir::ModuleOp"> {
  let summary = "Tile uq cache-write and attention ops into wave-level GPU "
                "kernels";
  let description = [{
    The first stage of the GPU path (docs/gpu-compiler.md). Every
    `uq.cache_write`, `uq.decode_attention`, `uq.decode_attention_partial`,
    `uq.merge_partitions` and `uq.paged_attention` (query, prefill and merge
    kernels; docs/gpu-kernels.md) of a `func.func` becomes wave-level kernels in
    `gpu.module @uq_kernels`, written in scf/arith/math/vector/memref plus
    the uq tile ops: one whole-wave tile program per workgroup (16 query
    rows x 32 keys for attention; one KV row for the cache write), no lane
    layouts. Paging through block tables, split-K, the online softmax, sinks
    and GQA packing all happen at this level; only the reads of a slot and
    the two products depend on the KV format (FP4 UltraQuant with its
    options, FP8 E4M3, bf16).

    Every size a serving engine changes per step (sequences, tokens, cache
    blocks, block-table width, partitions) is a scalar kernel argument, so
    the kernels are independent of the op's dynamic (`?`) sizes. The op
    itself becomes host code: buffers of the tensors, workspaces and one
    `gpu.launch_func` per kernel with the grid computed from the run-time
    sizes. The module's `uq.kernels` attribute describes every kernel's
    arguments (symbolic shapes), grid and block for the kernel JSON.

    ```mlir
    // uq-opt --convert-uq-to-wave
    %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.088 {...}
    // becomes gpu.launch_func @uq_kernels::@f_0_query, ..._partial,
    // ..._merge with grids from tensor.dim of the operands.
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"partitionSize", "partition-size", "int64_t", /*default=*/"256",
           "Tokens per split-K partition of uq.decode_attention_partial and "
           "uq.paged_attention (a positive multiple of tile-tokens)">,
    Option<"maxPartitionTokens", "max-partition-tokens", "int64_t",
           /*default=*/"2048",
           "uq.decode_attention's partition rule: the most tokens one "
           "partition takes (a positive multiple of tile-tokens)">,
    Option<"minPartitionTokens", "min-partition-tokens", "int64_t",
           /*default=*/"64",
           "uq.decode_attention's partition rule: the fewest tokens a "
           "partition is given to fill the GPU (a positive multiple of "
           "tile-tokens, at most partition-size)">,
    Option<"decodeWorkgroups", "decode-workgroups", "int64_t",
           /*default=*/"1024",
           "uq.decode_attention's partition rule: the partial workgroups a "
           "launch aims at (partitions x KV heads x sequences)">,
    Option<"tileTokens", "tile-tokens", "int64_t", /*default=*/"32",
           "Keys per iteration of the attention kernels' key loop">,
    Option<"prefillWaves", "prefill-waves", "int64_t", /*default=*/"4",
           "Waves per workgroup of uq.paged_attention's prefill kernel (1, "
           "2, 4 or 8): each wave owns 16 MFMA rows, the waves share every "
           "key/value tile through LDS">,
    Option<"mergeChunk", "merge-chunk", "int64_t", /*default=*/"32",
           "Partitions the decode merge kernel reads per step of its loop "
           "(8, 16, 32 or 64; all of a step's loads are in flight at once)">,
    Option<"prefillMergeChunk", "prefill-merge-chunk", "int64_t",
           /*default=*/"8",
           "Partitions per step of uq.paged_attention's merge kernel (8, "
           "16, 32 or 64; its launches have few partitions and a workgroup "
           "per query row and head)">,
    Option<"prefillRows", "prefill-rows", "int64_t", /*default=*/"16",
           "MFMA rows per wave of uq.paged_attention's prefill kernel (16 "
           "or 32: one or two 16-row tiles of query tokens x GQA heads "
           "sharing every key and value operand)">,
    Option<"prefillSharedV", "prefill-shared-v", "bool", /*default=*/"true",
           "uq.paged_attention's prefill kernel with FP4 values and several "
           "waves: convert each value tile to bf16 once per workgroup into "
           "LDS (each wave its share of the tokens), the PV products read it "
           "from there (default); false: every wave converts the whole tile">,
  ];
}

//===----------------------------------------------------------------------===//
// WaveToCPU: the wave-level stage on the host
//===----------------------------------------------------------------------===//

def InlineKernelsOnHostPass : Pass<"uq-inline-kernels-on-host",
                                   "::mlir::ModuleOp"> {
  let summary = "Run wave-level kernels on the CPU: launches become loops";
  let description = [{
    Replaces every `gpu.launch_func` of a wave-level kernel with an `scf.for`
    nest over the grid whose body is the kernel's (`gpu.block_id` and
    `gpu.grid_dim` become the loop indices and trip counts), then erases
    the `gpu.module`s. With `uq-lower-tile-ops` and the CPU pipeline this
    runs the GPU path's tiling, paging, split-K and softmax on the host.

    ```mlir
    // uq-opt --convert-uq-to-wave --uq-inline-kernels-on-host
    gpu.launch_func @uq_kernels::@f_0_partial blocks in (%p, %c1, %s) ...
    // becomes scf.for %z, scf.for %y, scf.for %x { <kernel body> }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def LowerTileOpsPass : Pass<"uq-lower-tile-ops"> {
  let summary = "CPU meaning of the uq tile ops (vector/scf/arith)";
  let description = [{
    Lowers `uq.load_rows`, `uq.store_rows`, `uq.scaled_mma`,
    `uq.scaled_ext` and `uq.rotate` on vectors to vector/scf/arith/memref
    code for the host, and fixes the rounding order of float
    `vector.multi_reduction <add>` to a perfect binary tree in element order
    (the order of the GPU's lane-local pairs and xor butterflies). The
    scaled MFMA is modelled as exact per-block sums in f64, one rounding to
    f32.

    ```mlir
    // uq-opt --uq-lower-tile-ops
    %s = uq.scaled_mma %q, %qs, %k, %ks, %acc : ...
    // becomes scf.for loops over rows and columns of f64 block sums.
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

//===----------------------------------------------------------------------===//
// WaveToLanes: the distribution stage (gfx950)
//===----------------------------------------------------------------------===//

def AssignLaneLayoutsPass : Pass<"uq-assign-lane-layouts", "::mlir::ModuleOp"> {
  let summary = "Give every whole-wave tile of a wave-level kernel a lane "
                "layout (gfx950)";
  let description = [{
    The first half of the distribution stage (docs/gpu-compiler.md). MFMA
    results fix their layouts and those flow through elementwise ops,
    reductions and loops; their operands demand the gfx950 MFMA operand
    layouts (the named layouts of Layout.h, from gfx950-notes.md); loads,
    index arithmetic and decodes take the layout their users demand (and
    are recomputed for a second one); a value needed in another layout than
    the one it has gets a `uq.to_layout`; operands whose loads would be
    sub-dword in the MFMA layout (V) are loaded in a staging layout. The
    result is written as `uq.layout` (`uq.layouts` on scf.for) attributes.

    ```mlir
    // uq-opt --uq-assign-lane-layouts
    %s = uq.scaled_mma %q, %qs, %k, %ks, %z : ...
    // gets {uq.layout = #uq.lane_layout<batch = [1, 2], threads = [4, 16],
    //       elems = [4, 1], lane_strides = [16, 1]>}
    ```
  }];
  let dependentDialects = ["::uq::UQDialect"];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx950\"",
           "Target chip whose MFMA register layouts are used (only gfx950: "
           "the 16x16x128 scaled MFMA)">,
    Option<"transposeReads", "transpose-reads", "bool", /*default=*/"true",
           "Stage 16-bit tiles bound for the B operand of a 16x16x32 MFMA "
           "in runs along their columns (32 per lane), for the "
           "distribution's transposing LDS reads (keep equal to "
           "uq-distribute-to-lanes' option)">,
  ];
}

def DistributeToLanesPass : Pass<"uq-distribute-to-lanes", "::mlir::ModuleOp"> {
  let summary = "Rewrite wave-level kernels per lane with amdgpu/rocdl/gpu "
                "ops (gfx950)";
  let description = [{
    The second half of the distribution stage: every vector op of a kernel
    whose values carry `uq.layout` becomes per-lane code on each lane's
    elements: `amdgpu.scaled_mfma` / `amdgpu.mfma` tiles for the products,
    `rocdl.cvt.scalef32.pk.*.fp4` for FP4 decodes, xor shuffles for
    cross-lane reductions and butterflies, per-lane loads and stores, and
    LDS (workgroup buffers, barriers) for `uq.to_layout`.

    ```mlir
    // uq-opt --uq-assign-lane-layouts --uq-distribute-to-lanes
    %s = uq.scaled_mma %q, %qs, %k, %ks, %z {uq.layout = ...} : ...
    // becomes amdgpu.scaled_mfma 16x16x128 on each lane's 32 bytes
    ```
  }];
  let dependentDialects = [
    "::mlir::amdgpu::AMDGPUDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::ROCDL::ROCDLDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx950\"",
           "Target chip (only gfx950)">,
    Option<"dppReductions", "dpp-reductions", "bool", /*default=*/"true",
           "Cross-lane steps within a row of 16 lanes by DPP (quad_perm, "
           "row_half_mirror, row_mirror) folded into the combining VALU op, "
           "instead of ds_swizzle shuffles">,
    Option<"transposeReads", "transpose-reads", "bool", /*default=*/"true",
           "Layout conversions of 16-bit tiles into the B operand of a "
           "16x16x32 MFMA stage row-major in LDS and read with "
           "ds_read_b64_tr_b16 (no register permutes before the LDS "
           "writes)">,
    Option<"transposeRowPad", "transpose-row-pad", "int64_t",
           /*default=*/"16",
           "Bytes of padding after each row of a transposing-read buffer (a "
           "multiple of 8): 16 spreads the rows over the LDS banks">,
  ];
}

def LowerKernelABIPass : Pass<"uq-lower-kernel-abi", "::mlir::ModuleOp"> {
  let summary = "Kernel buffer arguments become bare global pointers";
  let description = [{
    Every `memref<?xT>` argument of a `gpu.func` kernel becomes one
    `!llvm.ptr<1>` (8 bytes in the kernarg segment, as the kernel JSON
    says); the body sees a memref descriptor built from it. Scalar
    arguments stay as they are.

    ```mlir
    // uq-opt --uq-lower-kernel-abi
    gpu.func @k(%buf: memref<?xf32>, %n: i32) kernel
    // becomes gpu.func @k(%buf: !llvm.ptr<1>, %n: i32) kernel
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // UQ_CONVERSION_PASSES_TD
