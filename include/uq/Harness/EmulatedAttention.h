//===- EmulatedAttention.h - Compile, emulate, compare ----------*- C++ -*-===//
//
// The end-to-end check of the GPU path: build uq IR for one problem (a cache
// write and a decode attention), compile it to a gfx950 code object, run the
// kernels in the emulator on random data, launching them from the kernel
// JSON alone (argument order, shapes and grids by name), and compare with
// the reference library. Used by uq-demo, the unit tests and the report
// benchmark. A code object compiled with run-time (`?`) sizes serves many
// problems of the same configuration without recompiling.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_HARNESS_EMULATEDATTENTION_H
#define UQ_HARNESS_EMULATEDATTENTION_H

#include "uq/Emulator/Emulator.h"
#include "uq/Emulator/TimingModel.h"
#include "uq/Reference/Reference.h"

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace uq {

/// The KV-cache format of a problem (K and V alike).
enum class KVCacheKind {
  /// FP4 E2M1 + UE8M0 per 32, keys rotated (options below).
  UltraQuant,
  /// OCP FP8 E4M3, scale 1 (vLLM's fp8 cache).
  FP8,
  /// bf16.
  BF16,
};

/// "uq4", "fp8", "bf16".
const char *kvCacheKindName(KVCacheKind k);

/// One decode-attention problem.
struct AttentionProblem {
  int64_t numQHeads = 8;
  int64_t numKVHeads = 1;
  int64_t headDim = 128;
  int64_t blockSize = 16;
  /// Tokens of each sequence (the batch is seqLens.size()).
  std::vector<int32_t> seqLens = {1000};
  bool sinks = false;
  int64_t partitionSize = 256;
  /// uq.decode_attention's partition rule (uq-compile
  /// --max-partition-tokens, --min-partition-tokens, --decode-workgroups).
  int64_t maxPartitionTokens = 2048;
  int64_t minPartitionTokens = 64;
  int64_t decodeWorkgroups = 1024;
  /// Waves per workgroup of the paged-attention prefill kernel
  /// (uq-compile --prefill-waves; paged problems only).
  int64_t prefillWaves = 4;
  /// MFMA rows per prefill wave (uq-compile --prefill-rows; paged problems
  /// only).
  int64_t prefillRows = 16;
  /// The prefill's FP4 value tile converted to bf16 once per workgroup
  /// into LDS (uq-compile --prefill-shared-v; paged problems only).
  bool prefillSharedV = true;
  /// Element type of the query and of the new K/V rows: f32 or bf16.
  std::string dtype = "bf16";
  /// Element type of the attention result: f32, bf16 or f16.
  std::string outType = "f32";
  KVCacheKind format = KVCacheKind::UltraQuant;
  /// The cache in #uq.cache_layout<head_major> ([blocks, KV heads,
  /// block_size, slot], vLLM's LBHNC order) instead of the token-major
  /// vllm_slot layout; the reference writes and reads the same order.
  bool headMajor = false;
  /// Write the cache with the GPU cache-write kernel (and compare its bytes
  /// with the reference's) instead of the reference's cacheWrite.
  bool gpuCacheWrite = true;
  /// Compile with run-time sizes (`?` for sequences, tokens, cache blocks
  /// and block-table width).
  bool dynamicShapes = false;
  uint64_t seed = 1;
  /// Standard deviation of the random K, V and Q values.
  float scale = 1.0f;
  /// UltraQuant options: the constant c of the scale rule (0.156: as
  /// published; 0.196: the measured optimum, docs/accuracy.md), the
  /// mse_search scale rule, values coded rotated (the output is rotated
  /// back).
  double c = 0.156;
  bool mseSearch = false;
  bool vRotated = false;
  /// Value group scales in FP8 E4M3 (`scale = e4m3` on the value format,
  /// docs/accuracy.md's `vs=e4m3`); keys keep UE8M0 (the MFMA's scales).
  bool vScaleE4M3 = false;
  /// Softmax scale; 0 means 1/sqrt(headDim).
  float softmaxScale = 0.0f;
  /// Unused blocks in the cache, unused block-table columns.
  int64_t spareBlocks = 1, spareColumns = 0;
  /// Block-table entries to overwrite after paging: (sequence, column,
  /// block id); ids outside the cache test the input policy (clamped).
  std::vector<std::tuple<int64_t, int64_t, int32_t>> tableOverrides;
  /// Given data instead of random values (each empty = random): the query
  /// [seqs, q heads, D]; keys and values [sum(seqLens), kv heads, D] in
  /// sequence-major token order; sinks [q heads]. With dtype bf16 the values
  /// must be bf16-representable.
  std::vector<float> query, key, value, sinkValues;
  /// The accuracy options (docs/accuracy.md; UltraQuant only): random
  /// per-(KV head, channel) means of standard deviation meanScale are added
  /// to the keys (values), and the cache write subtracts them (k_mean /
  /// v_mean operands of uq.cache_write and uq.decode_attention).
  bool kMean = false, vMean = false;
  float meanScale = 2.0f;
  /// query_precision = fp8_e4m3_scaled: per-32 UE8M0 query scales.
  bool scaledQuery = false;

  /// Adversarial inputs of the input policy (docs/kernel-input-policy.md).
  /// Each one left at its default changes nothing.
  /// Slots appended to the cache write's slot_mapping (after the paging's
  /// slots and its two skipped ones), each with a random K/V row; slots
  /// outside [0, num_blocks * block_size) must be skipped. Valid slots here
  /// must not repeat a paging slot (concurrent writes of one slot race).
  std::vector<int64_t> extraSlots;
  /// seq_lens given to the decode kernels instead of seqLens (which still
  /// decide the paging): negative or above capacity test the clamps.
  std::vector<int32_t> decodeSeqLens;
  /// num_blocks of the decode: the cache is cut to (or extended with
  /// unwritten blocks to) this many blocks; -1 = the paging's. 0 = an
  /// empty cache buffer. Needs dynamicShapes unless equal to the paging's.
  int64_t decodeNumBlocks = -1;
  /// num_partitions of the decode; 0 = the compiler's rule
  /// (uq::decodePartitionCount with maxPartitionTokens, minPartitionTokens
  /// and decodeWorkgroups; any count >= 1 is legal).
  int64_t numPartitions = 0;
  /// With one partition, run the single-pass kernel (decode_0_single, no
  /// merge) as the compiled host code does; false: the partial and merge
  /// kernels with one partition.
  bool singlePass = true;
  /// Workgroups added to every dimension of every launch's grid beyond the
  /// JSON's grid rule (they must do nothing).
  std::array<uint32_t, 3> extraGrid = {0, 0, 0};
  /// Cache bytes overwritten after the cache write, before the decode
  /// (byte offset, value), in the cache every path reads.
  std::vector<std::pair<int64_t, uint8_t>> cacheOverrides;
  /// Also run the program on the CPU: the linalg path (convert-uq-to-linalg,
  /// the executable meaning) and/or the wave-level kernels on the CPU
  /// (uq-cpu-pipeline{wave-kernels=true}); each writes the cache from the
  /// same inputs and decodes the same cache (see AttentionReport::CPURun).
  bool checkLinalgCPU = false, checkWaveCPU = false;
};

/// What the run measured.
struct AttentionReport {
  /// The uq IR that was compiled.
  std::string ir;
  std::string kernelsJson;
  /// Cache bytes that differ from the reference's cacheWrite (0 = bit-exact;
  /// only meaningful with gpuCacheWrite).
  int64_t cacheMismatches = 0;
  int64_t cacheBytes = 0;
  /// Output against the reference (ref::pagedAttention): relative L2 error,
  /// largest absolute error, and the number of elements outside the
  /// per-element bound of ref::attentionErrorBounds (the kernels' rounding
  /// of P: bf16, or FP8 for FP8 values).
  double relL2 = 0, maxAbsError = 0;
  int64_t outsideBound = 0;
  int64_t numOutputs = 0;
  /// The kernels' output [seqs, q heads, D] as floats.
  std::vector<float> output;
  emu::Stats writeStats, queryStats, partialStats, mergeStats;
  int64_t numPartitions = 0;
  /// Outputs that are NaN resp. +-Inf (the GPU's).
  int64_t nanOutputs = 0, infOutputs = 0;

  /// One CPU path's run of the same program (AttentionProblem::
  /// checkLinalgCPU / checkWaveCPU).
  struct CPURun {
    bool ran = false;
    /// Its cache write's bytes that differ from the reference's cacheWrite.
    int64_t cacheMismatches = 0;
    /// Its decode output, and the elements outside the reference's bound
    /// (as outsideBound for the GPU).
    std::vector<float> output;
    int64_t outsideBound = 0;
    double relL2 = 0;
    /// Elements where it and the GPU output differ by more than the bound
    /// (twice the per-element bound: both are within it of the reference),
    /// or differ in NaN-ness or in an infinite value.
    int64_t gpuMismatches = 0;
  };
  CPURun linalgCPU, waveCPU;
};

/// A compiled problem configuration: one code object and its JSON.
class CompiledAttention {
public:
  /// Compiles \p shape's configuration (heads, D, block size, formats,
  /// sinks, types, partition size; sizes from it unless dynamicShapes).
  static llvm::Expected<std::unique_ptr<CompiledAttention>>
  compile(const AttentionProblem &shape);
  ~CompiledAttention();

  /// Runs \p problem, which must have the compiled configuration (and the
  /// compiled sizes, unless compiled with dynamicShapes).
  llvm::Expected<AttentionReport> run(const AttentionProblem &problem) const;

  const std::string &ir() const;
  const std::string &kernelsJson() const;
  const std::string &codeObject() const;

private:
  CompiledAttention();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Compiles and emulates `problem`; errors (compile, emulation, reference)
/// come back as llvm::Error.
llvm::Expected<AttentionReport>
runEmulatedAttention(const AttentionProblem &problem);

/// The uq::ref key and value formats of a problem's cache: its `format`
/// with, for UltraQuant, c, the scale rule, the value rotation and the
/// value scale code.
std::pair<ref::Format, ref::Format>
referenceFormats(const AttentionProblem &problem);

//===----------------------------------------------------------------------===//
// Paged attention (prefill chunks and decodes in one batch)
//===----------------------------------------------------------------------===//

/// One uq.paged_attention problem, always compiled with run-time sizes. The
/// configuration (heads, D, block size, formats and their options, channel
/// means, query precision, sinks, types, partition size, softmax scale,
/// seed) comes from `config`; its seqLens, dynamicShapes, gpuCacheWrite and
/// given data are not used (the reference's cacheWrite writes the cache).
struct PagedAttentionProblem {
  AttentionProblem config;
  /// Per sequence: new query tokens and context tokens (seq_lens, the new
  /// tokens included).
  std::vector<int32_t> queryLens = {16};
  std::vector<int32_t> seqLens = {100};
  /// Tokens written to the cache per sequence (empty: seqLens). Two
  /// problems with the same cachedLens and seed have the same cache and
  /// block tables (a chunked prefill in two calls).
  std::vector<int32_t> cachedLens;
  /// Query tokens before the first sequence and after the last (no
  /// sequence covers them: their output is 0).
  int64_t leadingTokens = 0, trailingTokens = 0;
  /// Sliding window (0: none).
  int64_t window = 0;
  /// Split-K partitions of the prefill launch (0: the compiler's rule,
  /// max(1, ceil(max_blocks * block_size / partition_size))).
  int64_t numPartitions = 0;
  /// Cached tokens drawn at random and quantized by the reference (0: all);
  /// the slots of later tokens repeat those of token i mod distinctTokens
  /// (same bytes at their own addresses). For timing predictions of long
  /// contexts, whose cost does not depend on the values: drawing and
  /// quantizing every token dominated them. Ignored with extra slots or
  /// table overrides.
  int64_t distinctTokens = 0;
  /// Given query [num_tokens, Hq, D] (empty: random; bf16-representable
  /// with dtype bf16).
  std::vector<float> query;
};

struct PagedAttentionReport {
  std::string kernelsJson;
  int64_t numTokens = 0, numPartitions = 0, numQueryTiles = 0;
  /// Against ref::pagedAttention with ref::attentionErrorBounds' bound (as
  /// AttentionReport).
  double relL2 = 0, maxAbsError = 0;
  int64_t outsideBound = 0, numOutputs = 0;
  std::vector<float> output;
  emu::Stats queryStats, prefillStats, mergeStats;
};

/// How CompiledPagedAttention::predict traces each launch.
struct PagedPredictOptions {
  /// Traced workgroups per launch (at least 1). The prefill launch's are
  /// the midpoints of equal strata of its workgroups that have keys, in
  /// order of their key count, spread over the KV heads, each standing for
  /// its stratum times the KV heads; one workgroup with query tokens but no
  /// keys stands for those, and one without tokens for those (when the grid
  /// has any). The query and merge launches', the
  /// midpoints of equal strata of their rows, spread over the heads.
  unsigned samples = 4;
  /// Trace every workgroup of every launch (weights 1) and compare the
  /// output with the reference (PagedAttentionTiming::checked): the whole
  /// emulation that a sampled prediction is checked against.
  bool whole = false;
  /// Given linear indices (x fastest) of the prefill workgroups to trace,
  /// each standing for an equal share of the grid, instead of the
  /// stratified choice (for tests of the no-work check).
  std::vector<uint64_t> prefillWorkgroups;
};

/// The timing model's prediction of one paged-attention call
/// (docs/timing-model.md): every launch from a few sampled workgroups.
struct PagedAttentionTiming {
  /// The prefill launch's estimate (per-resource cycles, occupancy).
  emu::LaunchEstimate prefill;
  /// The traced prefill workgroups' ids and the workgroups each stands for.
  std::vector<std::array<uint32_t, 3>> prefillTraced;
  std::vector<double> prefillWeights;
  /// Prefill workgroups with keys (host-side, from the grid rule) of all.
  uint64_t prefillWorking = 0, prefillWorkgroups = 0;
  /// The traced prefill workgroups' instructions by class, and their
  /// (wave, 32-key tile) pairs: waves x the tiles of keys each sees.
  emu::Stats prefillStats;
  double prefillWaveTiles = 0;
  /// With PagedPredictOptions::whole: the output against the reference, as
  /// PagedAttentionReport.
  bool checked = false;
  double relL2 = 0, maxAbsError = 0;
  int64_t outsideBound = 0, numOutputs = 0;
  /// Per launch (query, prefill, merge): the model's estimate and bound.
  std::vector<std::string> launchText;
  double queryUs = 0, prefillUs = 0, mergeUs = 0, totalUs = 0;
  double prefillBoundUs = 0;
  std::string prefillBoundResource;
  /// The prefill launch's matrix-core time on its busiest CU (the
  /// MFMA-bound time of the launch).
  double prefillMfmaUs = 0;
  /// MFMA instructions of the prefill launch by kind (whole launch,
  /// extrapolated from the samples).
  std::vector<std::pair<std::string, double>> mfmaByKind;
  double emulatedSeconds = 0;
};

/// A compiled paged-attention configuration.
class CompiledPagedAttention {
public:
  static llvm::Expected<std::unique_ptr<CompiledPagedAttention>>
  compile(const PagedAttentionProblem &shape);
  ~CompiledPagedAttention();

  /// Runs every workgroup and compares with the reference.
  llvm::Expected<PagedAttentionReport>
  run(const PagedAttentionProblem &problem) const;
  /// Runs the workgroups PagedPredictOptions chooses of each launch with
  /// the timing recorder and predicts the call. A prefill launch whose
  /// traced workgroups did no matrix work while the grid has workgroups with
  /// keys, or a traced workgroup with keys that did none, is an error.
  llvm::Expected<PagedAttentionTiming>
  predict(const PagedAttentionProblem &problem,
          const PagedPredictOptions &options) const;
  llvm::Expected<PagedAttentionTiming>
  predict(const PagedAttentionProblem &problem, unsigned samples) const {
    PagedPredictOptions o;
    o.samples = samples;
    return predict(problem, o);
  }

  const std::string &ir() const;
  const std::string &kernelsJson() const;

private:
  CompiledPagedAttention();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Compiles and emulates a paged-attention problem.
llvm::Expected<PagedAttentionReport>
runEmulatedPagedAttention(const PagedAttentionProblem &problem);

} // namespace uq

#endif // UQ_HARNESS_EMULATEDATTENTION_H
