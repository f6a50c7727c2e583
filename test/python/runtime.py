# RUN: rm -rf %t && mkdir -p %t
# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s %t %uq_build/test/hip-standin/libamdhip64.so | FileCheck %s

# uq.load and uq.Program (the launch runtime from Python): one program with
# run-time sizes (cache write, decode attention, paged attention; GQA 4,
# head_dim 64, blocks of 16, partitions of 64 tokens) loaded from a file,
# from bytes and from a CompileResult; outputs against uq.ref (cache bytes
# bit-exact, attention within the kernels' P-rounding bound); the HIP device
# over the stand-in libamdhip64.so bit-identical to the emulator; DLPack
# operands; uq.emulate with the JSON's size names; and every bad input a
# ValueError before anything runs.

import ctypes
import json
import os
import sys

import numpy as np

import uq

tmp, standin_path = sys.argv[1], sys.argv[2]
HQ, HKV, D, BS = 8, 2, 64, 16
SLOT = uq.native().slot_bytes(D)
ATTRS = ("{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>, "
         "v_format = #uq.kv_format<fp4_e2m1>, "
         "layout = #uq.cache_layout<vllm_slot>}")
KV = f"tensor<?x{HKV}x{D}xbf16>"
CACHE = f"tensor<?x{BS}x{HKV}x{SLOT}xi8>"
Q = f"tensor<?x{HQ}x{D}xbf16>"
OUT = f"tensor<?x{HQ}x{D}xf32>"
IR = f"""
func.func @write(%k: {KV}, %v: {KV}, %s: tensor<?xi64>, %c: {CACHE}) -> {CACHE} {{
  %r = uq.cache_write %k, %v, %s into %c {ATTRS} : {KV}, {KV}, tensor<?xi64> into {CACHE}
  return %r : {CACHE}
}}
func.func @decode(%q: {Q}, %c: {CACHE}, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>) -> {OUT} {{
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.125 {ATTRS} : ({Q}, {CACHE}, tensor<?x?xi32>, tensor<?xi32>) -> {OUT}
  return %o : {OUT}
}}
func.func @paged(%q: {Q}, %c: {CACHE}, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>) -> {OUT} {{
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl scale 0.125 {ATTRS} : ({Q}, {CACHE}, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> {OUT}
  return %o : {OUT}
}}
"""
res = uq.compile_with_description(IR, partition_size=64)
path = os.path.join(tmp, "attn.hsaco")
open(path, "wb").write(res.output)
open(path + ".json", "w").write(json.dumps(res.description))

prog = uq.load(path)
print(prog.device, [(o["name"], o["kind"]) for o in prog.ops])
# CHECK: emulator [('write_0', 'cache_write'), ('decode_0', 'decode_attention'), ('paged_0', 'paged_attention')]
print([b["name"] for b in prog.ops[1]["workspaces"]])
# CHECK: ['query_prepared', 'partial_out', 'partial_max', 'partial_sum']

rng = np.random.default_rng(0)


def bf16(shape):
    """Random bf16 bit patterns (uint16) of standard normal values."""
    x = rng.standard_normal(shape, dtype=np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


# A batch of 3 sequences (40, 0 and 100 tokens) in shuffled blocks.
lens = np.array([40, 0, 100], np.int32)
max_blocks = int(-(-lens.max() // BS)) + 1
num_blocks = int(sum(-(-lens // BS))) + 2
pool = rng.permutation(num_blocks).astype(np.int32)
bt = np.full((3, max_blocks), -1, np.int32)
slots, nxt = [], 0
for s, n in enumerate(lens):
    for b in range(-(-n // BS)):
        bt[s, b] = pool[nxt]
        nxt += 1
    slots += [int(bt[s, j // BS]) * BS + j % BS for j in range(n)]
slots = np.array(slots + [-1], np.int64)          # the last token: padding
k, v = bf16((len(slots), HKV, D)), bf16((len(slots), HKV, D))
empty = np.zeros((num_blocks, BS, HKV, SLOT), np.uint8)

cache = prog.cache_write(k, v, slots, empty)
want = uq.ref.cache_write(k, v, slots, empty)
print("cache", cache.dtype, cache.shape == empty.shape,
      np.array_equal(cache, want), int(empty.sum()))
# CHECK: cache uint8 True True 0

# The kernels round P to bf16 (relative 2^-8 with v_exp's ulp): the output
# error is at most 2^-8 * max |V| as coded; the FP4 codes of standard
# normal values stay below 2 * max |v|.
bound = 2.0**-8 * 2 * np.abs(bf16_values(v)).max()
q = bf16((3, HQ, D))
out = prog.decode_attention(q, cache, bt, lens)
ref_out = uq.ref.decode_attention(q, cache, np.maximum(bt, 0), lens,
                                  scale=0.125)
err = np.abs(out - ref_out).max()
print("decode", out.dtype, out.shape, bool(err <= bound))
# CHECK: decode float32 (3, 8, 64) True

# Paged: a prefill chunk of 8, nothing, 30 new tokens.
qsl = np.array([0, 8, 8, 38], np.int32)
pq = bf16((38, HQ, D))
pout = prog.paged_attention(pq, cache, bt, lens, qsl)
pref = uq.ref.paged_attention(pq, cache, np.maximum(bt, 0), lens, qsl,
                              scale=0.125)
print("paged", pout.shape, bool(np.abs(pout - pref).max() <= bound))
# CHECK: paged (38, 8, 64) True

# One partition instead of the rule's two: the same within the bound.
one = prog.decode_attention(q, cache, bt, lens, num_partitions=1)
print("partitions", prog.plan("decode_0", {"query": q, "cache": cache,
                                            "block_tables": bt,
                                            "seq_lens": lens}
                              )["num_partitions"],
      bool(np.abs(one - ref_out).max() <= bound))
# CHECK: partitions 2 True

# Bytes + JSON, and a CompileResult, load the same program.
for p in (uq.load(res.output, res.description), uq.load(res)):
    print("same", np.array_equal(p.decode_attention(q, cache, bt, lens), out))
# CHECK: same True
# CHECK: same True


# Any DLPack tensor: an object that only has __dlpack__.
class Tensor:
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


dl = prog.decode_attention(Tensor(q), Tensor(cache), Tensor(bt),
                           Tensor(lens))
print("dlpack", np.array_equal(dl, out))
# CHECK: dlpack True

# Python lists (no dtype) take the operand's: index operands as lists.
lst = prog.decode_attention(q, cache, bt.tolist(), lens.tolist())
print("lists", np.array_equal(lst, out))
# CHECK: lists True

# The HIP device over the stand-in libamdhip64.so: bit-identical.
standin = ctypes.CDLL(standin_path)
standin.uqHipStandInCalls.restype = ctypes.c_long
hip = uq.load(path, device="hip", hip_library=standin_path)
print("hip device", "hip-standin/libamdhip64.so" in hip.device)
# CHECK: hip device True
launches = standin.uqHipStandInCalls(b"hipModuleLaunchKernel")
hcache = hip.cache_write(k, v, slots, empty)
hout = hip.decode_attention(q, hcache, bt, lens)
hpaged = hip.paged_attention(pq, hcache, bt, lens, qsl)
print("hip", np.array_equal(hcache, cache), np.array_equal(hout, out),
      np.array_equal(hpaged, pout),
      standin.uqHipStandInCalls(b"hipModuleLaunchKernel") - launches)
# CHECK: hip True True True 7


# One program shared by threads (run releases the GIL; runs are serialized).
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
with ThreadPoolExecutor(4) as pool:
    outs = list(pool.map(lambda p: p.decode_attention(q, cache, bt, lens),
                         [prog, hip, prog, hip]))
print("threads", all(np.array_equal(o, out) for o in outs))
# CHECK: threads True

# uq.emulate with the JSON's size names: the cache-write kernel alone.
kern = res.kernel("write_0_cache_write")
sizes = {"num_tokens": len(slots), "num_blocks": num_blocks}
alone = empty.copy()
uq.emulate(res.output, kern["name"], kern["grid"], kern["block"],
           [k, v, slots, alone, "num_tokens", "num_blocks"], sizes=sizes)
print("emulate sizes", np.array_equal(alone, cache))
# CHECK: emulate sizes True


def value_error(fn, *args, **kw):
    """The ValueError's first line; the stand-in saw no call meanwhile."""
    before = [standin.uqHipStandInCalls(e) for e in
              (b"hipMalloc", b"hipMemcpy", b"hipModuleLaunchKernel")]
    try:
        fn(*args, **kw)
    except ValueError as e:
        after = [standin.uqHipStandInCalls(e) for e in
                 (b"hipMalloc", b"hipMemcpy", b"hipModuleLaunchKernel")]
        assert before == after, (before, after)
        return str(e).splitlines()[0]
    raise AssertionError("no ValueError")


print(value_error(hip.decode_attention, q.astype(np.float32), cache, bt, lens))
# CHECK: uq.decode_attention (decode_0): operand 'query' must be bf16, not f32
print(value_error(hip.decode_attention, q[:, :4], cache, bt, lens))
# CHECK: operand 'query' must have shape [num_seqs, 8, 64], not [3, 4, 64]
print(value_error(hip.decode_attention, q, cache[:2], bt, lens))
# CHECK: is not a block of the cache (num_blocks = 2)
print(value_error(hip.decode_attention, q, cache, bt, lens[:2]))
# CHECK: operand 'seq_lens' has num_seqs = 2
print(value_error(hip.run, "decode_0", {"query": q, "cache": cache,
                                        "block_tables": bt}))
# CHECK: missing operand 'seq_lens' [num_seqs] i32
print(value_error(hip.paged_attention, pq, cache, bt, lens, qsl[:3]))
# CHECK: query_start_loc must have num_seqs + 1 = 4 entries, not 3
print(value_error(hip.cache_write, k, v, slots + num_blocks * BS, empty))
# CHECK: slot_mapping[0] = {{[0-9]+}} is past the cache
print(value_error(hip.decode_attention, q, cache, bt, lens,
                  num_partitions=0))
# CHECK: num_partitions must be at least 1
print(value_error(hip.decode_attention, "query", cache, bt, lens))
# CHECK: operand 'query': expected a numpy array or a DLPack tensor, got str
print(value_error(uq.load, res.output))
# CHECK: a code object given as bytes needs its kernel JSON
print(value_error(uq.emulate, res.output, kern["name"], kern["grid"],
                  kern["block"], [k, v, slots, alone, 1, 1],
                  sizes={"num_blocks": 1}))
# CHECK: grid names the size 'num_tokens': pass its value in sizes=
print(value_error(uq.emulate, res.output, kern["name"], [1, 2, 2],
                  kern["block"], [k, v, slots, alone, "num_tokens", 1],
                  sizes={}))
# CHECK: args names the size 'num_tokens'
print(value_error(uq.emulate, res.output, kern["name"], kern["grid"],
                  kern["block"], [k, v, slots, alone, "num_tokens", 1],
                  sizes={"num_tokens": -1}))
# CHECK: sizes['num_tokens'] must be an integer >= 0, not -1
bad_json = dict(res.description)
bad_json["kernels"] = [dict(kk, name="other_" + kk["name"])
                       for kk in res.description["kernels"]]
print(value_error(uq.load, res.output, bad_json))
# CHECK: is not in the code object
print(value_error(prog.decode_attention, q, cache, bt, [2**40, 1, 1]))
# CHECK: operand 'seq_lens': not i32 values
print(value_error(uq.load, path, device="cuda"))
# CHECK: unknown device 'cuda' (emulator or hip)
try:
    uq.load(path, device="hip", hip_library="/nonexistent/libamdhip64.so")
except RuntimeError as e:
    print(e)
# CHECK: cannot load the HIP runtime '/nonexistent/libamdhip64.so'

# Split-K from Python: decode_attention_partial, then merge_partitions, with
# sinks; the merged result is the reference's with the same sinks.
PO, PM = f"tensor<?x{HQ}x2x{D}xf32>", f"tensor<?x{HQ}x2xf32>"
SPLIT = f"""
func.func @split(%q: {Q}, %c: {CACHE}, %bt: tensor<?x{max_blocks}xi32>, %lens: tensor<?xi32>, %s: tensor<{HQ}xf32>) -> {OUT} {{
  %o, %m, %l = uq.decode_attention_partial %q, %c, %bt, %lens scale 0.125 partition_size 64 {ATTRS} : ({Q}, {CACHE}, tensor<?x{max_blocks}xi32>, tensor<?xi32>) -> ({PO}, {PM}, {PM})
  %r = uq.merge_partitions %o, %m, %l sinks %s : ({PO}, {PM}, {PM}, tensor<{HQ}xf32>) -> {OUT}
  return %r : {OUT}
}}
"""
split = uq.load(uq.compile_with_description(SPLIT))
sinks = (rng.standard_normal(HQ) + 4).astype(np.float32)  # large: they matter
po, pm, ps = split.decode_attention_partial(q, cache, bt, lens)
print("partial", po.shape, pm.shape, ps.shape)
# CHECK: partial (3, 8, 2, 64) (3, 8, 2) (3, 8, 2)
merged = split.merge_partitions(po, pm, ps, sinks)
ref_sinks = uq.ref.decode_attention(q, cache, np.maximum(bt, 0), lens,
                                    scale=0.125, sinks=sinks)
print("merged", bool(np.abs(merged - ref_sinks).max() <= bound),
      bool(np.abs(merged - ref_out).max() > bound))
# CHECK: merged True True
print(value_error(split.merge_partitions, po, pm, ps))
# CHECK: missing operand 'sinks' [8] f32
print("done")
# CHECK: done
