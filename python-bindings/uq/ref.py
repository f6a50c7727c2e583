"""The reference library's paged cache and attention (``uq::ref``).

Thin wrappers over the native module (``uq._uq``) that accept array-likes:
index arguments may be Python lists or any integer numpy dtype (values must
fit int32, as the ops' ``i32`` operands do; ``slot_mapping`` is int64),
queries/keys/values float32 or bf16 bit patterns as uint16. Results are
float32 numpy arrays (``cache_write`` returns the new uint8 cache). Every
function is bit-exact with the C++ reference that the CPU path and the
gfx950 kernels are tested against; the semantics are those of
``uq.cache_write``, ``uq.decode_attention`` and ``uq.paged_attention``
(docs/dialect.md, docs/reference-numerics.md).

Formats (``k_format``/``v_format``): None for UltraQuant's key (FP4,
rotated) and value (FP4) formats, or a dict of ``quantize``'s keywords:
``code`` ('fp4', 'fp8', 'bf16'), ``rotate``, ``c``, ``group_size``,
``rounding``, ``fp8_overflow``, ``scale_rule``.
"""

import numpy as np

from . import native


def _ints(x, dtype):
    """An integer array (any integer dtype: the native side checks that the
    values fit); an empty list becomes an empty array of ``dtype``."""
    a = np.asarray(x)
    if a.size == 0:
        return a.astype(dtype)
    if a.dtype.kind not in "iu":
        raise TypeError(f"expected integers, got dtype {a.dtype}")
    return a


def cache_write(k, v, slot_mapping, cache, *, k_format=None, v_format=None):
    """Codes k, v [num_tokens, num_kv_heads, head_dim] into a copy of
    ``cache`` (uint8 [num_blocks, block_size, num_kv_heads, slot_bytes]) at
    ``slot_mapping`` (block * block_size + offset; negative: skip)."""
    slots = _ints(slot_mapping, np.int64)
    if slots.dtype.kind == "u" and slots.size and slots.max() > 2**63 - 1:
        raise ValueError("slot_mapping: values must fit int64")
    return native().cache_write(np.asarray(k), np.asarray(v),
                                slots.astype(np.int64), np.asarray(cache),
                                k_format=k_format, v_format=v_format)


def decode_attention(q, cache, block_tables, seq_lens, *, scale, sinks=None,
                     query_precision="fp8_e4m3", k_format=None,
                     v_format=None, accumulate_f64=False):
    """One query token per sequence (``uq.decode_attention``):
    q [num_seqs, num_q_heads, head_dim] -> float32 of q's shape."""
    return native().decode_attention(
        np.asarray(q), np.asarray(cache), _ints(block_tables, np.int32),
        _ints(seq_lens, np.int32), scale=scale,
        sinks=None if sinks is None else np.asarray(sinks, np.float32),
        query_precision=query_precision, k_format=k_format,
        v_format=v_format, accumulate_f64=accumulate_f64)


def paged_attention(q, cache, block_tables, seq_lens, query_start_loc, *,
                    scale, sinks=None, window=None,
                    query_precision="fp8_e4m3", k_format=None,
                    v_format=None, accumulate_f64=False):
    """Prefill chunks and decodes in one batch (``uq.paged_attention``):
    q [num_tokens, num_q_heads, head_dim]; sequence s owns the query tokens
    query_start_loc[s] .. query_start_loc[s+1] - 1 and has seq_lens[s]
    context tokens in the cache (its new tokens included). Query token i of
    a sequence attends to keys 0 .. seq_len - query_len + i (the last
    ``window`` of them with a window). Out-of-range index inputs follow the
    op's input policy (docs/dialect.md) and are never an error."""
    return native().paged_attention(
        np.asarray(q), np.asarray(cache), _ints(block_tables, np.int32),
        _ints(seq_lens, np.int32), _ints(query_start_loc, np.int32),
        scale=scale,
        sinks=None if sinks is None else np.asarray(sinks, np.float32),
        window=window, query_precision=query_precision, k_format=k_format,
        v_format=v_format, accumulate_f64=accumulate_f64)


__all__ = ["cache_write", "decode_attention", "paged_attention"]
