# RUN: env PYTHONPATH=%uq_build/python-bindings %python %s

# docs/accuracy.md's rotation note reads the per-head logit errors of the
# quality table by format spec: specs are written "uq:c=..." (and were
# "uq,c=..." in older results); both must give the means, never "nan" (the
# regenerated page of 2026-12-03 printed "nan" before this was fixed).
from uq.quality.doc import _rot_note

rotation = [{"sqnr_rot": 19.0, "sqnr_norot": 18.0},
            {"sqnr_rot": 18.5, "sqnr_norot": 19.0}]
for sep in (":", ","):
    quality = [
        {"format": f"uq{sep}c=0.156,norot", "logit_rel": 0.08},
        {"format": f"uq{sep}c=0.156,norot", "logit_rel": 0.10},
        {"format": f"uq{sep}c=0.156", "logit_rel": 0.06},
        {"format": f"uq{sep}c=0.156", "logit_rel": 0.04},
        {"format": "fp8", "logit_rel": 0.5},
    ]
    note = _rot_note({"rotation": rotation, "quality": quality})
    assert "nan" not in note, note
    # Means: (0.08 + 0.10) / 2 without rotation, (0.06 + 0.04) / 2 with.
    assert "0.0900 without rotation, 0.0500 with" in note, note
    assert "-0.50 to +1.00 dB" in note, note
print("ok")
