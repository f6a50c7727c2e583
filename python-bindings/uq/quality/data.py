"""Loading the shared LM: manifest, bf16 tensors, held-out text, activations.

The manifest (``<shared>/lm/manifest.json``) lists every tensor with its dtype
(``bf16``: raw little-endian bf16 bit patterns), shape, byte offset and file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np


def default_shared_dir() -> str:
    """``$UQ_SHARED_DIR``, else ``../shared`` beside the source tree, else
    ``/work/shared``."""
    env = os.environ.get("UQ_SHARED_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.realpath(__file__))
    for up in range(2, 6):
        cand = os.path.realpath(os.path.join(here, *([".."] * up), "shared"))
        if os.path.isfile(os.path.join(cand, "lm", "manifest.json")):
            return cand
    return "/work/shared"


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """uint16 bf16 bit patterns -> float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bf16 (ties to even), returned as float32.

    NaN stays NaN (quiet); values that round past the bf16 maximum become Inf,
    as in torch's float->bfloat16 conversion.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    out = r.view(np.float32)
    nan = np.isnan(x)
    if nan.any():
        out = out.copy()
        out[nan] = np.nan
    return out


@dataclass
class LM:
    """The shared model: config, weights (float32 holding bf16 values), text."""

    root: str
    manifest: dict
    cfg: dict
    weights: Dict[str, np.ndarray] = field(default_factory=dict)
    _val: Optional[bytes] = None

    @property
    def val_bytes(self) -> bytes:
        if self._val is None:
            with open(os.path.join(self.root, "val.txt"), "rb") as f:
                self._val = f.read()
        return self._val

    @property
    def eval_windows(self) -> List[int]:
        return list(self.manifest["eval_windows"]["val.txt"])

    @property
    def reference_bpb(self) -> Dict[str, float]:
        """The manifest's bits/byte per KV format (results.eval.val)."""
        return dict(self.manifest["results"]["eval"]["val"])

    def tensor(self, name: str) -> np.ndarray:
        for t in self.manifest["tensors"]:
            if t["name"] == name:
                return _read_tensor(self.root, t)
        raise KeyError(f"no tensor {name!r} in the manifest")

    def activations(self, layer: int) -> Dict[str, np.ndarray]:
        """Post-RoPE q [2,1024,4,128], k [2,1024,2,128], v [2,1024,2,128]."""
        return {n: self.tensor(f"layer{layer}.{n}") for n in ("q", "k", "v")}

    def activation_windows(self) -> List[int]:
        """Start offsets in val.txt of the activation sequences ([1000, 500000])."""
        import re

        return [int(a) for a, _ in re.findall(r"\[(\d+),(\d+)\)",
                                               self.manifest["activation_tokens"])]


def _read_tensor(root: str, t: dict) -> np.ndarray:
    if t["dtype"] != "bf16":
        raise ValueError(f"unsupported dtype {t['dtype']} for {t['name']}")
    n = int(np.prod(t["shape"]))
    raw = np.fromfile(os.path.join(root, t["file"]), dtype="<u2", count=n,
                      offset=int(t["offset"]))
    return bf16_bits_to_f32(raw).reshape(t["shape"])


def load_lm(shared: Optional[str] = None, with_weights: bool = True) -> LM:
    root = os.path.join(shared or default_shared_dir(), "lm")
    with open(os.path.join(root, "manifest.json")) as f:
        manifest = json.load(f)
    lm = LM(root=root, manifest=manifest, cfg=dict(manifest["cfg"]))
    if with_weights:
        for t in manifest["tensors"]:
            if t["file"] == "weights.bin":
                lm.weights[t["name"]] = _read_tensor(root, t)
    return lm
