# RUN: rm -rf %t && mkdir -p %t
# RUN: env PYTHONPATH=%uq_build/python-bindings UQ_HIP_LIBRARY=%uq_build/test/hip-standin/libamdhip64.so %python %s %uq_src/python-bindings/examples %t | FileCheck %s

# The serving-loop example (python-bindings/examples/serving_loop.py, a paged
# KV-cache manager over uq.load's runtime) for 16 steps: it checks every step
# against uq.ref itself (an AssertionError otherwise); here, that the run
# exercised what it is for: a batch that changes, prefill chunks next to
# decodes, blocks freed and reused, decode_attention calls. Then a short run
# from a code object on disk (--program) on the HIP device, whose library
# comes from $UQ_HIP_LIBRARY (the stand-in).

import sys

sys.path.insert(0, sys.argv[1])
import serving_loop  # noqa: E402

batches = []
orig = serving_loop.KVCacheManager.block_tables


def record(seqs):
    batches.append(tuple(s.sid for s in seqs))
    return orig(seqs)


serving_loop.KVCacheManager.block_tables = staticmethod(record)
stats = serving_loop.main(["--steps", "16", "--blocks", "40"])
# CHECK: device: emulator
# CHECK: step  0: batch
# CHECK: summary: steps=

assert stats["steps"] >= 14, stats
assert len(set(batches)) >= 4, batches          # the batch changes
assert stats["finished"] >= 1, stats            # blocks came back
assert stats["reused_blocks"] >= 1, stats       # and were handed out again
assert stats["prefill_tokens"] > 0 and stats["decode_tokens"] > 0, stats
assert stats["decode_calls"] >= 1, stats
assert stats["max_batch"] >= 2, stats
assert stats["worst"] <= 1.0, stats
print("serving loop ok", stats["steps"], "steps,", stats["finished"],
      "finished")
# CHECK: serving loop ok

import json  # noqa: E402
import os  # noqa: E402

import uq  # noqa: E402

res = uq.compile_with_description(
    serving_loop.program_ir(uq.native().slot_bytes(serving_loop.D)),
    partition_size=64)
path = os.path.join(sys.argv[2], "serving.hsaco")
open(path, "wb").write(res.output)
open(path + ".json", "w").write(json.dumps(res.description))
hip = serving_loop.main(["--steps", "3", "--program", path, "--device", "hip"])
print("hip from file", hip["steps"], "steps")
# CHECK: device: hip ({{.*}}hip-standin/libamdhip64.so)
# CHECK: hip from file 3 steps
