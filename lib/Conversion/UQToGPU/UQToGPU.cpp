//===- UQToGPU.cpp - uq ops to gfx950 gpu.func kernels --------------------===//
//
// Checks that each uq op is one the gfx950 kernels support, instantiates the
// kernel templates of Kernels.h for its static sizes, parses them into the
// module's `gpu.module @uq_kernels`, and records the launch description of
// every kernel in the module attribute `uq.kernels`.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/Passes.h"
#include "uq/Conversion/UQToGPU/Kernels.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringExtras.h"

namespace uq {
#define GEN_PASS_DEF_CONVERTUQTOGPUPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;

namespace {

/// Name of the kernel element type of a float tensor.
std::string floatName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  return "";
}

/// Builds the description of one kernel argument.
DictionaryAttr argDesc(MLIRContext *ctx, StringRef name, StringRef dtype,
                       ArrayRef<int64_t> shape, StringRef access,
                       StringRef meaning) {
  Builder b(ctx);
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(name)),
      b.getNamedAttr("kind", b.getStringAttr("global_buffer")),
      b.getNamedAttr("dtype", b.getStringAttr(dtype)),
      b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape)),
      b.getNamedAttr("access", b.getStringAttr(access)),
      b.getNamedAttr("meaning", b.getStringAttr(meaning))};
  return b.getDictionaryAttr(fields);
}

/// Launch description of one kernel.
struct KernelInfo {
  std::string name;
  std::string op;
  std::string text;
  std::array<int64_t, 3> grid;
  std::string gridRule;
  SmallVector<Attribute> args;
};

/// Checks the formats and layout the gfx950 kernels implement; reports a
/// located error naming what is not supported.
LogicalResult checkUltraQuant(Operation *op, KVFormatAttr k, KVFormatAttr v,
                              CacheLayoutAttr layout, int64_t headDim) {
  auto isFp4 = [](KVFormatAttr f) {
    return f.getElement() == ElementCode::fp4_e2m1 &&
           f.getScale() == ScaleEncoding::ue8m0 && f.getGroupSize() == 32 &&
           f.getRounding() == Rounding::ties_down;
  };
  if (!isFp4(k) || !isFp4(v))
    return op->emitOpError()
           << "has no gfx950 kernel for these formats: the GPU path needs FP4 "
              "E2M1 with UE8M0 scales per 32 and ties-down rounding for K and "
              "V (use the CPU path, convert-uq-to-linalg, for the others)";
  if (!k.isRotated())
    return op->emitOpError()
           << "has no gfx950 kernel for unrotated keys: the query placement "
              "assumes Hadamard-rotated keys";
  if (layout.getKind() != LayoutKind::vllm_slot)
    return op->emitOpError() << "has no gfx950 kernel for this cache layout";
  if (headDim != 64 && headDim != 128 && headDim != 256)
    return op->emitOpError() << "has no gfx950 kernel for head dimension "
                             << headDim << " (64, 128 and 256 are supported)";
  return success();
}

LogicalResult checkStatic(Operation *op) {
  for (Type t : op->getOperandTypes())
    if (auto shaped = dyn_cast<ShapedType>(t);
        shaped && !shaped.hasStaticShape())
      return op->emitOpError()
             << "needs static shapes for the gfx950 kernels, got " << t;
  for (Type t : op->getResultTypes())
    if (auto shaped = dyn_cast<ShapedType>(t);
        shaped && !shaped.hasStaticShape())
      return op->emitOpError()
             << "needs static shapes for the gfx950 kernels, got " << t;
  return success();
}

struct ConvertUQToGPUPass
    : public uq::impl::ConvertUQToGPUPassBase<ConvertUQToGPUPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  FailureOr<KernelInfo> partialKernel(Operation *op, StringRef name,
                                      Value query, Value cache, Value tables,
                                      int64_t numPartitions, float scale,
                                      KVFormatAttr k, KVFormatAttr v,
                                      CacheLayoutAttr layout,
                                      QueryPrecision precision);
  KernelInfo mergeKernelInfo(StringRef name, int64_t numSeqs, int64_t hq,
                             int64_t parts, int64_t d, bool sinks,
                             Type resultType, bool rotateOutput);
};

FailureOr<KernelInfo> ConvertUQToGPUPass::partialKernel(
    Operation *op, StringRef name, Value query, Value cache, Value tables,
    int64_t numPartitions, float scale, KVFormatAttr k, KVFormatAttr v,
    CacheLayoutAttr layout, QueryPrecision precision) {
  MLIRContext *ctx = op->getContext();
  auto qType = cast<RankedTensorType>(query.getType());
  auto cType = cast<RankedTensorType>(cache.getType());
  auto tType = cast<RankedTensorType>(tables.getType());
  if (failed(checkUltraQuant(op, k, v, layout, qType.getDimSize(2))))
    return failure();
  if (precision != QueryPrecision::fp8_e4m3)
    return op->emitOpError()
           << "has no gfx950 kernel for query_precision f32: the QK product "
              "runs on the FP8 x FP4 scaled MFMA";
  if (partitionSize <= 0 || partitionSize % 32 != 0)
    return op->emitOpError() << "partition size " << partitionSize.getValue()
                             << " must be a positive multiple of 32 (the "
                                "kernel's token tile)";
  kernels::DecodeKernelParams p;
  p.name = name.str();
  p.numSeqs = qType.getDimSize(0);
  p.numQHeads = qType.getDimSize(1);
  p.headDim = qType.getDimSize(2);
  p.numBlocks = cType.getDimSize(0);
  p.blockSize = cType.getDimSize(1);
  p.numKVHeads = cType.getDimSize(2);
  p.slotBytes = cType.getDimSize(3);
  p.maxBlocks = tType.getDimSize(1);
  p.partitionSize = partitionSize;
  p.numPartitions = numPartitions;
  p.queryType = floatName(qType.getElementType());
  p.softmaxScale = scale;

  KernelInfo info;
  info.name = p.name;
  info.op = "decode_attention_partial";
  info.text = kernels::decodePartialKernel(p);
  info.grid = {p.numPartitions, p.numKVHeads, p.numSeqs};
  info.gridRule = "(partitions = ceil(max_blocks * block_size / "
                  "partition_size), num_kv_heads, num_seqs)";
  int64_t s = p.numSeqs, hq = p.numQHeads, d = p.headDim,
          parts = p.numPartitions;
  info.args = {
      argDesc(ctx, "query", p.queryType, {s, hq, d}, "read",
              "query of the new token, [num_seqs, num_q_heads, head_dim]"),
      argDesc(ctx, "cache", "u8", cType.getShape(), "read",
              "paged KV cache, vLLM slot layout [K codes][K scales][V codes]"
              "[V scales]"),
      argDesc(ctx, "block_tables", "i32", tType.getShape(), "read",
              "block of each 'block_size' tokens of a sequence"),
      argDesc(ctx, "seq_lens", "i32", {s}, "read", "tokens per sequence"),
      argDesc(ctx, "partial_out", "f32", {s, hq, parts, d}, "write",
              "normalised output of each partition"),
      argDesc(ctx, "partial_max", "f32", {s, hq, parts}, "write",
              "max logit of each partition (-inf when empty)"),
      argDesc(ctx, "partial_sum", "f32", {s, hq, parts}, "write",
              "sum of exp(logit - max) of each partition (0 when empty)")};
  return info;
}

KernelInfo ConvertUQToGPUPass::mergeKernelInfo(StringRef name, int64_t numSeqs,
                                               int64_t hq, int64_t parts,
                                               int64_t d, bool sinks,
                                               Type resultType,
                                               bool rotateOutput) {
  MLIRContext *ctx = &getContext();
  kernels::MergeKernelParams p{
      name.str(),  numSeqs, hq, parts, d, sinks, floatName(resultType),
      rotateOutput};
  KernelInfo info;
  info.name = p.name;
  info.op = "merge_partitions";
  info.text = kernels::mergeKernel(p);
  info.grid = {hq, numSeqs, 1};
  info.gridRule = "(num_q_heads, num_seqs, 1)";
  info.args = {argDesc(ctx, "partial_out", "f32", {numSeqs, hq, parts, d},
                       "read", "normalised output of each partition"),
               argDesc(ctx, "partial_max", "f32", {numSeqs, hq, parts}, "read",
                       "max logit of each partition"),
               argDesc(ctx, "partial_sum", "f32", {numSeqs, hq, parts}, "read",
                       "sum of exp(logit - max) of each partition")};
  if (sinks)
    info.args.push_back(argDesc(ctx, "sinks", "f32", {hq}, "read",
                                "attention sink logit of each query head"));
  info.args.push_back(argDesc(ctx, "out", p.resultType, {numSeqs, hq, d},
                              "write", "attention output"));
  return info;
}

void ConvertUQToGPUPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  if (chip != "gfx950") {
    module.emitError() << "convert-uq-to-gpu: chip '" << chip
                       << "' is not supported (only gfx950 has the scaled "
                          "MFMA the kernels use)";
    return signalPassFailure();
  }

  SmallVector<KernelInfo> infos;
  bool failedAny = false;
  module.walk([&](func::FuncOp func) {
    int64_t index = 0;
    func.walk([&](Operation *op) {
      if (!isa<UQDialect>(op->getDialect()))
        return;
      std::string base =
          (func.getSymName() + "_" + std::to_string(index++)).str();
      if (failed(checkStatic(op))) {
        failedAny = true;
        return;
      }
      if (auto attn = dyn_cast<DecodeAttentionOp>(op)) {
        int64_t cap = attn.getMaxBlocksPerSeq() * attn.getBlockSize();
        int64_t parts = std::max<int64_t>(
            1, (cap + partitionSize - 1) / std::max<int64_t>(partitionSize, 1));
        auto partial = partialKernel(
            op, base + "_partial", attn.getQuery(), attn.getCache(),
            attn.getBlockTables(), parts, attn.getScale().convertToFloat(),
            attn.getKFormat(), attn.getVFormat(), attn.getLayout(),
            attn.getQueryPrecision());
        if (failed(partial)) {
          failedAny = true;
          return;
        }
        auto resultType = cast<RankedTensorType>(attn.getResult().getType());
        infos.push_back(std::move(*partial));
        infos.push_back(mergeKernelInfo(
            base + "_merge", attn.getNumSeqs(), attn.getNumQueryHeads(), parts,
            attn.getHeadDim(), static_cast<bool>(attn.getSinks()),
            resultType.getElementType(), attn.getVFormat().isRotated()));
        return;
      }
      if (auto attn = dyn_cast<DecodeAttentionPartialOp>(op)) {
        if (static_cast<int64_t>(attn.getPartitionSize()) != partitionSize) {
          op->emitOpError()
              << "partition_size " << attn.getPartitionSize()
              << " differs from the pass option " << partitionSize.getValue();
          failedAny = true;
          return;
        }
        auto partial = partialKernel(
            op, base + "_partial", attn.getQuery(), attn.getCache(),
            attn.getBlockTables(), attn.getNumPartitions(),
            attn.getScale().convertToFloat(), attn.getKFormat(),
            attn.getVFormat(), attn.getLayout(), attn.getQueryPrecision());
        if (failed(partial)) {
          failedAny = true;
          return;
        }
        infos.push_back(std::move(*partial));
        return;
      }
      if (auto merge = dyn_cast<MergePartitionsOp>(op)) {
        auto outType = cast<RankedTensorType>(merge.getOut().getType());
        auto resultType = cast<RankedTensorType>(merge.getResult().getType());
        infos.push_back(mergeKernelInfo(
            base + "_merge", outType.getDimSize(0), outType.getDimSize(1),
            outType.getDimSize(2), outType.getDimSize(3),
            static_cast<bool>(merge.getSinks()), resultType.getElementType(),
            /*rotateOutput=*/false));
        return;
      }
      if (auto write = dyn_cast<CacheWriteOp>(op)) {
        auto keyType = cast<RankedTensorType>(write.getKey().getType());
        RankedTensorType cacheType = write.getCacheType();
        if (failed(checkUltraQuant(op, write.getKFormat(), write.getVFormat(),
                                   write.getLayout(), keyType.getDimSize(2)))) {
          failedAny = true;
          return;
        }
        kernels::CacheWriteKernelParams p;
        p.name = base + "_cache_write";
        p.numTokens = keyType.getDimSize(0);
        p.numKVHeads = keyType.getDimSize(1);
        p.headDim = keyType.getDimSize(2);
        p.numBlocks = cacheType.getDimSize(0);
        p.blockSize = cacheType.getDimSize(1);
        p.slotBytes = cacheType.getDimSize(3);
        p.inputType = floatName(keyType.getElementType());
        p.kC = write.getKFormat().getCValue();
        p.vC = write.getVFormat().getCValue();
        p.rotateK = write.getKFormat().isRotated();
        p.rotateV = write.getVFormat().isRotated();
        p.searchK = write.getKFormat().getScaleRule() == ScaleRule::mse_search;
        p.searchV = write.getVFormat().getScaleRule() == ScaleRule::mse_search;
        KernelInfo info;
        info.name = p.name;
        info.op = "cache_write";
        info.text = kernels::cacheWriteKernel(p);
        info.grid = {p.numTokens, p.numKVHeads, 2};
        info.gridRule = "(num_tokens, num_kv_heads, 2): z = 0 writes K, "
                        "z = 1 writes V";
        ArrayRef<int64_t> kvShape = keyType.getShape();
        info.args = {argDesc(ctx, "key", p.inputType, kvShape, "read",
                             "new keys [num_tokens, num_kv_heads, head_dim]"),
                     argDesc(ctx, "value", p.inputType, kvShape, "read",
                             "new values [num_tokens, num_kv_heads, head_dim]"),
                     argDesc(ctx, "slot_mapping", "i64", {p.numTokens}, "read",
                             "cache slot of each token (block * block_size + "
                             "offset); negative = skip"),
                     argDesc(ctx, "cache", "u8", cacheType.getShape(),
                             "read_write", "paged KV cache, updated in place")};
        infos.push_back(std::move(info));
        return;
      }
      op->emitOpError()
          << "has no gfx950 kernel (only cache_write and decode attention "
             "run on the GPU; use the CPU path, convert-uq-to-linalg)";
      failedAny = true;
    });
  });
  if (failedAny)
    return signalPassFailure();
  if (infos.empty())
    return;

  // Parse all kernels into one gpu.module.
  std::string text = "gpu.module @uq_kernels {\n";
  for (const KernelInfo &k : infos)
    text += k.text;
  text += "}\n";
  ParserConfig config(ctx);
  std::string parseError;
  OwningOpRef<ModuleOp> parsed;
  {
    // A template that does not parse is a compiler bug: report the line.
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
      llvm::raw_string_ostream os(parseError);
      os << diag;
      if (auto loc = dyn_cast<FileLineColLoc>(diag.getLocation())) {
        SmallVector<StringRef> lines;
        StringRef(text).split(lines, '\n');
        if (loc.getLine() >= 1 && loc.getLine() <= lines.size())
          os << " at kernel template line " << loc.getLine() << ": '"
             << lines[loc.getLine() - 1].trim() << "'";
      }
      return success();
    });
    parsed = parseSourceString<ModuleOp>(text, config, "uq-kernel-template");
  }
  if (!parsed) {
    module.emitError() << "convert-uq-to-gpu: internal error: a kernel "
                          "template did not parse: "
                       << parseError;
    return signalPassFailure();
  }
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module.getBody());
  for (Operation &op : llvm::make_early_inc_range(*parsed->getBody()))
    op.moveBefore(module.getBody(), module.getBody()->end());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  builder.getUnitAttr());

  SmallVector<Attribute> descs;
  for (const KernelInfo &k : infos) {
    SmallVector<NamedAttribute> fields = {
        builder.getNamedAttr("name", builder.getStringAttr(k.name)),
        builder.getNamedAttr("op", builder.getStringAttr(k.op)),
        builder.getNamedAttr("grid", builder.getDenseI64ArrayAttr(k.grid)),
        builder.getNamedAttr("grid_rule", builder.getStringAttr(k.gridRule)),
        builder.getNamedAttr("block", builder.getDenseI64ArrayAttr({64, 1, 1})),
        builder.getNamedAttr("args", builder.getArrayAttr(k.args))};
    descs.push_back(builder.getDictionaryAttr(fields));
  }
  module->setAttr("uq.kernels", builder.getArrayAttr(descs));
}

} // namespace
