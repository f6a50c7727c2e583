//===- UQOps.td - Operations of the uq dialect -------------*- tablegen -*-===//

#ifndef UQ_DIALECT_UQ_IR_UQOPS_TD
#define UQ_DIALECT_UQ_IR_UQOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "uq/Dialect/UQ/IR/UQDialect.td"
include "uq/Dialect/UQ/IR/UQAttrs.td"

def UQ_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def UQ_ByteTensor : RankedTensorOf<[I8]>;
// uq.rotate also takes whole-wave tiles (vectors) in the wave-level stage of
// the GPU path, where the f64 butterfly keeps the rotation exact.
def UQ_RotateOperand : AnyTypeOf<[UQ_FloatTensor, VectorOfAnyRankOf<[F32, F64]>]>;

//===----------------------------------------------------------------------===//
// uq.rotate
//===----------------------------------------------------------------------===//

def UQ_RotateOp : UQ_Op<"rotate", [Pure, SameOperandsAndResultType]> {
  let summary = "Normalised Walsh-Hadamard rotation along the last dimension";
  let description = [{
    Multiplies every row (the last dimension, of static power-of-two size `D`)
    by the normalised Sylvester Walsh-Hadamard matrix `H_D / sqrt(D)`:
    `result = input @ H^T / sqrt(D)`. The matrix is symmetric and orthonormal,
    so the op is its own inverse. Keys are rotated before quantization and
    queries with the same matrix at decode time, which leaves `q . k`
    unchanged.

    ```mlir
    %r = uq.rotate %k : tensor<16x128xf32>
    ```

    On a vector (a wave-level tile, f32 or f64) the rotation is the
    Sylvester butterfly in the operand's type with one multiply by
    `1/sqrt(D)` at the end; in f64 on values of f32 origin it is exact
    before that multiply (the reference's `ExactF64` rotation).
  }];
  let arguments = (ins UQ_RotateOperand:$input);
  let results = (outs UQ_RotateOperand:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// uq.quantize / uq.dequantize
//===----------------------------------------------------------------------===//

def UQ_QuantizeOp : UQ_Op<"quantize", [Pure]> {
  let summary = "Code rows of values in a KV format (codes + scale bytes)";
  let description = [{
    Codes every row (last dimension `D`) of `input` in `format`: the format's
    rotation is applied first, then each group of `group` consecutive
    elements gets one scale byte and one code per element.

    For `fp4_e2m1` the codes are packed two per byte (element `2i` in the low
    nibble of byte `i`): `codes` has last dimension `D/2` and `scales`
    `D/group`. For `fp8_e4m3` `codes` has last dimension `D` (one E4M3 byte
    per element, scale 1) and there is no `scales` result; `bf16` codes are a
    `bf16` tensor of the same shape. Leading dimensions are kept.

    ```mlir
    %codes, %scales = uq.quantize %k
        {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>} : tensor<4x128xbf16> -> tensor<4x64xi8>, tensor<4x4xi8>
    %c8 = uq.quantize %v {format = #uq.kv_format<fp8_e4m3>} : tensor<4x128xf32> -> tensor<4x128xi8>
    ```
  }];
  let arguments = (ins UQ_FloatTensor:$input, UQ_KVFormatAttr:$format);
  let results = (outs RankedTensorOf<[I8, BF16]>:$codes,
                      Optional<UQ_ByteTensor>:$scales);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type(results)
  }];
  let hasVerifier = 1;
}

def UQ_DequantizeOp : UQ_Op<"dequantize", [Pure]> {
  let summary = "Decode codes (and scale bytes) of a KV format to floats";
  let description = [{
    The inverse of the coding step of `uq.quantize`: `value(code) * 2^(scale
    byte - 127)` per group, with scale byte 0 meaning "this group is zero".
    The result is in the coded domain: rows of a rotated format stay rotated
    (apply `uq.rotate` to go back).

    ```mlir
    %k = uq.dequantize %codes, %scales
        {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>} : tensor<4x64xi8>, tensor<4x4xi8> -> tensor<4x128xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, BF16]>:$codes,
                       Optional<UQ_ByteTensor>:$scales,
                       UQ_KVFormatAttr:$format);
  let results = (outs UQ_FloatTensor:$result);
  let assemblyFormat = [{
    $codes (`,` $scales^)? attr-dict `:` type(operands)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// uq.cache_write
//===----------------------------------------------------------------------===//

def UQ_CacheWriteOp : UQ_Op<"cache_write",
    [Pure, AllTypesMatch<["cache", "result"]>, AttrSizedOperandSegments]> {
  let summary = "Quantize K and V and write them into the paged cache";
  let description = [{
    For every token `t` with `slot_mapping[t] >= 0`, codes `key[t, h, :]` in
    `k_format` and `value[t, h, :]` in `v_format` and stores them in the slot
    `(slot / block_size, slot % block_size, h)` of `cache` laid out as
    `layout` says. Tokens with a negative slot are skipped; every other byte
    of the cache is kept. The result is the updated cache (destination
    passing style: `cache` is the initial value).

    Shapes: `key`, `value`: `[T, Hkv, D]`; `slot_mapping`: `[T]` `i64`;
    `cache`: `[num_blocks, block_size, Hkv, slot_bytes]` `i8`.

    Optional channel means (`[Hkv, D]` `f32`, the accuracy study's `kmean` /
    `vmean`): with `k_mean`, row `(t, h)` of the keys is coded as
    `f32(key[t, h, :]) - k_mean[h, :]` (an f32 subtraction, before the
    format's rotation); `v_mean` likewise for the values. The attention ops
    add the same means back (their `k_mean` / `v_mean` operands).

    ```mlir
    %c = uq.cache_write %k, %v, %slots into %cache
        {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
         v_format = #uq.kv_format<fp4_e2m1>,
         layout = #uq.cache_layout<vllm_slot>}
        : tensor<3x8x128xbf16>, tensor<3x8x128xbf16>, tensor<3xi64>
          into tensor<64x16x8x136xi8>
    ```
  }];
  let arguments = (ins UQ_FloatTensor:$key, UQ_FloatTensor:$value,
                       RankedTensorOf<[I64]>:$slot_mapping,
                       UQ_ByteTensor:$cache,
                       Optional<RankedTensorOf<[F32]>>:$k_mean,
                       Optional<RankedTensorOf<[F32]>>:$v_mean,
                       UQ_KVFormatAttr:$k_format, UQ_KVFormatAttr:$v_format,
                       UQ_CacheLayoutAttr:$layout);
  let results = (outs UQ_ByteTensor:$result);
  let assemblyFormat = [{
    $key `,` $value `,` $slot_mapping `into` $cache
    (`k_mean` $k_mean^ `:` type($k_mean))? (`v_mean` $v_mean^ `:` type($v_mean))?
    attr-dict
    `:` type($key) `,` type($value) `,` type($slot_mapping) `into` type($cache)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getCacheType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getCache().getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

class UQ_AttentionOpBase<string mnemonic, list<Trait> traits = []>
    : UQ_Op<mnemonic, !listconcat(traits, [Pure])> {
  code commonExtraClassDeclaration = [{
    ::mlir::RankedTensorType getQueryType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getQuery().getType());
    }
    ::mlir::RankedTensorType getCacheType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getCache().getType());
    }
    int64_t getNumSeqs() { return getQueryType().getDimSize(0); }
    int64_t getNumQueryHeads() { return getQueryType().getDimSize(1); }
    int64_t getHeadDim() { return getQueryType().getDimSize(2); }
    int64_t getBlockSize() {
      return getCacheType().getDimSize(getLayout().getBlockSizeDim());
    }
    int64_t getNumKVHeads() {
      return getCacheType().getDimSize(getLayout().getKVHeadsDim());
    }
    int64_t getMaxBlocksPerSeq() {
      return ::llvm::cast<::mlir::RankedTensorType>(getBlockTables().getType())
          .getDimSize(1);
    }
    /// Query heads per KV head (the GQA ratio).
    int64_t getGroupSize() { return getNumQueryHeads() / getNumKVHeads(); }
  }];
}

def UQ_DecodeAttentionOp
    : UQ_AttentionOpBase<"decode_attention", [AttrSizedOperandSegments]> {
  let summary = "Decode attention over the paged quantized KV cache";
  let description = [{
    One new query token per sequence attends to the `seq_lens[s]` cached
    tokens of its sequence. Query head `h` uses KV head `h / (Hq / Hkv)`
    (GQA; the ratio must be 1..16 so one KV head's query heads fit the 16
    rows of the matrix instructions). The query is rotated with the key
    format's rotation and, with `query_precision = fp8_e4m3` (the default,
    as in vLLM's reference), rounded to FP8 E4M3 (scale 1, NaN above 448).
    Logits are `q . k_decoded * scale`, with `k_decoded` read from the cache
    through `block_tables`; with `sinks`, `sinks[h]` joins the softmax of head
    `h` as one extra logit without a value row. The output is
    `sum_t p_t v_decoded_t`, rotated back by `H / sqrt(D)` when `v_format`
    is rotated (values decode in their coded domain).

    Shapes: `query`, `result`: `[S, Hq, D]`; `cache`:
    `[num_blocks, block_size, Hkv, slot_bytes]` `i8`; `block_tables`:
    `[S, max_blocks]` `i32`; `seq_lens`: `[S]` `i32`; `sinks`: `[Hq]` `f32`.
    A sequence of length 0 gives zeros (or, with sinks, zeros too: the sink
    has no value row).

    `k_mean` / `v_mean` (`[Hkv, D]` `f32`) undo the means a
    `uq.cache_write` subtracted: every decoded key (value) row of KV head
    `h` gets `k_mean[h]` (`v_mean[h]`) added in its coded domain, i.e.
    rotated by the format's rotation first, before the logits (the weighted
    sum). A kernel may instead add `scale * (q . rot(k_mean))` to every
    logit (softmax ignores it; only the sink comparison sees it) and
    `v_mean * (1 - p_sink)` to the output.

    ```mlir
    %o = uq.decode_attention %q, %cache, %bt, %lens scale 0.0883883
        {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
         v_format = #uq.kv_format<fp4_e2m1>,
         layout = #uq.cache_layout<vllm_slot>}
        : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>,
           tensor<2xi32>) -> tensor<2x16x128xf32>
    ```
  }];
  let arguments = (ins UQ_FloatTensor:$query, UQ_ByteTensor:$cache,
                       RankedTensorOf<[I32]>:$block_tables,
                       RankedTensorOf<[I32]>:$seq_lens,
                       Optional<RankedTensorOf<[F32]>>:$sinks,
                       Optional<RankedTensorOf<[F32]>>:$k_mean,
                       Optional<RankedTensorOf<[F32]>>:$v_mean,
                       F32Attr:$scale,
                       UQ_KVFormatAttr:$k_format, UQ_KVFormatAttr:$v_format,
                       UQ_CacheLayoutAttr:$layout,
                       DefaultValuedAttr<UQ_QueryPrecisionAttr,
                           "::uq::QueryPrecision::fp8_e4m3">:$query_precision);
  let results = (outs UQ_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $cache `,` $block_tables `,` $seq_lens (`sinks` $sinks^)?
    (`k_mean` $k_mean^)? (`v_mean` $v_mean^)?
    `scale` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = commonExtraClassDeclaration;
}

def UQ_DecodeAttentionPartialOp
    : UQ_AttentionOpBase<"decode_attention_partial",
                         [AttrSizedOperandSegments]> {
  let summary = "One split-K partition of decode attention per sequence";
  let description = [{
    Flash-decoding's first half. The keys of each sequence are split into
    partitions of `partition_size` tokens (`P = result dim 2` partitions:
    enough for `max_blocks * block_size` tokens). For partition `p`, over the
    tokens `t` in `[p * partition_size, min((p+1) * partition_size,
    seq_len))` with logits `l_t` defined as in `uq.decode_attention`, the op
    returns `max[s,h,p] = max_t l_t`, `sum[s,h,p] = sum_t exp(l_t - max)` and
    `out[s,h,p,:] = sum_t exp(l_t - max) v_t / sum`, in V's coded domain
    (a rotated `v_format` is not undone here; apply `uq.rotate` after
    `uq.merge_partitions`). An empty partition has
    `max = -inf`, `sum = 0` and `out = 0`. `uq.merge_partitions` combines
    the partitions (and the sinks). `k_mean` / `v_mean` are added to the
    decoded rows as in `uq.decode_attention`.

    ```mlir
    %o, %m, %l = uq.decode_attention_partial %q, %cache, %bt, %lens
        scale 0.0883883 partition_size 256
        {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
         v_format = #uq.kv_format<fp4_e2m1>,
         layout = #uq.cache_layout<vllm_slot>}
        : (tensor<2x16x128xbf16>, tensor<64x16x2x136xi8>, tensor<2x32xi32>,
           tensor<2xi32>) -> (tensor<2x16x2x128xf32>, tensor<2x16x2xf32>,
           tensor<2x16x2xf32>)
    ```
  }];
  let arguments = (ins UQ_FloatTensor:$query, UQ_ByteTensor:$cache,
                       RankedTensorOf<[I32]>:$block_tables,
                       RankedTensorOf<[I32]>:$seq_lens,
                       Optional<RankedTensorOf<[F32]>>:$k_mean,
                       Optional<RankedTensorOf<[F32]>>:$v_mean,
                       F32Attr:$scale,
                       ConfinedAttr<I64Attr, [IntPositive]>:$partition_size,
                       UQ_KVFormatAttr:$k_format, UQ_KVFormatAttr:$v_format,
                       UQ_CacheLayoutAttr:$layout,
                       DefaultValuedAttr<UQ_QueryPrecisionAttr,
                           "::uq::QueryPrecision::fp8_e4m3">:$query_precision);
  let results = (outs RankedTensorOf<[F32]>:$out,
                      RankedTensorOf<[F32]>:$max,
                      RankedTensorOf<[F32]>:$sum);
  let assemblyFormat = [{
    $query `,` $cache `,` $block_tables `,` $seq_lens
    (`k_mean` $k_mean^)? (`v_mean` $v_mean^)?
    `scale` $scale `partition_size` $partition_size attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = commonExtraClassDeclaration # [{
    int64_t getNumPartitions() {
      return ::llvm::cast<::mlir::RankedTensorType>(getOut().getType())
          .getDimSize(2);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Paged attention (prefill chunks and decodes in one batch)
//===----------------------------------------------------------------------===//

def UQ_PagedAttentionOp
    : UQ_Op<"paged_attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "Causal attention of new query tokens (prefill chunks and "
                "decodes) over the paged quantized KV cache";
  let description = [{
    The generalisation of `uq.decode_attention` to a query length per
    sequence, with the inputs of vLLM's unified attention: sequence `s` owns
    the query tokens `query_start_loc[s] .. query_start_loc[s+1] - 1` (query
    length `q_s`) and has `seq_lens[s]` context tokens in the cache, its new
    tokens included (write their K/V with `uq.cache_write` first: attention
    reads the whole context from the cache). Query token `i` of sequence `s`
    (0-based within the sequence) attends causally to the keys
    `0 .. seq_lens[s] - q_s + i`, or with `window = W` to the last `W` of
    them, `seq_lens[s] - q_s + i - W + 1 .. seq_lens[s] - q_s + i`.
    Everything else is `uq.decode_attention`'s: the query is rotated with
    the key format's rotation and rounded per `query_precision`; query head
    `h` reads KV head `h / (Hq / Hkv)` (GQA ratio 1..16); logits
    `q . k_decoded * scale`; `sinks[h]` joins the softmax as one extra logit
    without a value row; the output is rotated back when `v_format` is
    rotated. A batch of query length 1 everywhere is exactly
    `uq.decode_attention`. `k_mean` / `v_mean` (`[Hkv, D]` `f32`) undo
    the channel means a `uq.cache_write` subtracted, exactly as for
    `uq.decode_attention` (every decoded key / value row of KV head `h`
    gets `k_mean[h]` / `v_mean[h]` added in its coded domain).

    Every index input has a defined result (docs/dialect.md, "Input
    policy"): `query_start_loc` is read as its running maximum clamped to
    `[0, num_tokens]`, `seq_lens` clamped to `[0, max_blocks * block_size]`,
    block ids clamped into the cache; a query token that sees no key, and a
    token that no sequence covers, gives zeros.

    Shapes: `query`, `result`: `[num_tokens, Hq, D]`; `cache`:
    `[num_blocks, block_size, Hkv, slot_bytes]` `i8`; `block_tables`:
    `[num_seqs, max_blocks]` `i32`; `seq_lens`: `[num_seqs]` `i32`;
    `query_start_loc`: `[num_seqs + 1]` `i32`; `sinks`: `[Hq]` `f32`.
    `num_tokens`, `num_seqs`, `max_blocks` and `num_blocks` may be dynamic.

    ```mlir
    %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl
        sinks %s scale 0.0883883 window 4096
        {k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
         v_format = #uq.kv_format<fp4_e2m1>,
         layout = #uq.cache_layout<vllm_slot>}
        : (tensor<?x16x128xbf16>, tensor<?x16x2x136xi8>, tensor<?x?xi32>,
           tensor<?xi32>, tensor<?xi32>, tensor<16xf32>) -> tensor<?x16x128xf32>
    ```
  }];
  let arguments = (ins UQ_FloatTensor:$query, UQ_ByteTensor:$cache,
                       RankedTensorOf<[I32]>:$block_tables,
                       RankedTensorOf<[I32]>:$seq_lens,
                       RankedTensorOf<[I32]>:$query_start_loc,
                       Optional<RankedTensorOf<[F32]>>:$sinks,
                       Optional<RankedTensorOf<[F32]>>:$k_mean,
                       Optional<RankedTensorOf<[F32]>>:$v_mean,
                       F32Attr:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$window,
                       UQ_KVFormatAttr:$k_format, UQ_KVFormatAttr:$v_format,
                       UQ_CacheLayoutAttr:$layout,
                       DefaultValuedAttr<UQ_QueryPrecisionAttr,
                           "::uq::QueryPrecision::fp8_e4m3">:$query_precision);
  let results = (outs UQ_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $cache `,` $block_tables `,` $seq_lens
    `query_start_loc` $query_start_loc (`sinks` $sinks^)?
    (`k_mean` $k_mean^)? (`v_mean` $v_mean^)?
    `scale` $scale (`window` $window^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getQueryType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getQuery().getType());
    }
    ::mlir::RankedTensorType getCacheType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getCache().getType());
    }
    int64_t getNumQueryHeads() { return getQueryType().getDimSize(1); }
    int64_t getHeadDim() { return getQueryType().getDimSize(2); }
    int64_t getBlockSize() {
      return getCacheType().getDimSize(getLayout().getBlockSizeDim());
    }
    int64_t getNumKVHeads() {
      return getCacheType().getDimSize(getLayout().getKVHeadsDim());
    }
    /// Query heads per KV head (the GQA ratio).
    int64_t getGroupSize() { return getNumQueryHeads() / getNumKVHeads(); }
  }];
}

def UQ_MergePartitionsOp : UQ_Op<"merge_partitions", [Pure]> {
  let summary = "Merge split-K partial attention results (flash-decoding)";
  let description = [{
    Combines the partitions of `uq.decode_attention_partial`:
    `M = max(max_p, sink)`, `w_p = sum_p * exp(max_p - M)`,
    `result = sum_p w_p out_p / (sum_p w_p + exp(sink - M))`, where the sink
    term is present only with `sinks` (`[Hq]`). Partitions with `sum = 0`
    contribute nothing; a row whose every partition is empty is 0.

    ```mlir
    %r = uq.merge_partitions %o, %m, %l sinks %s
        : (tensor<2x16x4x128xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>,
           tensor<16xf32>) -> tensor<2x16x128xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$out,
                       RankedTensorOf<[F32]>:$max,
                       RankedTensorOf<[F32]>:$sum,
                       Optional<RankedTensorOf<[F32]>>:$sinks);
  let results = (outs UQ_FloatTensor:$result);
  let assemblyFormat = [{
    $out `,` $max `,` $sum (`sinks` $sinks^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // UQ_DIALECT_UQ_IR_UQOPS_TD
