# RUN: env PYTHONPATH=%uq_build/python-bindings UQ_SHARED_DIR=%shared %python %s

# uq.serving bookkeeping that needs no kernel times: the formats' exact KV
# bytes, per-layer/per-head policies and TP splits, parameter counts, and the
# block pool's allocation, prefix hits and LRU eviction order. Expected values
# are computed by hand in the comments.
from uq.quality.policy import Policy
from uq.serving.engine import BlockPool, SimulationError
from uq.serving.model import (ModelShape, kv_bytes_per_token_head, kv_layout, tp_heads,
                              transformer_params)


def raises(exc, f, *a, **kw):
    try:
        f(*a, **kw)
    except exc as e:
        return str(e)
    raise AssertionError(f"{f.__name__}{a} did not raise {exc.__name__}")


# K+V bytes per token per KV head: UltraQuant D/2 + D/32 each for K and V.
assert kv_bytes_per_token_head("uq4", 128) == 136      # 2 * (64 + 4)
assert kv_bytes_per_token_head("uq4", 256) == 272      # 2 * (128 + 8)
assert kv_bytes_per_token_head("uq4", 64) == 68        # 2 * (32 + 2)
assert kv_bytes_per_token_head("fp8", 128) == 256
assert kv_bytes_per_token_head("bf16", 128) == 512
assert "multiple of 32" in raises(ValueError, kv_bytes_per_token_head, "uq4", 48)
assert raises(ValueError, kv_bytes_per_token_head, "int4", 128)


def shape(layers, kv, q=None, d=128):
    return ModelShape("t", layers, q or kv, kv, d, 1e9, 1e9, 2.0)


# Per-layer and per-head policy: layer 0 BF16 (2 heads x 512), layer 1 head 0
# UltraQuant (136) and head 1 FP8 (256): 1024 + 392 = 1416 B per token.
pol = Policy("uq", [{"layer": 0, "format": "bf16"},
                    {"layer": 1, "kv_head": 1, "format": "fp8"}])
lay = kv_layout(shape(2, 2), pol)
assert lay.formats == [["bf16", "bf16"], ["uq4", "fp8"]], lay.formats
assert lay.bytes_per_token() == 1416
assert lay.layer_groups() == [(1, (("bf16", 2),)), (1, (("fp8", 1), ("uq4", 1)))]
# Every uq variant runs the one UltraQuant kernel.
assert kv_layout(shape(1, 1), "uq:c=0.196,rotv,search").formats == [["uq4"]]
# Formats without a serving kernel and policies naming absent units fail.
assert "no serving kernel" in raises(ValueError, kv_layout, shape(1, 1), "int4")
assert "layer 3" in raises(ValueError, kv_layout, shape(2, 2),
                           Policy("uq", [{"layer": 3, "format": "fp8"}]))

# TP: 8 KV heads over 2 GPUs -> 4 each; 2 heads over 4 GPUs -> 1 each,
# replicated twice (vLLM); 8 over 3 does not split.
assert tp_heads(8, 2) == (4, 1) and tp_heads(2, 4) == (1, 2)
assert raises(ValueError, tp_heads, 8, 3)
# With a per-head mix the GPU with the most bytes per token binds: head 0
# BF16 on GPU 0 (512 B), head 1 UltraQuant on GPU 1 (136 B).
lay = kv_layout(shape(1, 2), Policy("uq", [{"layer": 0, "kv_head": 0, "format": "bf16"}]),
                tp=2)
assert lay.formats == [["bf16"]] and lay.bytes_per_token() == 512

# Llama-3.1-8B's published size is 8.03e9 parameters (norms, 266K, ignored).
total, active, routed = transformer_params(4096, 32, 32, 8, 128, 14336, 128256)
assert abs(total - 8.03e9) / 8.03e9 < 1e-3, total
assert routed == 0
# The presets against their published sizes: Gemma-2-9B 9.24e9 parameters;
# MiniMax-M2.5 "230B total, 10B active".
from uq.serving.model import preset
g = preset("gemma-2-9b")
assert (g.layers, g.kv_heads, g.head_dim, g.gqa) == (42, 8, 256, 2)
assert abs(g.params_total - 9.24e9) / 9.24e9 < 2e-3, g.params_total
mm = preset("minimax-m2.5")
assert (mm.layers, mm.kv_heads, mm.head_dim, mm.gqa) == (62, 8, 128, 6)
assert abs(mm.params_total - 230e9) / 230e9 < 0.01 and abs(mm.params_active - 10e9) < 0.5e9
ll = preset("llama-3.1-8b")
assert (ll.layers, ll.kv_heads, ll.head_dim, ll.gqa) == (32, 8, 128, 4)
# The shared LM's shape comes from its manifest (when the shared folder exists).
import json
import os
man = os.path.join(os.environ.get("UQ_SHARED_DIR", ""), "lm", "manifest.json")
if os.path.isfile(man):
    cfg = json.load(open(man))["cfg"]
    s = preset("shared-lm")
    assert (s.layers, s.q_heads, s.kv_heads, s.head_dim) == \
        (cfg["layers"], cfg["hq"], cfg["hk"], cfg["hd"])
assert "unknown model" in raises(ValueError, preset, "gpt-5")
# MoE: 2 layers, hidden 8, 4 experts of width 4, 1 per token, vocab 10, head
# dim 2, 2 q + 1 kv heads: attention 8*2*(4+2) = 96 per layer; one expert
# 3*8*4 = 96; total 2*96 + 2*4*96 + 2*10*8 = 1120; active 2*(96+96) + 80 = 464.
assert transformer_params(8, 2, 2, 1, 2, 4, 10, experts=4, experts_per_token=1) == \
    (1120.0, 464.0, 768.0)

# Block pool: 4 blocks, all free in order 0..3.
p = BlockPool(4)
a = p.allocate(2)
assert a == [0, 1] and p.num_free() == 2
p.commit(0, 100)
p.commit(1, 101)
p.release(a)                       # tail first: the free queue is 2, 3, 1, 0
assert list(p.free) == [2, 3, 1, 0]
assert p.lookup([100, 101, 102]) == [0, 1]
assert p.allocate(2) == [2, 3] and p.evictions == 0
assert p.allocate(1) == [1] and p.evictions == 1     # the tail block 101 goes first
assert p.lookup([100, 101]) == [0]                   # the head is still cached
p.touch([0])                                         # a hit takes it off the queue
assert p.num_free() == 0 and p.ref[0] == 1
assert raises(SimulationError, p.allocate, 1)
# A second block with the same tokens is not cached twice.
p.commit(2, 100)
assert p.cached[100] == 0 and p.key[2] is None

# LRU across requests: A (blocks 0, 1) is released before B (2, 3); new
# allocations evict A's tail, A's head, then B's tail.
p = BlockPool(4)
A, B = p.allocate(2), p.allocate(2)
for b, k in zip(A + B, (10, 11, 20, 21)):
    p.commit(b, k)
p.release(A)
p.release(B)
order = []
for _ in range(3):
    blk = p.allocate(1)[0]
    order.append(blk)
assert order == [1, 0, 3], order
assert sorted(p.cached) == [20] and p.evictions == 3
print("ok")
