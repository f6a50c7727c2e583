"""A small serving loop over uq's launch runtime (docs/runtime.md).

A paged KV-cache manager in the style of vLLM's block manager drives one
compiled program (``uq.cache_write`` + ``uq.decode_attention`` +
``uq.paged_attention``, every size a run-time size) through ``uq.load``:

- requests arrive with a prompt and a number of tokens to generate;
- each step prefills chunks of the waiting prompts (at most ``--chunk``
  tokens per sequence) and decodes one token of every running sequence, in
  one ``paged_attention`` batch, after writing the step's new K/V rows with
  one ``cache_write``; sequences that only decode also go through
  ``decode_attention``;
- blocks are allocated as sequences grow and freed when they finish, so the
  block tables, the batch and its composition change every step;
- every step is checked: the cache bytes against ``uq.ref.cache_write`` of
  the same rows, the attention outputs against ``uq.ref.paged_attention``
  within the kernels' P-rounding bound.

There is no model: queries, keys and values are random bf16 rows (the
runtime and the cache are what is exercised). Runs on the gfx950 emulator by
default; ``--device hip`` uses libamdhip64.so.

    PYTHONPATH=build/python-bindings python3 \
        python-bindings/examples/serving_loop.py --steps 6
"""

import argparse
import sys

import numpy as np

import uq

HQ, HKV, D, BS = 8, 2, 64, 16
SCALE = 0.125


def program_ir(slot_bytes):
    attrs = ("{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, "
             "v_format = #uq.kv_format<fp4_e2m1>, "
             "layout = #uq.cache_layout<vllm_slot>}")
    kv, q = f"tensor<?x{HKV}x{D}xbf16>", f"tensor<?x{HQ}x{D}xbf16>"
    cache = f"tensor<?x{BS}x{HKV}x{slot_bytes}xi8>"
    out, bt, i32 = f"tensor<?x{HQ}x{D}xf32>", "tensor<?x?xi32>", "tensor<?xi32>"
    return f"""
func.func @write(%k: {kv}, %v: {kv}, %s: tensor<?xi64>, %c: {cache}) -> {cache} {{
  %r = uq.cache_write %k, %v, %s into %c {attrs} : {kv}, {kv}, tensor<?xi64> into {cache}
  return %r : {cache}
}}
func.func @decode(%q: {q}, %c: {cache}, %bt: {bt}, %lens: {i32}) -> {out} {{
  %o = uq.decode_attention %q, %c, %bt, %lens scale {SCALE} {attrs} : ({q}, {cache}, {bt}, {i32}) -> {out}
  return %o : {out}
}}
func.func @paged(%q: {q}, %c: {cache}, %bt: {bt}, %lens: {i32}, %qsl: {i32}) -> {out} {{
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale {SCALE} {attrs} : ({q}, {cache}, {bt}, {i32}, {i32}) -> {out}
  return %o : {out}
}}
"""


class BlockAllocator:
    """Free cache blocks, handed out in a scrambled order (as after a while
    of serving)."""

    def __init__(self, num_blocks, rng):
        self.free_blocks = [int(b) for b in rng.permutation(num_blocks)]
        self.freed_once = set()   # blocks that have been freed
        self.reused = 0           # allocations of such blocks

    def allocate(self, n):
        if n > len(self.free_blocks):
            raise MemoryError(f"{n} blocks wanted, {len(self.free_blocks)} "
                              "free")
        got, self.free_blocks = self.free_blocks[:n], self.free_blocks[n:]
        self.reused += sum(b in self.freed_once for b in got)
        return got

    def free(self, blocks):
        # Most recently freed first (their cache lines are warm).
        self.freed_once.update(blocks)
        self.free_blocks[:0] = blocks


class Sequence:
    def __init__(self, sid, prompt, generate):
        self.sid, self.prompt, self.generate = sid, prompt, generate
        self.cached = 0      # tokens in the cache
        self.blocks = []     # cache blocks, in token order

    @property
    def prefilling(self):
        return self.cached < self.prompt

    @property
    def done(self):
        return self.cached >= self.prompt + self.generate


class KVCacheManager:
    """The paged cache: blocks per sequence, slots of new tokens, block
    tables; the cache array itself is what uq's cache_write returns."""

    def __init__(self, prog, num_blocks, slot_bytes, rng):
        self.prog = prog
        self.allocator = BlockAllocator(num_blocks, rng)
        self.cache = np.zeros((num_blocks, BS, HKV, slot_bytes), np.uint8)
        self.reference = self.cache.copy()   # written by uq.ref

    def reserve(self, seq, n):
        """Slots of the next ``n`` tokens of ``seq`` (blocks allocated)."""
        need = -(-(seq.cached + n) // BS) - len(seq.blocks)
        if need > 0:
            seq.blocks += self.allocator.allocate(need)
        return [seq.blocks[t // BS] * BS + t % BS
                for t in range(seq.cached, seq.cached + n)]

    def write(self, slots, k, v):
        """One cache_write of the step's rows (``slots`` int64, -1 = pad)."""
        self.cache = self.prog.cache_write(k, v, slots, self.cache)
        self.reference = uq.ref.cache_write(k, v, slots, self.reference)
        if not np.array_equal(self.cache, self.reference):
            raise AssertionError("cache bytes differ from uq.ref.cache_write")

    def free(self, seq):
        self.allocator.free(seq.blocks)
        seq.blocks = []

    @staticmethod
    def block_tables(seqs):
        width = max(1, max(len(s.blocks) for s in seqs))
        bt = np.zeros((len(seqs), width), np.int32)   # padding: block 0
        for i, s in enumerate(seqs):
            bt[i, :len(s.blocks)] = s.blocks
        return bt


def random_bf16(rng, shape):
    x = rng.standard_normal(shape, dtype=np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--blocks", type=int, default=40,
                    help="cache blocks of 16 tokens")
    ap.add_argument("--chunk", type=int, default=24,
                    help="prefill tokens per sequence and step")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="emulator",
                    choices=("emulator", "hip"))
    ap.add_argument("--program", help="a .hsaco of this example's program "
                    "(JSON next to it); default: compile it here")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    slot_bytes = uq.native().slot_bytes(D)
    if args.program:
        prog = uq.load(args.program, device=args.device)
    else:
        res = uq.compile_with_description(program_ir(slot_bytes),
                                          partition_size=64)
        prog = uq.load(res, device=args.device)
    print("device:", prog.device)
    mgr = KVCacheManager(prog, args.blocks, slot_bytes, rng)

    waiting, running, next_id = [], [], 0
    stats = dict(steps=0, prefill_tokens=0, decode_tokens=0, max_batch=0,
                 finished=0, max_blocks_used=0, decode_calls=0,
                 worst=0.0)
    for step in range(args.steps):
        # Arrivals: up to two requests every other step.
        for _ in range(int(rng.integers(0, 3)) if step % 2 == 0 else 0):
            waiting.append(Sequence(next_id, int(rng.integers(5, 60)),
                                    int(rng.integers(1, 6))))
            next_id += 1
        # Admit while the free blocks cover every admitted sequence to its
        # end (no preemption in this example).
        def blocks_to_finish(s):
            return -(-(s.prompt + s.generate) // BS) - len(s.blocks)
        while waiting and len(mgr.allocator.free_blocks) >= sum(
                blocks_to_finish(s) for s in running + waiting[:1]):
            running.append(waiting.pop(0))
        if not running:
            continue
        # The step's batch: a prefill chunk or one decode token each.
        batch = [(s, min(args.chunk, s.prompt - s.cached) if s.prefilling
                  else 1) for s in running]
        slots, n_new = [], []
        for s, n in batch:
            slots += mgr.reserve(s, n)
            n_new.append(n)
        tokens = len(slots)
        k = random_bf16(rng, (tokens + 1, HKV, D))
        v = random_bf16(rng, (tokens + 1, HKV, D))
        mgr.write(np.array(slots + [-1], np.int64), k, v)  # + a padding row
        for s, n in batch:
            s.cached += n
        seqs = [s for s, _ in batch]
        bt = mgr.block_tables(seqs)
        lens = np.array([s.cached for s in seqs], np.int32)
        qsl = np.concatenate([[0], np.cumsum(n_new)]).astype(np.int32)
        q = random_bf16(rng, (tokens, HQ, D))
        out = prog.paged_attention(q, mgr.cache, bt, lens, qsl)
        want = uq.ref.paged_attention(q, mgr.cache, bt, lens, qsl,
                                      scale=SCALE)
        # The kernels round P to bf16: |error| <= 2^-8 max |V| (the FP4
        # codes stay below twice the largest value written).
        bound = 2.0**-8 * 2 * np.abs(bf16_values(v)).max()
        err = float(np.abs(out - want).max())
        stats["worst"] = max(stats["worst"], err / bound)
        if not err <= bound:
            raise AssertionError(f"step {step}: paged attention error {err} "
                                 f"above {bound}")
        # Sequences that only decode: the same rows through decode_attention.
        dec = [i for i, (s, n) in enumerate(batch)
               if n == 1 and s.cached > s.prompt]
        if dec:
            dq = q[qsl[dec]]
            dout = prog.decode_attention(dq, mgr.cache, bt[dec], lens[dec])
            derr = float(np.abs(dout - want[qsl[dec]]).max())
            if not derr <= bound:
                raise AssertionError(f"step {step}: decode error {derr}")
            stats["decode_calls"] += 1
        stats["steps"] += 1
        stats["max_batch"] = max(stats["max_batch"], len(batch))
        stats["prefill_tokens"] += tokens - len(dec)
        stats["decode_tokens"] += len(dec)
        used = args.blocks - len(mgr.allocator.free_blocks)
        stats["max_blocks_used"] = max(stats["max_blocks_used"], used)
        print(f"step {step:2d}: batch {len(batch)} ({tokens} query tokens, "
              f"{len(dec)} decodes), blocks in use {used}/{args.blocks}, "
              f"max error {err:.2e} (bound {bound:.2e})")
        # Finished sequences give their blocks back.
        for s in [s for s in running if s.done]:
            mgr.free(s)
            running.remove(s)
            stats["finished"] += 1
    stats["reused_blocks"] = mgr.allocator.reused
    print("summary:", " ".join(f"{k}={v:.3g}" if isinstance(v, float)
                               else f"{k}={v}" for k, v in stats.items()))
    return stats


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
