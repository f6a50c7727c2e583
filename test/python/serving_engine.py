# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# uq.serving's engine on tiny scenarios computed by hand: chunked-prefill
# token accounting, blocks allocated, TTFT/TPOT of one request from a
# hand-written kernel table, prefix hits across rounds and the hit rate, LRU
# eviction of another session's tail, and preemption with recompute.
from uq.serving.engine import EngineConfig, SimulationError, Simulator
from uq.serving.kernels import KernelTable
from uq.serving.model import KVLayout
from uq.serving.study import summarize
from uq.serving.workload import SessionPlan


class Gemm:                      # 2 us per token
    def step_us(self, tokens):
        return 2.0 * tokens


class Flat:                      # every attention launch 10 us
    measured = False

    def attention_us(self, *a):
        return 10.0


def pt(c, q, t, b=1, h=1):
    return {"batch": b, "kv_heads": h, "context": c, "query_len": q, "time_us": t}


table = KernelTable({
    "source": "hand-written fixture",
    "hardware": {"name": "MI355X"},
    "kernels": [
        {"format": "bf16", "phase": "prefill", "head_dim": 128, "gqa": 1, "block_size": 16,
         "points": [pt(16, 16, 100), pt(32, 16, 150), pt(40, 8, 120), pt(40, 40, 300),
                    pt(53, 21, 200)]},
        {"format": "bf16", "phase": "decode", "head_dim": 128, "gqa": 1, "block_size": 16,
         "points": [pt(41, 1, 20), pt(42, 1, 21), pt(44, 1, 22)]},
    ]})
table.bind(128, 1, 16, ["bf16"])
one = KVLayout([["bf16"]], 128, "bf16")      # 1 layer, 1 KV head


def sim(blocks, budget, kernels=table, overhead=10.0):
    s = Simulator(one, blocks, kernels, Gemm(),
                  EngineConfig(block_size=16, max_batched_tokens=budget,
                               step_overhead_us=overhead))
    s.step_log = []
    return s


# 1. One request, prompt 40, 3 output tokens, 16 tokens per step:
#    step 1: chunk 16 at context 16: 100 + 2*16 + 10 = 142 us
#    step 2: chunk 16 at context 32: 150 + 32 + 10 = 192 us
#    step 3: chunk 8 at context 40:  120 + 16 + 10 = 146 us -> first token at 480
#    step 4: decode at context 41:    20 +  2 + 10 =  32 us -> token 2 at 512
#    step 5: decode at context 42:    21 +  2 + 10 =  33 us -> token 3 at 545
#    TTFT 480 us, TPOT (545 - 480) / 2 = 32.5 us; 42 tokens computed = 3 blocks.
s = sim(blocks=8, budget=16)
(r,) = s.run([SessionPlan(0, 0.0, 0, [40], [3], [0.0])])
assert [n for _, _, sch in s.step_log for (_, _, n) in sch] == [16, 16, 8, 1, 1]
assert [dt for _, dt, _ in s.step_log] == [142, 192, 146, 32, 33]
assert r.first_token - r.arrival == 480 and r.finish == 545
assert r.prefill_tokens == 40 and r.hit_tokens == 0 and r.preemptions == 0
assert s.pool.allocated == 3 and s.pool.num_free() == 8      # all released
# Blocks 0 and 1 (tokens 0-31) are full and cached; block 2 (32-41) is not.
assert len(s.pool.cached) == 2
summ = summarize([r], 16, s)
assert summ["per_round"][0]["ttft_p50_ms"] == 0.480
assert summ["per_round"][0]["tpot_p50_ms"] == 0.0325

# 2. Two rounds of one session, 64 tokens per step. Round 1: prompt 40,
#    3 outputs -> 42 tokens computed, 2 full blocks cached. Round 2 prompt
#    40 + 3 + 10 = 53: hit 2 blocks = 32 tokens, prefill 21 at context 53:
#    TTFT = 200 + 2*21 + 10 = 252 us. Hit rate 32/53; the session is resident
#    (its previous 42 computed tokens hold 2 full blocks, both hit).
s = sim(blocks=8, budget=64)
r1, r2 = s.run([SessionPlan(0, 0.0, 0, [40, 10], [3, 1], [0.0, 0.0])])
assert r1.first_token - r1.arrival == 300 + 80 + 10
assert r2.hit_tokens == 32 and r2.prefill_tokens == 21
assert r2.first_token - r2.arrival == 252
summ = summarize([r1, r2], 16, s)
rd2 = summ["per_round"][1]
assert abs(rd2["hit_rate"] - 32 / 53) < 1e-12 and rd2["resident_sessions"] == 1
assert summ["per_round"][0]["hit_rate"] == 0
assert abs(summ["groups"]["all"]["hit_rate"] - 32 / 93) < 1e-12
assert summ["output_tokens"] == 4

# 3. LRU eviction, 4 blocks. A (prompt 32, 1 output) computes 2 blocks and
#    frees them tail first: queue 2, 3, 1, 0. B (at 1 s, prompt 48) takes 2, 3
#    and 1 -- evicting A's tail. A's round 2 (2 s after its answer, prompt
#    32 + 1 + 15 = 48) hits only its head block: 16 tokens. B freed its
#    blocks 1, 3, 2 (tail first), so A's two new blocks evict B's tail (block
#    1) and middle (block 3): 3 evictions in all, B's head (block 2) stays
#    cached.
s = sim(blocks=4, budget=64, kernels=Flat())
A = SessionPlan(0, 0.0, 0, [32, 15], [1, 1], [2.0, 0.0])
B = SessionPlan(1, 1.0, 0, [48], [1], [0.0])
res = {(r.plan.sid, r.rnd): r for r in s.run([A, B])}
assert s.pool.evictions == 3
# Keys are (session << 32) | block index: B's block 0 in block 2; A's recomputed
# blocks 1 and 2 now fill blocks 1 and 3.
assert (s.pool.key[2], s.pool.key[1], s.pool.key[3]) == (1 << 32, 1, 2)
assert res[(1, 0)].hit_tokens == 0
assert res[(0, 1)].hit_tokens == 16 and res[(0, 1)].prefill_tokens == 32
summ = summarize(list(res.values()), 16, s)
assert summ["per_round"][1]["resident_sessions"] == 0      # A lost part of its context

# 4. Shared common prefix: two sessions with 32 common tokens (2 blocks) run
#    one after the other; the second hits the first's common blocks only.
s = sim(blocks=16, budget=64, kernels=Flat())
P = SessionPlan(0, 0.0, 32, [40], [1], [0.0])
Q = SessionPlan(1, 1.0, 32, [40], [1], [0.0])
rp, rq = s.run([P, Q])
assert rp.hit_tokens == 0 and rq.hit_tokens == 32

# 5. Preemption, 3 blocks. A (prompt 16, 20 outputs) and B (prompt 16, 2
#    outputs) both start: 1 block each, first tokens in step 1. Step 2: A
#    takes the last block for token 17, B needs one, none is free: B (the
#    last admitted) is preempted, its block freed and cached. B cannot come
#    back (its hit block plus one new block > 1 free) until A finishes; A's
#    third block (token 33) evicts B's cached block, so B recomputes its 17
#    tokens: prefill 16 + 17 = 33, one preemption. A frees its blocks tail
#    first (the partial third, then its full blocks 1 and 0); B's 2 blocks
#    take the partial one and A's block 1: 2 evictions in all.
s = sim(blocks=3, budget=64, kernels=Flat())
ra, rb = None, None
for r in s.run([SessionPlan(0, 0.0, 0, [16], [20], [0.0]),
                SessionPlan(1, 0.0, 0, [16], [2], [0.0])]):
    if r.plan.sid == 0:
        ra = r
    else:
        rb = r
assert rb.preemptions == 1 and ra.preemptions == 0
assert rb.prefill_tokens == 33 and ra.prefill_tokens == 16
assert s.pool.evictions == 2
assert rb.first_token == ra.first_token and rb.finish > ra.finish
assert rb.hit_tokens == 0

# A session larger than the whole cache is refused up front.
s = sim(blocks=2, budget=64, kernels=Flat())
try:
    s.run([SessionPlan(0, 0.0, 0, [40], [1], [0.0])])
except SimulationError as e:
    assert "more than the whole KV cache" in str(e)
else:
    raise AssertionError("an oversized session must be refused")
print("ok")
