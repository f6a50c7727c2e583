//===- Kernels.h - gfx950 kernel templates for uq ops -----------*- C++ -*-===//
//
// The distribution stage of the GPU path: each function returns the text of
// one `gpu.func` (per-lane code with amdgpu/rocdl ops) for fixed problem
// sizes. This is the only place that knows the MFMA register layouts of
// shared/docs/gfx950-notes.md; docs/gpu-kernels.md explains each kernel.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CONVERSION_UQTOGPU_KERNELS_H
#define UQ_CONVERSION_UQTOGPU_KERNELS_H

#include <cstdint>
#include <string>

namespace uq::kernels {

/// Sizes of a decode-attention partition kernel (all static).
struct DecodeKernelParams {
  std::string name;
  int64_t numSeqs, numQHeads, numKVHeads, headDim;
  int64_t numBlocks, blockSize, slotBytes, maxBlocks;
  int64_t partitionSize, numPartitions;
  /// Element type of the query: "f32", "bf16" or "f16".
  std::string queryType;
  double softmaxScale;
};

/// `uq.decode_attention_partial` for the UltraQuant format: grid
/// (partitions, KV heads, sequences), one wave per workgroup; QK^T on
/// v_mfma_scale_f32_16x16x128_f8f6f4 (FP8 query x FP4 keys, key scales as the
/// B scale operand), online softmax in f32, P.V on v_mfma_f32_16x16x32_bf16
/// with V converted by v_cvt_scalef32_pk_bf16_fp4.
std::string decodePartialKernel(const DecodeKernelParams &p);

/// Sizes of the split-K merge kernel.
struct MergeKernelParams {
  std::string name;
  int64_t numSeqs, numQHeads, numPartitions, headDim;
  bool hasSinks;
  /// Element type of the result: "f32", "bf16" or "f16".
  std::string resultType;
  /// Rotate the merged rows back by H_D / sqrt(D) (values coded rotated).
  bool rotateOutput = false;
};

/// `uq.merge_partitions`: grid (query heads, sequences), one wave per
/// (sequence, head), lanes over head_dim.
std::string mergeKernel(const MergeKernelParams &p);

/// Sizes of the cache-write kernel.
struct CacheWriteKernelParams {
  std::string name;
  int64_t numTokens, numKVHeads, headDim;
  int64_t numBlocks, blockSize, slotBytes;
  /// Element type of K and V: "f32", "bf16" or "f16".
  std::string inputType;
  double kC, vC;
  bool rotateK, rotateV;
  /// The mse_search scale rule (per-group exponent search) for K / V.
  bool searchK = false, searchV = false;
};

/// `uq.cache_write` in the UltraQuant format: grid (tokens, KV heads, 2)
/// (z = 0 writes K, z = 1 writes V), one wave per row; Walsh-Hadamard
/// butterfly across lanes in f64 (bit-exact with the reference's ExactF64
/// rotation), group absmax by cross-lane reduction, the format's exact scale
/// rule and ties-down FP4 rounding.
std::string cacheWriteKernel(const CacheWriteKernelParams &p);

} // namespace uq::kernels

#endif // UQ_CONVERSION_UQTOGPU_KERNELS_H
