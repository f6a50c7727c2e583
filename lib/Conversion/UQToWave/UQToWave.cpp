//===- UQToWave.cpp - uq ops to wave-level GPU kernels --------------------===//
//
// The tiling stage of the GPU path. Every uq.cache_write, uq.decode_attention
// (query + partitions + merge), uq.decode_attention_partial,
// uq.merge_partitions and uq.paged_attention (query + prefill tiles +
// merge, PrefillKernels.cpp) of a func.func becomes:
//  - wave-level gpu.func kernels in the module's `gpu.module @uq_kernels`
//    (Kernels.h), one whole-wave tile program per workgroup;
//  - host code in the function: the tensors' buffers, workspaces, and one
//    gpu.launch_func per kernel with the grid computed from the run-time
//    sizes; the op's results are tensors of the written buffers. This host
//    code runs on the CPU (uq-inline-kernels-on-host) and documents the
//    launch sequence; uq-compile turns the `uq.kernels` attribute into the
//    kernel JSON. Workspaces are plain allocations: the CPU pipeline's
//    buffer deallocation frees them.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "uq/Conversion/DecodePartitions.h"
#include "uq/Conversion/Passes.h"

#include <type_traits>

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace uq {
#define GEN_PASS_DEF_CONVERTUQTOWAVEPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;
using namespace uq::wave;

namespace {

constexpr llvm::StringLiteral kKernelModule = "uq_kernels";

/// Largest split-K partition (tokens): positions are i32 (seq_lens and the
/// kernels' position arithmetic), so no partition holds more than 2^31 - 1
/// tokens; this is the largest multiple of the 32-token tile below 2^31.
constexpr int64_t kMaxPartitionSize = (int64_t(1) << 31) - 32;
/// Largest cache block in bytes (block_size x KV heads x slot bytes): the
/// kernel ABI passes the cache's sizes as i32 (num_blocks, the block ids of
/// the block tables), and with blocks below 2^31 bytes every offset within a
/// block fits an i32 and a whole cache, num_blocks x block bytes, stays
/// below 2^62 bytes: no size or offset of the kernels, their JSON or the
/// emulator's checks can overflow 64 bits.
constexpr int64_t kMaxBlockBytes = (int64_t(1) << 31) - 1;

/// The cache's block (block_size x KV heads x slot bytes) is within
/// kMaxBlockBytes; a located error otherwise.
LogicalResult checkCacheBlock(Operation *op, int64_t blockSize,
                              int64_t kvHeads, int64_t slotBytes) {
  int64_t bytes = 0;
  bool overflow = llvm::MulOverflow(blockSize, kvHeads, bytes) ||
                  llvm::MulOverflow(bytes, slotBytes, bytes);
  if (overflow || bytes > kMaxBlockBytes)
    return op->emitOpError()
           << "has no GPU kernel for a cache block of " << blockSize
           << " tokens x " << kvHeads << " KV heads x " << slotBytes
           << " slot bytes: the kernels' cache offsets are 32-bit within a "
              "block (at most 2^31 - 1 bytes; docs/gpu-compiler.md)";
  return success();
}

/// Why the GPU kernels cannot take this format as the key (\p key) or value
/// format ("" if they can).
std::string unsupportedFormat(KVFormatAttr f, bool key) {
  switch (f.getElement()) {
  case ElementCode::fp4_e2m1:
    if (f.getScale() == ScaleEncoding::e4m3 && key)
      // docs/accuracy.md's E4M3 group scales: keys go through the scaled
      // MFMA, whose scale operands are E8M0 only (gfx950-notes.md). Values
      // are decoded to bf16 before their MFMA: code * E4M3 scale in f32 is
      // exact in bf16 (at most 6 significant bits), so they take it.
      return "scale = e4m3 group scales on keys have no GPU kernel: gfx950's "
             "scaled MFMA takes only E8M0 (power-of-two) block scales (values "
             "may use them)";
    if (f.getScale() == ScaleEncoding::none || f.getGroupSize() != 32)
      return "FP4 needs one UE8M0 (or, for values, E4M3) scale per 32 "
             "elements (the MFMA's block)";
    return "";
  case ElementCode::fp8_e4m3:
    if (f.hasScales())
      return "scaled FP8 formats have no GPU kernel";
    if (f.isRotated())
      return "rotated FP8 formats have no GPU kernel";
    return "";
  case ElementCode::bf16:
    if (f.isRotated())
      return "rotated bf16 formats have no GPU kernel";
    return "";
  }
  return "unknown element code";
}

LogicalResult checkFormats(Operation *op, KVFormatAttr k, KVFormatAttr v,
                           CacheLayoutAttr layout, int64_t headDim) {
  for (auto [what, f] : {std::pair<const char *, KVFormatAttr>{"key", k},
                         {"value", v}}) {
    std::string why = unsupportedFormat(f, StringRef(what) == "key");
    if (!why.empty())
      return op->emitOpError() << "has no GPU kernel for the " << what
                               << " format " << f << ": " << why;
  }
  if (layout.getKind() != LayoutKind::vllm_slot &&
      layout.getKind() != LayoutKind::head_major)
    return op->emitOpError() << "has no GPU kernel for the cache layout "
                             << layout;
  if (headDim != 64 && headDim != 128 && headDim != 256)
    return op->emitOpError() << "has no GPU kernel for head dimension "
                             << headDim << " (64, 128 and 256 are supported)";
  return success();
}

/// Host-side helpers: buffers of tensors and the launches.
struct Host {
  OpBuilder &b;
  Location loc;

  Value dim(Value tensor, int64_t i) {
    return tensor::DimOp::create(b, loc, tensor, i);
  }
  Value i32(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }

  /// A 1-D view of a memref (identity layout).
  Value flatten(Value memref) {
    auto t = cast<MemRefType>(memref.getType());
    Value flat = memref;
    if (t.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t i = 0; i < t.getRank(); ++i)
        all.push_back(i);
      flat = memref::CollapseShapeOp::create(
          b, loc, memref, ArrayRef<ReassociationIndices>{all});
    }
    // Kernels take run-time sizes: memref<?xT>.
    auto dyn = MemRefType::get({ShapedType::kDynamic}, t.getElementType());
    if (flat.getType() == dyn)
      return flat;
    return memref::CastOp::create(b, loc, dyn, flat);
  }
  /// The buffer of an input tensor, as a 1-D memref.
  Value input(Value tensor) {
    auto t = cast<RankedTensorType>(tensor.getType());
    auto m = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(t.getShape(), t.getElementType()), tensor,
        /*readOnly=*/true);
    return flatten(m);
  }
  /// A new buffer of \p shape (dynamic sizes from \p dynSizes).
  Value alloc(ArrayRef<int64_t> shape, Type elem, ValueRange dynSizes) {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, elem),
                                   dynSizes);
  }
  Value dynSizesOf(Value tensor, SmallVectorImpl<Value> &out) {
    auto t = cast<RankedTensorType>(tensor.getType());
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        out.push_back(dim(tensor, i));
    return {};
  }
  /// A copy of an input tensor's buffer that kernels may update.
  Value copyOf(Value tensor) {
    auto t = cast<RankedTensorType>(tensor.getType());
    SmallVector<Value> dyn;
    dynSizesOf(tensor, dyn);
    Value dst = alloc(t.getShape(), t.getElementType(), dyn);
    auto src = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(t.getShape(), t.getElementType()), tensor,
        /*readOnly=*/true);
    memref::CopyOp::create(b, loc, src, dst);
    return dst;
  }
  Value toTensor(Value memref, Type tensorType) {
    return bufferization::ToTensorOp::create(b, loc, tensorType, memref,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }
  void launch(gpu::GPUFuncOp kernel, std::array<Value, 3> grid,
              ValueRange operands) {
    Value c1 = idx(1);
    // The workgroup size the kernel is compiled for (64 lanes per wave).
    int64_t lanes = 64;
    if (auto known = kernel.getKnownBlockSize())
      lanes = (*known)[0];
    gpu::LaunchFuncOp::create(b, loc, kernel, {grid[0], grid[1], grid[2]},
                              {idx(lanes), c1, c1}, Value(), operands);
  }

  /// Split-K partitions of an attention launch over a cache whose block
  /// tables have \p maxBlocks columns: max(1, ceil(max_blocks * block_size /
  /// partition_size)).
  Value partitions(const AttentionConfig &cfg, Value maxBlocks) {
    Value capacity = mul(maxBlocks, idx(cfg.blockSize));
    Value parts = arith::CeilDivUIOp::create(b, loc, capacity,
                                             idx(cfg.partitionSize));
    return arith::MaxUIOp::create(b, loc, parts, idx(1));
  }
  /// uq.decode_attention's rule (decodePartitionCount): max(1, ceil(C /
  /// max_partition_tokens), min(ceil(target / (S * Hkv)), ceil(C /
  /// min_partition_tokens))), C = max_blocks * block_size.
  Value decodePartitions(const AttentionConfig &cfg, Value numSeqs,
                         Value maxBlocks) {
    auto ceilDiv = [&](Value x, Value y) {
      return arith::CeilDivUIOp::create(b, loc, x, y).getResult();
    };
    auto umax = [&](Value x, Value y) {
      return arith::MaxUIOp::create(b, loc, x, y).getResult();
    };
    Value capacity = mul(maxBlocks, idx(cfg.blockSize));
    Value least = ceilDiv(capacity, idx(cfg.maxPartitionTokens));
    Value rows = umax(mul(numSeqs, idx(cfg.numKVHeads)), idx(1));
    Value fill = ceilDiv(idx(cfg.targetWorkgroups), rows);
    Value most = ceilDiv(capacity, idx(cfg.minPartitionTokens));
    Value spread = arith::MinUIOp::create(b, loc, fill, most);
    return umax(umax(least, spread), idx(1));
  }

  /// The query kernel's workspaces and launch over \p numRows rows of
  /// [rows, Hq, D] (sequences for decode, tokens for paged attention): the
  /// prepared query and the accuracy options' per-32 query scales and
  /// q . rot(k_mean)
  /// (null unless the configuration has them).
  struct QueryWorkspaces {
    Value prepared, scales, bias;
    /// The scales and the bias, where present, as the last arguments of
    /// the kernels that read them (addOptionArgs' order).
    void appendTo(SmallVectorImpl<Value> &operands) const {
      if (scales)
        operands.push_back(scales);
      if (bias)
        operands.push_back(bias);
    }
  };
  QueryWorkspaces launchQuery(const AttentionConfig &cfg,
                              gpu::GPUFuncOp kernel, Value query,
                              Value numRows, Value kMean) {
    const int64_t hq = cfg.numQHeads, d = cfg.headDim;
    QueryWorkspaces q;
    Type wsElem = dtypeToType(b.getContext(), cfg.queryWorkspaceDtype());
    Value rows = mul(numRows, idx(hq));
    q.prepared = alloc({ShapedType::kDynamic}, wsElem, {mul(rows, idx(d))});
    if (cfg.scaledQuery)
      q.scales = alloc({ShapedType::kDynamic}, b.getI8Type(),
                       {mul(rows, idx(d / 32))});
    if (cfg.kMean)
      q.bias = alloc({ShapedType::kDynamic}, b.getF32Type(), {rows});
    SmallVector<Value> operands = {input(query), q.prepared, i32(numRows)};
    if (q.scales)
      operands.push_back(q.scales);
    if (q.bias)
      operands.append({input(kMean), q.bias});
    launch(kernel, {numRows, idx(hq), idx(1)}, operands);
    return q;
  }

  /// The merge kernel over \p numRows rows (sequences or tokens) of the
  /// partial results \p partials (out, max, sum), with the optional
  /// \p sinks and \p vMean tensors; returns the result as a tensor of
  /// \p resultType.
  Value launchMerge(const AttentionConfig &cfg, gpu::GPUFuncOp kernel,
                    ArrayRef<Value> partials, Value sinks, Value vMean,
                    Value numRows, Value parts, RankedTensorType resultType) {
    Value out = alloc(resultType.getShape(), cfg.resultType,
                      resultType.isDynamicDim(0) ? ValueRange{numRows}
                                                 : ValueRange{});
    launchMergeInto(cfg, kernel, partials, sinks, vMean, numRows, parts, out);
    return toTensor(out, resultType);
  }
  /// The merge kernel's launch writing the buffer \p out.
  void launchMergeInto(const AttentionConfig &cfg, gpu::GPUFuncOp kernel,
                       ArrayRef<Value> partials, Value sinks, Value vMean,
                       Value numRows, Value parts, Value out) {
    SmallVector<Value> operands(partials);
    if (sinks)
      operands.push_back(input(sinks));
    operands.append({flatten(out), i32(numRows), i32(parts)});
    if (vMean)
      operands.push_back(input(vMean));
    launch(kernel, {idx(cfg.numQHeads), numRows, idx(1)}, operands);
  }
};

struct ConvertUQToWavePass
    : public uq::impl::ConvertUQToWavePassBase<ConvertUQToWavePass> {
  using Base::Base;
  void runOnOperation() override;

private:
  gpu::GPUModuleOp kernelModule();
  /// Adds a kernel built by \p build to the kernel module.
  template <typename Config, typename Fn>
  gpu::GPUFuncOp addKernel(Location loc, const Config &cfg, Fn build) {
    gpu::GPUModuleOp m = kernelModule();
    OpBuilder b(m.getBodyRegion());
    b.setInsertionPointToEnd(&m.getBodyRegion().front());
    KernelSpec spec;
    gpu::GPUFuncOp f = build(b, loc, cfg, spec);
    specs.push_back(std::move(spec));
    return f;
  }
  LogicalResult lowerCacheWrite(CacheWriteOp op, StringRef base);
  LogicalResult lowerAttention(Operation *op, StringRef base);
  LogicalResult lowerMerge(MergePartitionsOp op, StringRef base);
  LogicalResult lowerPaged(PagedAttentionOp op, StringRef base);
  FailureOr<AttentionConfig> attentionConfig(Operation *op, StringRef base,
                                             int64_t partition);

  gpu::GPUModuleOp kernels;
  std::vector<KernelSpec> specs;
};

gpu::GPUModuleOp ConvertUQToWavePass::kernelModule() {
  if (kernels)
    return kernels;
  ModuleOp module = getOperation();
  module.walk([&](gpu::GPUModuleOp m) {
    if (m.getName() == kKernelModule)
      kernels = m;
  });
  if (!kernels) {
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    kernels = gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModule);
  }
  return kernels;
}

LogicalResult ConvertUQToWavePass::lowerCacheWrite(CacheWriteOp op,
                                                   StringRef base) {
  auto keyType = cast<RankedTensorType>(op.getKey().getType());
  RankedTensorType cacheType = op.getCacheType();
  CacheWriteConfig cfg;
  cfg.name = (base + "_cache_write").str();
  cfg.headDim = keyType.getDimSize(2);
  cfg.numKVHeads = keyType.getDimSize(1);
  cfg.blockSize = cacheType.getDimSize(op.getLayout().getBlockSizeDim());
  cfg.slotBytes = cacheType.getDimSize(3);
  cfg.kFormat = op.getKFormat();
  cfg.vFormat = op.getVFormat();
  cfg.layout = op.getLayout();
  cfg.inputType = keyType.getElementType();
  cfg.kMean = static_cast<bool>(op.getKMean());
  cfg.vMean = static_cast<bool>(op.getVMean());
  if (failed(checkFormats(op, cfg.kFormat, cfg.vFormat, cfg.layout,
                          cfg.headDim)) ||
      failed(checkCacheBlock(op, cfg.blockSize, cfg.numKVHeads,
                             cfg.slotBytes)))
    return failure();
  gpu::GPUFuncOp kernel = addKernel(op.getLoc(), cfg, buildCacheWriteKernel);

  OpBuilder b(op);
  Host h{b, op.getLoc()};
  Value k = h.input(op.getKey()), v = h.input(op.getValue());
  Value slots = h.input(op.getSlotMapping());
  Value cache = h.copyOf(op.getCache());
  Value numTokens = h.dim(op.getKey(), 0);
  Value numBlocks = h.dim(op.getCache(), 0);
  SmallVector<Value> operands = {k, v, slots, h.flatten(cache),
                                 h.i32(numTokens), h.i32(numBlocks)};
  if (cfg.kMean)
    operands.push_back(h.input(op.getKMean()));
  if (cfg.vMean)
    operands.push_back(h.input(op.getVMean()));
  h.launch(kernel, {numTokens, h.idx(cfg.numKVHeads), h.idx(2)}, operands);
  op.getResult().replaceAllUsesWith(h.toTensor(cache, op.getType()));
  op.erase();
  return success();
}

FailureOr<AttentionConfig>
ConvertUQToWavePass::attentionConfig(Operation *op, StringRef base,
                                     int64_t partition) {
  AttentionConfig cfg;
  cfg.base = base.str();
  auto fill = [&](auto attn) {
    auto qType = cast<RankedTensorType>(attn.getQuery().getType());
    auto cType = cast<RankedTensorType>(attn.getCache().getType());
    cfg.headDim = qType.getDimSize(2);
    cfg.numQHeads = qType.getDimSize(1);
    cfg.numKVHeads = cType.getDimSize(attn.getLayout().getKVHeadsDim());
    cfg.blockSize = cType.getDimSize(attn.getLayout().getBlockSizeDim());
    cfg.slotBytes = cType.getDimSize(3);
    cfg.kFormat = attn.getKFormat();
    cfg.vFormat = attn.getVFormat();
    cfg.layout = attn.getLayout();
    cfg.softmaxScale = attn.getScale().convertToFloat();
    cfg.queryType = qType.getElementType();
    cfg.scaledQuery =
        attn.getQueryPrecision() == QueryPrecision::fp8_e4m3_scaled;
    cfg.kMean = static_cast<bool>(attn.getKMean());
    cfg.vMean = static_cast<bool>(attn.getVMean());
    if (attn.getQueryPrecision() == QueryPrecision::f32)
      return LogicalResult(
          op->emitOpError()
          << "has no GPU kernel for query_precision f32: the QK product "
             "runs on the MFMA with an FP8 query");
    return success();
  };
  LogicalResult ok = failure();
  if (auto attn = dyn_cast<DecodeAttentionOp>(op)) {
    ok = fill(attn);
    cfg.resultType =
        cast<RankedTensorType>(attn.getResult().getType()).getElementType();
    cfg.sinks = static_cast<bool>(attn.getSinks());
    cfg.spreadPartitions = true;
  } else if (auto attn = dyn_cast<DecodeAttentionPartialOp>(op)) {
    ok = fill(attn);
    // The kernels add v_mean at the merge, where the partitions' softmax
    // shares are known; a partial result alone has no merge kernel.
    if (succeeded(ok) && attn.getVMean())
      ok = op->emitOpError()
           << "has no GPU kernel for v_mean: the GPU path adds the value "
              "mean in uq.decode_attention's merge kernel; use uq."
              "decode_attention, or add v_mean after uq.merge_partitions";
  } else if (auto attn = dyn_cast<PagedAttentionOp>(op)) {
    ok = fill(attn);
    cfg.resultType =
        cast<RankedTensorType>(attn.getResult().getType()).getElementType();
    cfg.sinks = static_cast<bool>(attn.getSinks());
    cfg.rowsName = "num_tokens";
    cfg.rowsMeaning = "query tokens";
    cfg.opName = "paged_attention";
    // Positions are below 2^31: a wider window is no window.
    if (std::optional<uint64_t> wnd = attn.getWindow())
      cfg.window = *wnd >= (uint64_t(1) << 31) ? 0 : int64_t(*wnd);
  }
  if (failed(ok) ||
      failed(checkFormats(op, cfg.kFormat, cfg.vFormat, cfg.layout,
                          cfg.headDim)) ||
      failed(checkCacheBlock(op, cfg.blockSize, cfg.numKVHeads,
                             cfg.slotBytes)))
    return failure();
  cfg.tileTokens = tileTokens;
  cfg.partitionSize = partition;
  cfg.prefillWaves = prefillWaves;
  cfg.prefillRows = prefillRows;
  const bool paged = isa<PagedAttentionOp>(op);
  cfg.mergeChunk = paged ? prefillMergeChunk : mergeChunk;
  if (cfg.mergeChunk != 8 && cfg.mergeChunk != 16 && cfg.mergeChunk != 32 &&
      cfg.mergeChunk != 64)
    return op->emitOpError()
           << (paged ? "prefill-merge-chunk " : "merge-chunk ")
           << cfg.mergeChunk
           << " is not supported (8, 16, 32 or 64 partitions per step of the "
              "merge loop)";
  cfg.prefillSharedV = prefillSharedV;
  if (isa<PagedAttentionOp>(op) && prefillRows != 16 && prefillRows != 32)
    return op->emitOpError()
           << "prefill-rows " << prefillRows.getValue()
           << " is not supported (16 or 32 MFMA rows per wave; 64 needs "
              "more than the 512 registers of a lane)";
  if (tileTokens != kPVMfma.k)
    return op->emitOpError() << "tile-tokens " << tileTokens.getValue()
                             << " is not supported (32: two 16-key MFMA "
                                "columns, one K = 32 step of the PV MFMA)";
  if (partition <= 0 || partition % tileTokens != 0)
    return op->emitOpError()
           << "partition size " << partition << " must be a positive multiple "
           << "of the " << tileTokens.getValue() << "-token tile";
  if (partition > kMaxPartitionSize)
    return op->emitOpError()
           << "partition size " << partition << " exceeds " << kMaxPartitionSize
           << " tokens: positions are 32-bit, no sequence is longer than 2^31 "
              "- 1 tokens";
  if (cfg.spreadPartitions) {
    if (maxPartitionTokens <= 0 || maxPartitionTokens % tileTokens != 0 ||
        maxPartitionTokens > kMaxPartitionSize)
      return op->emitOpError()
             << "max-partition-tokens " << maxPartitionTokens.getValue()
             << " must be a positive multiple of the " << tileTokens.getValue()
             << "-token tile, at most " << kMaxPartitionSize
             << " (positions are 32-bit)";
    if (minPartitionTokens <= 0 || minPartitionTokens % tileTokens != 0 ||
        minPartitionTokens > maxPartitionTokens)
      return op->emitOpError()
             << "min-partition-tokens " << minPartitionTokens.getValue()
             << " must be a positive multiple of the " << tileTokens.getValue()
             << "-token tile, at most max-partition-tokens "
             << maxPartitionTokens.getValue();
    if (decodeWorkgroups <= 0)
      return op->emitOpError() << "decode-workgroups "
                               << decodeWorkgroups.getValue()
                               << " must be positive";
    cfg.maxPartitionTokens = maxPartitionTokens;
    cfg.minPartitionTokens = minPartitionTokens;
    cfg.targetWorkgroups = decodeWorkgroups;
  }
  return cfg;
}

LogicalResult ConvertUQToWavePass::lowerAttention(Operation *op,
                                                  StringRef base) {
  auto partialOp = dyn_cast<DecodeAttentionPartialOp>(op);
  int64_t partition =
      partialOp ? int64_t(partialOp.getPartitionSize()) : partitionSize;
  FailureOr<AttentionConfig> cfgOr = attentionConfig(op, base, partition);
  if (failed(cfgOr))
    return failure();
  AttentionConfig cfg = *cfgOr;
  gpu::GPUFuncOp queryKernel = addKernel(op->getLoc(), cfg, buildQueryKernel);
  gpu::GPUFuncOp partialKernel =
      addKernel(op->getLoc(), cfg, buildPartialKernel);

  Value query = op->getOperand(0), cacheT = op->getOperand(1),
        tablesT = op->getOperand(2), lensT = op->getOperand(3);
  OpBuilder b(op);
  Host h{b, op->getLoc()};
  const int64_t hq = cfg.numQHeads, d = cfg.headDim;
  Value numSeqs = h.dim(query, 0);
  Value numBlocks = h.dim(cacheT, 0);
  Value maxBlocks = h.dim(tablesT, 1);
  Value parts = partialOp ? h.partitions(cfg, maxBlocks)
                          : h.decodePartitions(cfg, numSeqs, maxBlocks);
  Host::QueryWorkspaces qw = h.launchQuery(
      cfg, queryKernel, query, numSeqs,
      partialOp ? partialOp.getKMean() : cast<DecodeAttentionOp>(op).getKMean());
  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  // The partial kernel into workspaces of `parts` partitions.
  auto launchPartial = [&](Host &hh) {
    Value pout = hh.alloc({dyn, hq, dyn, d}, f32, {numSeqs, parts});
    Value pmax = hh.alloc({dyn, hq, dyn}, f32, {numSeqs, parts});
    Value psum = hh.alloc({dyn, hq, dyn}, f32, {numSeqs, parts});
    SmallVector<Value> partialOperands = {
        qw.prepared,  hh.input(cacheT),  hh.input(tablesT), hh.input(lensT),
        hh.flatten(pout), hh.flatten(pmax), hh.flatten(psum),
        hh.i32(numSeqs), hh.i32(numBlocks), hh.i32(maxBlocks), hh.i32(parts)};
    qw.appendTo(partialOperands);
    hh.launch(partialKernel, {parts, hh.idx(cfg.numKVHeads), numSeqs},
              partialOperands);
    return SmallVector<Value>{pout, pmax, psum};
  };

  if (partialOp) {
    SmallVector<Value> bufs = launchPartial(h);
    // The op's types are static in the partition count (its verifier).
    for (auto [res, buf] : llvm::zip(partialOp->getResults(), bufs)) {
      auto resType = cast<RankedTensorType>(res.getType());
      Value fixed = memref::CastOp::create(
          b, h.loc, MemRefType::get(resType.getShape(), f32), buf);
      res.replaceAllUsesWith(h.toTensor(fixed, resType));
    }
    op->erase();
    return success();
  }

  // uq.decode_attention: one partition runs the single-pass kernel (no
  // partial results, no merge); more run the partial and merge kernels.
  auto attn = cast<DecodeAttentionOp>(op);
  gpu::GPUFuncOp mergeKernel = addKernel(op->getLoc(), cfg, buildMergeKernel);
  gpu::GPUFuncOp singleKernel =
      addKernel(op->getLoc(), cfg, buildSinglePassKernel);
  auto resultType = cast<RankedTensorType>(attn.getResult().getType());
  Value out = h.alloc(resultType.getShape(), cfg.resultType,
                      resultType.isDynamicDim(0) ? ValueRange{numSeqs}
                                                 : ValueRange{});
  Value single = arith::CmpIOp::create(b, h.loc, arith::CmpIPredicate::eq,
                                       parts, h.idx(1));
  auto ifOp = scf::IfOp::create(b, h.loc, single, /*withElseRegion=*/true);
  {
    OpBuilder tb = ifOp.getThenBodyBuilder();
    Host th{tb, h.loc};
    SmallVector<Value> operands = {qw.prepared, th.input(cacheT),
                                   th.input(tablesT), th.input(lensT)};
    if (attn.getSinks())
      operands.push_back(th.input(attn.getSinks()));
    operands.append({th.flatten(out), th.i32(numSeqs), th.i32(numBlocks),
                     th.i32(maxBlocks)});
    qw.appendTo(operands);
    if (attn.getVMean())
      operands.push_back(th.input(attn.getVMean()));
    th.launch(singleKernel, {th.idx(1), th.idx(cfg.numKVHeads), numSeqs},
              operands);
  }
  {
    OpBuilder eb = ifOp.getElseBodyBuilder();
    Host eh{eb, h.loc};
    SmallVector<Value> bufs = launchPartial(eh);
    eh.launchMergeInto(cfg, mergeKernel,
                       {eh.flatten(bufs[0]), eh.flatten(bufs[1]),
                        eh.flatten(bufs[2])},
                       attn.getSinks(), attn.getVMean(), numSeqs, parts, out);
  }
  attn.getResult().replaceAllUsesWith(h.toTensor(out, resultType));
  op->erase();
  return success();
}

/// uq.paged_attention: query preparation over the tokens, the prefill
/// kernel over (query tiles of all sequences, KV heads, partitions), the
/// merge over the tokens.
LogicalResult ConvertUQToWavePass::lowerPaged(PagedAttentionOp op,
                                              StringRef base) {
  FailureOr<AttentionConfig> cfgOr = attentionConfig(op, base, partitionSize);
  if (failed(cfgOr))
    return failure();
  AttentionConfig cfg = *cfgOr;
  gpu::GPUFuncOp queryKernel = addKernel(op.getLoc(), cfg, buildQueryKernel);
  gpu::GPUFuncOp prefillKernel =
      addKernel(op.getLoc(), cfg, buildPrefillKernel);
  gpu::GPUFuncOp mergeKernel = addKernel(op.getLoc(), cfg, buildMergeKernel);

  OpBuilder b(op);
  Host h{b, op.getLoc()};
  const int64_t hq = cfg.numQHeads, d = cfg.headDim;
  Value query = op.getQuery();
  Value numTokens = h.dim(query, 0);
  Value numBlocks = h.dim(op.getCache(), 0);
  Value maxBlocks = h.dim(op.getBlockTables(), 1);
  Value numSeqs = arith::MinUIOp::create(b, h.loc,
                                         h.dim(op.getSeqLens(), 0),
                                         h.dim(op.getBlockTables(), 0));
  Value numStarts = h.dim(op.getQueryStartLoc(), 0);
  // Partitions as decode's; tiles = num_tokens / tokens_per_tile +
  // num_seqs + 2.
  Value parts = h.partitions(cfg, maxBlocks);
  Value tiles = arith::AddIOp::create(
      b, h.loc,
      arith::DivUIOp::create(b, h.loc, numTokens,
                             h.idx(prefillTokensPerTile(cfg))),
      arith::AddIOp::create(b, h.loc, numSeqs, h.idx(2)));
  // The query kernel over the tokens (decode's, with its workspaces).
  Host::QueryWorkspaces qw =
      h.launchQuery(cfg, queryKernel, query, numTokens, op.getKMean());
  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  Value pout = h.alloc({dyn, hq, dyn, d}, f32, {numTokens, parts});
  Value pmax = h.alloc({dyn, hq, dyn}, f32, {numTokens, parts});
  Value psum = h.alloc({dyn, hq, dyn}, f32, {numTokens, parts});
  SmallVector<Value> prefillOperands = {
      qw.prepared, h.input(op.getCache()), h.input(op.getBlockTables()),
      h.input(op.getSeqLens()), h.input(op.getQueryStartLoc()),
      h.flatten(pout), h.flatten(pmax), h.flatten(psum),
      h.i32(numTokens), h.i32(numSeqs), h.i32(numStarts),
      h.i32(numBlocks), h.i32(maxBlocks), h.i32(tiles), h.i32(parts)};
  qw.appendTo(prefillOperands);
  h.launch(prefillKernel, {tiles, h.idx(cfg.numKVHeads), parts},
           prefillOperands);
  op.getResult().replaceAllUsesWith(h.launchMerge(
      cfg, mergeKernel, {h.flatten(pout), h.flatten(pmax), h.flatten(psum)},
      op.getSinks(), op.getVMean(), numTokens, parts,
      cast<RankedTensorType>(op.getResult().getType())));
  op.erase();
  return success();
}

LogicalResult ConvertUQToWavePass::lowerMerge(MergePartitionsOp op,
                                              StringRef base) {
  auto outT = cast<RankedTensorType>(op.getOut().getType());
  auto resT = cast<RankedTensorType>(op.getResult().getType());
  AttentionConfig cfg;
  cfg.base = base.str();
  cfg.numQHeads = outT.getDimSize(1);
  cfg.headDim = outT.getDimSize(3);
  cfg.resultType = resT.getElementType();
  cfg.sinks = static_cast<bool>(op.getSinks());
  // Values are not rotated back: the partial results are in the coded
  // domain of whatever produced them (see uq.merge_partitions).
  cfg.vFormat = KVFormatAttr::getDefault(op.getContext(), ElementCode::bf16,
                                         Rotation::none);
  if (outT.isDynamicDim(1) || outT.isDynamicDim(3))
    return op.emitOpError("needs static query heads and head dimension for "
                          "the GPU kernel");
  gpu::GPUFuncOp kernel = addKernel(op.getLoc(), cfg, buildMergeKernel);
  OpBuilder b(op);
  Host h{b, op.getLoc()};
  Value numSeqs = h.dim(op.getOut(), 0), parts = h.dim(op.getOut(), 2);
  // (uq.merge_partitions has no v_mean: the decode ops add it.)
  op.getResult().replaceAllUsesWith(h.launchMerge(
      cfg, kernel,
      {h.input(op.getOut()), h.input(op.getMax()), h.input(op.getSum())},
      op.getSinks(), Value(), numSeqs, parts, resT));
  op.erase();
  return success();
}

void ConvertUQToWavePass::runOnOperation() {
  ModuleOp module = getOperation();
  bool failedAny = false;
  SmallVector<std::pair<Operation *, std::string>> work;
  module.walk([&](func::FuncOp func) {
    int64_t index = 0;
    func.walk([&](Operation *op) {
      if (!isa<CacheWriteOp, DecodeAttentionOp, DecodeAttentionPartialOp,
               MergePartitionsOp, PagedAttentionOp>(op))
        return;
      work.push_back(
          {op, (func.getSymName() + "_" + std::to_string(index++)).str()});
    });
  });
  // The options hold for the whole module: an invalid prefill-waves is an
  // error whatever ops the module has (at its first uq op, else at the
  // module), as uq-compile's --prefill-waves documents.
  if (prefillWaves < 1 || prefillWaves > 8 ||
      (prefillWaves & (prefillWaves - 1)) != 0) {
    InFlightDiagnostic d = work.empty() ? module.emitError()
                                        : work.front().first->emitOpError();
    d << "prefill-waves " << prefillWaves.getValue()
      << " is not supported (1, 2, 4 or 8 waves per workgroup of the paged "
         "prefill kernel: each wave copies 32 / W tokens of every key tile)";
    return signalPassFailure();
  }
  for (auto &[op, base] : work) {
    LogicalResult r =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](CacheWriteOp o) { return lowerCacheWrite(o, base); })
            .Case([&](MergePartitionsOp o) { return lowerMerge(o, base); })
            .Case([&](PagedAttentionOp o) { return lowerPaged(o, base); })
            .Default([&](Operation *o) { return lowerAttention(o, base); });
    failedAny |= failed(r);
  }
  if (failedAny)
    return signalPassFailure();
  if (specs.empty())
    return;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(&getContext()));
  appendKernelDescriptions(module, specs);
}

} // namespace
