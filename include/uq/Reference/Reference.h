//===- Reference.h - Bit-exact UltraQuant reference numerics ----*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The bit-exact reference numerics of the UltraQuant 4-bit KV-cache format
/// (docs/ultraquant-format.md in the shared data): element codes (FP4 E2M1,
/// OCP FP8 E4M3FN, BF16), UE8M0 group scales, the normalised Walsh-Hadamard
/// key rotation, row encode/decode, the vLLM-compatible paged cache write and
/// scalar decode and paged (prefill + decode) attention references.
///
/// This library is plain C++17 with no LLVM/MLIR dependency so that the
/// emulator, the Python bindings and the MLIR CPU lowering tests can all use
/// it as ground truth. Everything here is single-threaded and deterministic.
///
/// Error style: scalar conversions are total functions (every input has a
/// defined result). Functions that take sizes, geometries or indices return a
/// `uq::ref::Status`; on failure they write nothing to their outputs (inputs
/// are validated before any output byte is touched) and the status carries a
/// message. They never crash on bad slots, block ids or sizes.
///
//===----------------------------------------------------------------------===//

#ifndef UQ_REFERENCE_REFERENCE_H
#define UQ_REFERENCE_REFERENCE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace uq {
namespace ref {

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

/// Result of a function that can reject its arguments. Default-constructed
/// (or `Status::success()`) means success; `Status::error(msg)` carries a
/// human-readable reason.
class Status {
public:
  /// Success.
  Status() = default;
  /// A successful status.
  static Status success() { return Status(); }
  /// A failed status with message \p msg.
  static Status error(std::string msg) {
    Status s;
    s.failed = true;
    s.msg = std::move(msg);
    return s;
  }
  /// True on success.
  bool ok() const { return !failed; }
  /// The failure message (empty on success).
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

//===----------------------------------------------------------------------===//
// Scalar element codes
//===----------------------------------------------------------------------===//

/// Rounding rule for FP4 encoding.
enum class Rounding {
  /// vLLM's rule (format doc): nearest level; on an exact midpoint take the
  /// lower (more negative) level. +0.25 -> 0, -0.25 -> -0.5, 2.5 -> 2.
  TiesDown,
  /// IEEE round-to-nearest, ties to the level with an even mantissa bit.
  NearestEven,
};

/// What an FP8 E4M3 encode does with a finite value above the largest finite
/// magnitude (448) after rounding.
enum class Fp8Overflow {
  /// Produce NaN (0x7f / 0xff), as a plain `.to(torch.float8_e4m3fn)` does in
  /// the vLLM reference.
  NaN,
  /// Clamp to +-448.
  Saturate,
};

/// The element encoding of a KV row.
enum class ElementCode {
  /// 4-bit E2M1 codes, two per byte, with one UE8M0 scale byte per group.
  FP4_E2M1,
  /// One OCP E4M3FN byte per element, no scale bytes (scale 1).
  FP8_E4M3,
  /// One little-endian bf16 per element (2 bytes), no scale bytes.
  BF16,
};

/// Decodes the low 4 bits of \p code as FP4 E2M1: 0..7 = 0, 0.5, 1, 1.5, 2, 3,
/// 4, 6 and 8..15 the same magnitudes negated (code 8 is -0.0f).
float fp4Decode(uint8_t code);

/// Encodes \p x (already divided by the group scale) to a 4-bit FP4 code in
/// the low nibble. Magnitudes above 6 saturate to +-6; NaN encodes as 0.
/// With TiesDown, zero (either sign) and anything in (-0.25, 0.25] give code
/// 0, never 8. With NearestEven, values that round to zero give code 0 as
/// well (the sign of zero is never stored).
uint8_t fp4Encode(float x, Rounding r = Rounding::TiesDown);

/// Decodes a UE8M0 byte: 2^(b-127); 255 decodes to NaN. Byte 0 decodes to
/// 2^-127 (the OCP MX meaning); the format's zero sentinel is carried by the
/// codes being 0, not by this value.
float e8m0Decode(uint8_t b);

/// The UE8M0 scale byte of a group with maximum magnitude \p absmax:
/// e = floor(log2(c * absmax) + 0.5) clamped to [-126, 127], byte = e + 127.
/// Returns the sentinel 0 when absmax == 0 or absmax is not finite.
/// s = c * absmax is formed in float32 (float(c) * absmax, rounded to nearest
/// even, as a float32 tensor times a Python scalar does in the vLLM
/// reference); the rounding of log2(s) is then decided exactly: e = E + 1
/// when the significand of s (s = 1.f * 2^E) is >= sqrt(2), i.e. when its 23
/// mantissa bits are >= 0x3504F4, else e = E. A zero s (underflow) gives -126.
/// See docs/reference-numerics.md.
uint8_t ue8m0ScaleByte(float absmax, double c = 0.156);

/// The E4M3 scale byte of an FP4 group with maximum magnitude \p absmax
/// (ScaleCode::E4M3): s = float(c) * absmax in float32 (RNE), clamped to
/// 448, rounded to E4M3FN (RNE, subnormals); a positive s that rounds to 0
/// takes byte 1 (2^-9, the smallest subnormal) so the group stays coded.
/// Returns the zero sentinel 0 when absmax == 0 or is not finite.
uint8_t e4m3ScaleByte(float absmax, double c = 1.0 / 6.0);

/// Decodes an OCP FP8 E4M3FN byte (bias 7, no infinities; 0x7f and 0xff are
/// NaN; max finite 448).
float fp8e4m3Decode(uint8_t b);

/// Encodes \p x to OCP FP8 E4M3FN with round-to-nearest-even (subnormals
/// included). NaN -> 0x7f (sign kept: 0xff for negative NaN); +-Inf and
/// finite values that round above 448 -> NaN or +-448 depending on \p mode.
uint8_t fp8e4m3Encode(float x, Fp8Overflow mode = Fp8Overflow::NaN);

/// Widens a bf16 bit pattern to float (exact).
float bf16ToFloat(uint16_t bits);

/// Rounds \p x to bf16 with round-to-nearest-even; NaN stays a (quiet) NaN
/// with its sign, infinities stay infinities.
uint16_t floatToBf16(float x);

//===----------------------------------------------------------------------===//
// Rotation
//===----------------------------------------------------------------------===//

/// How the rotation is evaluated. Both compute H_d / sqrt(d) with the
/// Sylvester butterfly (stages of span 1, 2, ..., d/2; (a, b) -> (a + b,
/// a - b)); they differ only in rounding.
enum class RotationArithmetic {
  /// Unnormalised butterfly in double, one multiply by 1/sqrt(d) in double,
  /// one rounding to float per element: close to the exact product, and
  /// independent of any GEMM blocking. The default; reproduces every golden
  /// encode_k_* byte (docs/reference-numerics.md).
  ExactF64,
  /// float32 butterfly with the normalisation in every stage,
  /// (a + b) / sqrt(2) and (a - b) / sqrt(2) rounded to float each time
  /// (the shape of vLLM's Triton store kernel), for kernels that want to be
  /// bit-exact with such a butterfly.
  ButterflyF32,
};

/// Multiplies \p row (length \p d) in place by the normalised Sylvester
/// Walsh-Hadamard matrix H_d / sqrt(d) (symmetric, so row @ H^T == H @ row).
/// Fails, leaving the row untouched, unless \p d is a power of two >= 1.
Status hadamardRotate(float *row, int64_t d,
                      RotationArithmetic a = RotationArithmetic::ExactF64);

//===----------------------------------------------------------------------===//
// Row encode / decode
//===----------------------------------------------------------------------===//

/// A KV row encoding. The defaults are the vLLM `ultraquant_4bit` value
/// format; keys use the same with `rotate = true`.
/// How the exponent of an FP4 group's UE8M0 scale is chosen.
enum class ScaleRule {
  /// e = floor(log2(c * absmax) + 0.5), clamped to [-126, 127] (UltraQuant);
  /// with E4M3 scales the byte e4m3ScaleByte(absmax, c).
  LogRound,
  /// Among e0 - 1, e0, e0 + 1 (e0 from LogRound, each clamped), the exponent
  /// whose codes have the least squared error over the group, ties to the
  /// earlier (smaller) candidate; with E4M3 scales the bytes b0 - 1, b0,
  /// b0 + 1 clamped to [1, 126] (neighbouring E4M3 values). The error of a group is the sum of
  /// (decoded - x)^2 over its elements in double, each term the square of
  /// an exact double difference, summed as a perfect binary tree in element
  /// order ((t0 + t1) + (t2 + t3)) + ...: a fixed order a GPU can reproduce.
  MseSearch,
};

/// How the one scale byte of an FP4 group is coded.
enum class ScaleCode {
  /// UE8M0: a power of two 2^(byte-127) (UltraQuant; the scaled-MFMA
  /// operand).
  UE8M0,
  /// OCP FP8 E4M3FN: a 4-significant-bit scale (the NVFP4 idea, without its
  /// tensor scale). Same 1 byte per group, finer steps: for values that a
  /// kernel reads after conversion (or folds into the softmax weights, V).
  /// The group is coded as fp4(x / S), S = fp8e4m3Decode(byte), a correctly
  /// rounded float division; decoding is fp4Decode(code) * S (exact).
  E4M3,
};

struct Format {
  ElementCode code = ElementCode::FP4_E2M1;
  /// Channels per scale (FP4 only); must divide the head dim.
  int groupSize = 32;
  /// The code of the FP4 group scales.
  ScaleCode scaleCode = ScaleCode::UE8M0;
  /// The scale constant c of s = c * absmax (FP4 only); E4M3 scales want
  /// c = 1/6 (absmax onto the largest FP4 level).
  double c = 0.156;
  /// Rotate by H_D / sqrt(D) before encoding (keys).
  bool rotate = false;
  /// FP4 rounding rule.
  Rounding rounding = Rounding::TiesDown;
  /// FP4 scale exponent rule.
  ScaleRule scaleRule = ScaleRule::LogRound;
  /// FP8 overflow rule (FP8_E4M3 rows).
  Fp8Overflow fp8Overflow = Fp8Overflow::NaN;
  /// Rotation arithmetic (when rotate is set); also used for the query.
  RotationArithmetic rotation = RotationArithmetic::ExactF64;
};

/// The vLLM-compatible key format (FP4, c = 0.156, rotated).
inline Format keyFormat() {
  Format f;
  f.rotate = true;
  return f;
}

/// The vLLM-compatible value format (FP4, c = 0.156, not rotated).
inline Format valueFormat() { return Format(); }

/// Checks that \p f can encode rows of \p d elements (d > 0; FP4: groupSize
/// > 0, even, and divides d; rotate: d a power of two; c a finite,
/// positive, normal f32 value, i.e. in [2^-126, FLT_MAX]).
Status validateFormat(const Format &f, int64_t d);

/// Bytes of element codes for one row of \p d elements (FP4: d/2, FP8: d,
/// BF16: 2d). Returns -1 if validateFormat fails.
int64_t codeBytes(const Format &f, int64_t d);

/// Bytes of scales for one row of \p d elements (FP4: d/groupSize, others 0).
/// Returns -1 if validateFormat fails.
int64_t scaleBytes(const Format &f, int64_t d);

/// Encodes one row \p x of \p d floats (rotating a copy first if f.rotate)
/// into \p codes (codeBytes) and \p scales (scaleBytes; may be null when
/// that is 0). FP4 packing: element 2i in the low nibble of byte i.
Status encodeRow(const Format &f, const float *x, int64_t d, uint8_t *codes,
                 uint8_t *scales);

/// Decodes one row into \p out (d floats). The result is in the coded
/// domain: for a rotated format it is the rotated row (no inverse rotation).
Status decodeRow(const Format &f, const uint8_t *codes, const uint8_t *scales,
                 int64_t d, float *out);

//===----------------------------------------------------------------------===//
// Paged cache (vLLM layout)
//===----------------------------------------------------------------------===//

/// Geometry of a vLLM-layout cache: uint8 [numBlocks, blockSize, numKvHeads,
/// slotBytes], contiguous, one slot per (token, kv head) holding
/// [K codes][K scales][V codes][V scales] from byte 0 (any padding after).
struct CacheGeometry {
  int64_t numBlocks;
  int64_t blockSize;
  int64_t numKvHeads;
  int64_t headDim;
  int64_t slotBytes;
  /// Physical order of a block: false (vLLM's default, token-major)
  /// `[num_blocks, block_size, num_kv_heads, slot]`; true (head-major, vLLM's
  /// LBHNC order) `[num_blocks, num_kv_heads, block_size, slot]`, where the
  /// block_size slots of one head are contiguous.
  bool headMajor = false;
};

/// The unpadded slot size for key format \p kf and value format \p vf at
/// head dim \p d (136 for FP4 K and V at d = 128), or -1 if either format is
/// invalid for d.
int64_t slotBytes(const Format &kf, const Format &vf, int64_t d);

/// Total cache bytes numBlocks * blockSize * numKvHeads * slotBytes.
int64_t cacheBytes(const CacheGeometry &g);

/// Checks that \p g is positive everywhere and slotBytes is large enough for
/// \p kf and \p vf at g.headDim.
Status validateGeometry(const Format &kf, const Format &vf,
                        const CacheGeometry &g);

/// Encodes keys \p k and values \p v (both [numTokens, numKvHeads, headDim]
/// floats, contiguous) into \p cache at slot_mapping[t] =
/// block * blockSize + offset. A negative slot skips the token (its bytes
/// stay untouched); padding bytes of a slot are never written. A slot >=
/// numBlocks * blockSize is an error: then nothing is written.
/// Optional channel means \p kMean / \p vMean ([numKvHeads, headDim]): the
/// row coded for (t, h) is k[t, h, :] - kMean[h, :] (float subtraction,
/// before the format's rotation), likewise for V (uq.cache_write's k_mean /
/// v_mean).
Status cacheWrite(const Format &kf, const Format &vf, const CacheGeometry &g,
                  const float *k, const float *v, const int64_t *slotMapping,
                  int64_t numTokens, uint8_t *cache,
                  const float *kMean = nullptr, const float *vMean = nullptr);

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

/// Precision the rotated query is rounded to before the QK product.
enum class QueryPrecision {
  /// OCP E4M3FN with scale 1, NaN on overflow (the vLLM reference).
  FP8_E4M3,
  /// Keep the rotated query in float.
  F32,
  /// OCP E4M3FN with one power-of-two scale per 32 channels (the scaled
  /// MFMA's A-scale operand, UE8M0): each group is coded as
  /// fp8(q / 2^e) * 2^e with e = fp8BlockExponent(group absmax), so no
  /// finite query overflows to NaN.
  FP8_E4M3_Scaled,
};

/// The exponent of a per-32 query scale: the smallest e with
/// absmax / 2^e <= 448, clamped to [-127, 127]; 0 for a zero or non-finite
/// absmax (scale 1: a non-finite element stays NaN, as with scale 1).
/// Decided exactly on frexp: absmax = f * 2^E, f in [0.5, 1): e = E - 9,
/// plus 1 when f > 0.875.
int fp8BlockExponent(float absmax);

/// Parameters of decodeAttention.
struct AttentionParams {
  /// Multiplier of q . k (usually 1/sqrt(D)).
  float softmaxScale;
  QueryPrecision queryPrecision = QueryPrecision::FP8_E4M3;
  /// Accumulate dot products, softmax sums and the PV product in double
  /// (rounded to float at the end) instead of float.
  bool accumulateF64 = false;
  /// Channel means ([numKvHeads, headDim], or null) that cacheWrite
  /// subtracted: added back to every decoded key / value row of the KV head,
  /// in the row's coded domain (rotated like the format, with its
  /// RotationArithmetic) by one float addition per element.
  const float *kMean = nullptr;
  const float *vMean = nullptr;
};

/// Reference single-token decode attention over the paged cache \p cache
/// (written by cacheWrite with the same formats and geometry).
///
/// For sequence s and query head h (kv head h / (numQHeads / numKvHeads)):
///   q' = rotate(q[s,h]) if kf.rotate, then rounded per queryPrecision;
///   logit_j = (q' . decodeRow(K_j)) * softmaxScale for j < seqLens[s],
///     token j at block blockTables[s, j / blockSize], offset j % blockSize;
///   with sinks, one extra logit sinks[h] that has no value row;
///   out[s,h] = sum_j softmax(logits)_j * decodeRow(V_j), rotated back by
///     H_D / sqrt(D) when vf.rotate (decodeRow gives the rotated domain).
/// The exact arithmetic order is in docs/reference-numerics.md. q and out are
/// [numSeqs, numQHeads, headDim] floats. seqLens[s] == 0 gives zeros (or,
/// with a sink, zeros as well since the sink has no value). Errors (nothing
/// written): numQHeads not a multiple of numKvHeads, a seq len < 0 or above
/// maxBlocks * blockSize, a used block id outside [0, numBlocks).
Status decodeAttention(const Format &kf, const Format &vf,
                       const CacheGeometry &g, const uint8_t *cache,
                       const AttentionParams &p,
                       const float *q, int64_t numSeqs, int64_t numQHeads,
                       const int32_t *blockTables, int64_t maxBlocks,
                       const int32_t *seqLens, const float *sinks, float *out);

//===----------------------------------------------------------------------===//
// Paged attention (prefill chunks and decodes in one batch)
//===----------------------------------------------------------------------===//

/// The keys one query token sees: positions [first, first + count) of its
/// sequence (count == 0: none).
struct KeyRange {
  int64_t first;
  int64_t count;
};

/// The sanitised bounds of a paged-attention batch, as pagedAttention reads
/// them (docs/dialect.md, "Input policy"): sequence s owns the query tokens
/// [tokenBegin(s), tokenBegin(s + 1)) where tokenBegin(s) is the running
/// maximum of queryStartLoc[0..s] clamped to [0, numTokens], and has
/// seqLen(s) = seqLens[s] clamped to [0, capacity] context tokens
/// (capacity = maxBlocks * blockSize, or 0 when the cache has no blocks).
/// Query token i (0-based within its sequence, query length q) sits at
/// position p = seqLen - q + i and sees the keys max(0, p - window + 1)..p
/// (0..p without a window); none when p < 0.
class PagedBatch {
public:
  /// \p queryStartLoc has numSeqs + 1 entries, \p seqLens numSeqs. \p window
  /// is the sliding window in tokens, 0 for none.
  PagedBatch(const int32_t *queryStartLoc, const int32_t *seqLens,
             int64_t numSeqs, int64_t numTokens, int64_t capacity,
             int64_t window);
  int64_t numSeqs() const { return static_cast<int64_t>(seqLen_.size()); }
  int64_t tokenBegin(int64_t s) const { return begin_[s]; }
  int64_t tokenEnd(int64_t s) const { return begin_[s + 1]; }
  int64_t seqLen(int64_t s) const { return seqLen_[s]; }
  /// The keys seen by query token \p i (0-based within sequence \p s).
  KeyRange keys(int64_t s, int64_t i) const;

private:
  std::vector<int64_t> begin_, seqLen_;
  int64_t window_;
};

/// Reference attention over the paged cache for a batch that mixes prefill
/// chunks and decodes (vLLM's unified-attention inputs): queries \p q
/// [numTokens, numQHeads, headDim] floats, sequence s owning the query
/// tokens queryStartLoc[s]..queryStartLoc[s+1]-1 and having seqLens[s]
/// context tokens in the cache (its new tokens included: write them with
/// cacheWrite first), block table row blockTables[s * maxBlocks ...].
///
/// Query token i of a sequence with query length q and context L attends
/// causally to the keys max(0, L - q + i - window + 1) .. L - q + i (from 0
/// without a window; \p window = 0 means none). Each (token, head) is
/// computed exactly as decodeAttention computes a sequence whose keys are
/// that range: same query rotation and rounding, same decoded rows, same
/// summation order, so a batch of query length 1 everywhere gives
/// bit-identical results to decodeAttention.
///
/// Index inputs are never an error (the policy of docs/dialect.md): the
/// batch bounds are sanitised as PagedBatch says, block ids read from the
/// table are clamped to [0, numBlocks - 1], a token that sees no key and a
/// token no sequence covers give zeros; NaN/Inf in q or sinks propagate
/// through the IEEE arithmetic. g.numBlocks may be 0 (then no key is seen and
/// \p cache may be null). Errors (nothing written): an invalid format or
/// geometry, numQHeads not a positive multiple of numKvHeads, a negative
/// size or window, a null buffer that is needed.
Status pagedAttention(const Format &kf, const Format &vf,
                      const CacheGeometry &g, const uint8_t *cache,
                      const AttentionParams &p, int64_t window, const float *q,
                      int64_t numTokens, int64_t numQHeads,
                      const int32_t *queryStartLoc, int64_t numSeqs,
                      const int32_t *blockTables, int64_t maxBlocks,
                      const int32_t *seqLens, const float *sinks, float *out);

/// Per-element error bounds of a kernel that computes pagedAttention (same
/// arguments and index policy; pass queryStartLoc = [0, 1, ..., numSeqs]
/// for decode) but rounds every softmax probability with a relative error of
/// at most \p pError before the PV product (bf16 P: 2^-9, FP8 E4M3 P: 2^-4;
/// callers add room for an approximate exp) and accumulates in f32 in
/// another order: for output element i of a (token, head),
///   bound_i = (pError + 1e-5) * sum_t w_t |v_t,i| / (sum_t w_t + w_sink)
///             + 1e-6,
/// with w the reference's softmax weights (computed in double). With a
/// rotated value format the output is rotated back by H / sqrt(D), which
/// mixes the dims: each is bounded by sum_i b_i / sqrt(D) (+ 1e-6). Elements
/// the reference gives as 0 because nothing is attended get 1e-6. Writes
/// numTokens * numQHeads * headDim doubles to \p bounds.
Status attentionErrorBounds(const Format &kf, const Format &vf,
                            const CacheGeometry &g, const uint8_t *cache,
                            const AttentionParams &p, int64_t window,
                            const float *q, int64_t numTokens,
                            int64_t numQHeads, const int32_t *queryStartLoc,
                            int64_t numSeqs, const int32_t *blockTables,
                            int64_t maxBlocks, const int32_t *seqLens,
                            const float *sinks, double pError,
                            double *bounds);

} // namespace ref
} // namespace uq

#endif // UQ_REFERENCE_REFERENCE_H
