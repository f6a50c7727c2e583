# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# Precision-policy JSON: round trip, lookup rules (per-head beats per-layer),
# bits accounting, the static rule and the exhaustive optimiser on a
# hand-made sensitivity table.
import json
import os
import tempfile

from uq.quality.policy import SCHEMA, Policy, optimise, static_rule

p = Policy("uq", [{"layer": 0, "format": "bf16"},
                  {"layer": 0, "kv_head": 1, "format": "fp8"},
                  {"layer": 2, "kv_head": 0, "format": "uq:c=0.196,rotv"}])
assert p.spec(0, 0) == "bf16" and p.spec(0, 1) == "fp8" and p.spec(1, 0) == "uq"
assert p(0, 0) is None                       # BF16 = unquantised cache
assert p(2, 0).rotate_v and abs(p(2, 0).c_k - 0.196) < 1e-12
# (16 + 8 + 6 * 4.25) / 8 = 6.1875 bits/element
assert abs(p.bits_per_element(4, 2) - 6.1875) < 1e-12
assert p.first_quantised_layer(4, 2) == 0
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "p.json")
    p.save(path, 4, 2)
    raw = json.load(open(path))
    assert raw["schema"] == SCHEMA and raw["bits_per_element"] == 6.1875
    q = Policy.load(path)
    assert [q.spec(l, h) for l in range(4) for h in range(2)] == \
        [p.spec(l, h) for l in range(4) for h in range(2)]
    json.dump({"schema": "other", "default": "uq"}, open(path, "w"))
    try:
        Policy.load(path)
    except ValueError:
        pass
    else:
        raise AssertionError("wrong schema must be rejected")
try:
    Policy("uq:bogus")
except ValueError:
    pass
else:
    raise AssertionError("unknown format option must be rejected")

r = static_rule(4, 1)
assert [r.spec(l, 0) for l in range(4)] == ["bf16", "uq", "uq", "bf16"]
assert static_rule(4, 2).bits_per_element(4, 2) == 16.0

# Two units; uq costs 0.01 / 0.03, fp8 0.001 / 0.002. Budget 6.125 = (4.25 +
# 8) / 2: the best is fp8 on the costlier unit 1 (0.01 + 0.002 = 0.012).
sens = {"uq": {(0, None): 0.01, (1, None): 0.03}, "fp8": {(0, None): 0.001, (1, None): 0.002}}
pol, cost = optimise(sens, {"uq": 4.25, "fp8": 8.0, "bf16": 16.0}, 6.125, "uq")
assert abs(cost - 0.012) < 1e-12, cost
assert pol.overrides == [{"layer": 1, "format": "fp8"}], pol.overrides
print("ok")
