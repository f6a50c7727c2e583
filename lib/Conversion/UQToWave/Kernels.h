//===- Kernels.h - Wave-level kernels of convert-uq-to-wave -----*- C++ -*-===//
//
// Builders of the wave-level kernels (gpu.func bodies in scf/arith/math/
// vector/memref plus uq tile ops, one whole-wave tile program per workgroup,
// no lane layouts). Every size the serving engine changes per step (number
// of sequences, tokens, cache blocks, block-table width, partitions) is a
// scalar kernel argument; head sizes, block size, formats and the partition
// size are compiled in. docs/gpu-compiler.md describes each kernel.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOWAVE_KERNELS_H
#define UQ_LIB_CONVERSION_UQTOWAVE_KERNELS_H

#include "WaveBuilder.h"

#include "uq/Codegen/MFMA.h"
#include "uq/Codegen/StageAttrs.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace uq::wave {

/// The MFMAs the kernels are tiled for (uq/Codegen/MFMA.h): the scaled one
/// for QK, the 16x16x32 one for PV.
inline constexpr const gfx950::Intrinsic &kQKMfma = gfx950::kScaled16x16x128;
inline constexpr const gfx950::Intrinsic &kPVMfma = gfx950::k16x16x32;
/// The kernel JSON's shape of a paged cache in \p layout: [num_blocks,
/// bs, hkv, sb] (token-major) or [num_blocks, hkv, bs, sb] (head-major).
inline llvm::SmallVector<Dim> cacheShape(CacheLayoutAttr layout, int64_t bs,
                                         int64_t hkv, int64_t sb) {
  if (layout && layout.getKind() == LayoutKind::head_major)
    return {Dim("num_blocks"), Dim(hkv), Dim(bs), Dim(sb)};
  return {Dim("num_blocks"), Dim(bs), Dim(hkv), Dim(sb)};
}
/// Whether the cache is #uq.cache_layout<head_major>.
inline bool isHeadMajor(CacheLayoutAttr layout) {
  return layout && layout.getKind() == LayoutKind::head_major;
}

/// Query rows per MFMA tile: one KV head's GQA group fills them.
constexpr int64_t kRows = kQKMfma.m;
/// K of one scaled MFMA: the query/key tiles are padded to it.
constexpr int64_t kMfmaK = kQKMfma.k;

/// What an attention kernel is compiled for.
struct AttentionConfig {
  /// Kernel names are `<base>_query`, `<base>_partial`, `<base>_merge`.
  std::string base;
  int64_t headDim = 128, numQHeads = 8, numKVHeads = 1;
  int64_t blockSize = 16, slotBytes = 136;
  KVFormatAttr kFormat, vFormat;
  CacheLayoutAttr layout;
  float softmaxScale = 1.0f;
  /// Tokens per split-K partition (a multiple of tileTokens); not used with
  /// spreadPartitions.
  int64_t partitionSize = 256;
  /// uq.decode_attention: partition p of a sequence of `len` tokens covers
  /// [p * span, (p + 1) * span) with span = tileTokens * ceil(len /
  /// (tileTokens * num_partitions)), so any num_partitions spreads each
  /// sequence evenly. Otherwise (uq.decode_attention_partial, whose
  /// partitions the op defines) p covers [p * partitionSize, (p + 1) *
  /// partitionSize) and the last one also the rest.
  bool spreadPartitions = false;
  /// The host's partition-count rule of uq.decode_attention
  /// (decodePartitionCount): at most maxPartitionTokens and at least
  /// minPartitionTokens per partition, aiming at targetWorkgroups partial
  /// workgroups per launch.
  int64_t maxPartitionTokens = 2048, minPartitionTokens = 64,
          targetWorkgroups = 1024;
  /// Partitions the merge kernel reads per step of its loop (all their
  /// loads in flight at once).
  int64_t mergeChunk = 32;
  /// Tokens per iteration of the key loop.
  int64_t tileTokens = 32;
  /// Element type of the query input and of the attention result.
  mlir::Type queryType, resultType;
  bool sinks = false;
  /// The accuracy options (docs/accuracy.md, section 6), each an extra
  /// argument at the end of the kernels that use it:
  ///  - scaledQuery (query_precision = fp8_e4m3_scaled): the query kernel
  ///    writes one UE8M0 scale per 32 channels (`query_scales`), the partial
  ///    kernel passes them as the scaled MFMA's A scales;
  ///  - kMean: the query kernel writes q . rot(k_mean[kv head])
  ///    (`query_bias`), the partial kernel adds it to every logit;
  ///  - vMean: the merge kernel adds v_mean[kv head] times the keys' share
  ///    of the softmax (1 without sinks).
  bool scaledQuery = false, kMean = false, vMean = false;
  /// The run-time size that counts the query rows of the query and merge
  /// kernels ("num_seqs" for decode, "num_tokens" for paged attention), its
  /// meaning, and the uq op the query kernel's JSON names.
  std::string rowsName = "num_seqs";
  std::string rowsMeaning = "number of sequences";
  std::string opName = "decode_attention";
  /// Paged attention: the sliding window in tokens (0: none).
  int64_t window = 0;
  /// Paged attention: waves per prefill workgroup (each owns 16 MFMA
  /// rows; W > 1 shares every key/value tile through LDS).
  int64_t prefillWaves = 4;
  /// Paged attention: MFMA rows per prefill wave (16 or 32: one or two
  /// 16-row tiles sharing every K and V operand of the wave).
  int64_t prefillRows = 16;
  /// Paged attention: with W > 1 waves and FP4 values, the waves convert
  /// each value tile to bf16 once per workgroup (each its share of the
  /// tokens) into LDS, and every wave's PV product reads the bf16 tile
  /// from there (the default: faster on the calibrated timing model,
  /// docs/performance.md "Prefill"); false: every wave converts the whole
  /// tile.
  bool prefillSharedV = true;

  int64_t group() const { return numQHeads / numKVHeads; }
  /// Element type of the prepared query the partial kernel reads: FP8 codes
  /// (i8) for microscaled key formats, bf16 for bf16 keys.
  std::string queryWorkspaceDtype() const;
};

/// The rotated, rounded query of every (sequence, query head): grid
/// (num_seqs, num_q_heads, 1), one query row per workgroup.
mlir::gpu::GPUFuncOp buildQueryKernel(mlir::OpBuilder &b, mlir::Location loc,
                                      const AttentionConfig &cfg,
                                      KernelSpec &spec);

/// One split-K partition of one KV head of one sequence: grid
/// (num_partitions, num_kv_heads, num_seqs).
mlir::gpu::GPUFuncOp buildPartialKernel(mlir::OpBuilder &b,
                                        mlir::Location loc,
                                        const AttentionConfig &cfg,
                                        KernelSpec &spec);

/// The log-sum-exp merge of the partitions of one (sequence, query head):
/// grid (num_q_heads, num_seqs, 1).
mlir::gpu::GPUFuncOp buildMergeKernel(mlir::OpBuilder &b, mlir::Location loc,
                                      const AttentionConfig &cfg,
                                      KernelSpec &spec);

/// uq.decode_attention with one partition: the partial kernel's loop with
/// the merge's epilogue (sinks, rotation back, v_mean, result type), no
/// partial results: grid (1, num_kv_heads, num_seqs).
mlir::gpu::GPUFuncOp buildSinglePassKernel(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           const AttentionConfig &cfg,
                                           KernelSpec &spec);

/// Query tokens per prefill tile: W * R / G (each wave's R MFMA rows are
/// tokens x the G query heads of one KV head).
int64_t prefillTokensPerTile(const AttentionConfig &cfg);

/// uq.paged_attention: one query tile (tokens of one sequence x the GQA
/// group) of one KV head over one split-K partition of its keys, causal (and
/// windowed): grid (num_query_tiles, num_kv_heads, num_partitions). Writes
/// the partial results decode's merge kernel reads (rows = num_tokens).
mlir::gpu::GPUFuncOp buildPrefillKernel(mlir::OpBuilder &b,
                                        mlir::Location loc,
                                        const AttentionConfig &cfg,
                                        KernelSpec &spec);

/// What a cache-write kernel is compiled for.
struct CacheWriteConfig {
  std::string name;
  int64_t headDim = 128, numKVHeads = 1, blockSize = 16, slotBytes = 136;
  KVFormatAttr kFormat, vFormat;
  CacheLayoutAttr layout;
  /// Element type of the new keys and values.
  mlir::Type inputType;
  /// k_mean / v_mean operands: `[num_kv_heads, head_dim]` f32 channel means
  /// subtracted (f32) before the rotation and coding.
  bool kMean = false, vMean = false;
};

/// Codes one (token, KV head) row of K (z = 0) or V (z = 1) into its slot:
/// grid (num_tokens, num_kv_heads, 2).
mlir::gpu::GPUFuncOp buildCacheWriteKernel(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           const CacheWriteConfig &cfg,
                                           KernelSpec &spec);

/// A `gpu.func` kernel for \p spec at the builder's insertion point (inside
/// a gpu.module); the builder is left at the start of its body.
mlir::gpu::GPUFuncOp createKernel(mlir::OpBuilder &b, mlir::Location loc,
                                  const KernelSpec &spec);

} // namespace uq::wave

#endif // UQ_LIB_CONVERSION_UQTOWAVE_KERNELS_H
