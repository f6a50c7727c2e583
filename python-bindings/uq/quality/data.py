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
    #: The text the eval windows index (None: the manifest's val.txt).
    text_path: Optional[str] = None
    #: Window starts set by use_text (None: the manifest's eval windows).
    _windows: Optional[List[int]] = None

    @property
    def val_bytes(self) -> bytes:
        """The evaluated text (val.txt unless use_text chose another)."""
        if self._val is None:
            with open(self.text_path or os.path.join(self.root, "val.txt"), "rb") as f:
                self._val = f.read()
        return self._val

    @property
    def is_reference_text(self) -> bool:
        """True when the text and windows are the manifest's own."""
        return self.text_path is None and self._windows is None

    @property
    def eval_windows(self) -> List[int]:
        if self._windows is not None:
            return list(self._windows)
        ev = self.manifest.get("eval_windows", {})
        if "val.txt" not in ev:
            raise DataError("the manifest has no eval_windows['val.txt']; give the "
                            "windows with --windows-file")
        return list(ev["val.txt"])

    @property
    def reference_bpb(self) -> Dict[str, float]:
        """The manifest's bits/byte per KV format (results.eval.val), for its
        own text and windows; empty when the manifest has none or another
        text or window list is evaluated."""
        if not self.is_reference_text:
            return {}
        try:
            return dict(self.manifest["results"]["eval"]["val"])
        except (KeyError, TypeError):
            return {}

    def set_text(self, path: str):
        """Evaluate on the bytes of ``path`` instead of val.txt."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise DataError(f"--text {path}: {e.strerror or e}") from None
        self.text_path, self._val = path, data

    def use_text(self, path: Optional[str] = None, windows: Optional[List[int]] = None,
                 length: int = 1024):
        """Evaluate on the bytes of ``path`` (default: val.txt) at the window
        starts ``windows`` (default: the manifest's). Every window must have
        ``length`` input bytes and one more target byte inside the text."""
        if path is not None:
            self.set_text(path)
        if windows is not None:
            self._windows = [int(w) for w in windows]
        check_windows(self.eval_windows, len(self.val_bytes), length,
                      self.text_path or "val.txt")

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


class DataError(ValueError):
    """A user-facing problem with the shared data, a text or a window list
    (the CLI prints its message as a usage error)."""


def check_windows(windows: List[int], text_len: int, length: int = 1024,
                  name: str = "text") -> None:
    """Every start s needs bytes [s, s + length] (inputs and targets)."""
    if not windows:
        raise DataError("the window list is empty")
    for s in windows:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise DataError(f"window start {s!r} is not an integer")
        if s < 0 or s + length + 1 > text_len:
            raise DataError(f"window start {s} is outside {name}: a window needs bytes "
                            f"[s, s + {length + 1}) and the text has {text_len} bytes "
                            f"(valid starts 0..{text_len - length - 1})")


def load_windows(path: str) -> List[int]:
    """Window starts from JSON: a list of integers, or an object with a
    ``windows`` list (as written by ``uq-quality``)."""
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise DataError(f"--windows-file {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise DataError(f"--windows-file {path}: not JSON ({e})") from None
    if isinstance(d, dict):
        d = d.get("windows")
    if not isinstance(d, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                          for x in d):
        raise DataError(f"--windows-file {path}: expected a JSON list of integer window "
                        "starts, or {\"windows\": [...]}")
    return d


def spaced_windows(text_len: int, n: int, length: int = 1024) -> List[int]:
    """n window starts evenly spaced over a text (first at 0, last at the
    last valid start); for a text without a window file."""
    last = text_len - length - 1
    if last < 0:
        raise DataError(f"the text has {text_len} bytes; one window needs {length + 1}")
    if n == 1:
        return [0]
    return sorted({int(round(i * last / (n - 1))) for i in range(n)})


def _read_tensor(root: str, t: dict) -> np.ndarray:
    if t["dtype"] != "bf16":
        raise ValueError(f"unsupported dtype {t['dtype']} for {t['name']}")
    n = int(np.prod(t["shape"]))
    raw = np.fromfile(os.path.join(root, t["file"]), dtype="<u2", count=n,
                      offset=int(t["offset"]))
    return bf16_bits_to_f32(raw).reshape(t["shape"])


def lm_root(shared: Optional[str] = None) -> str:
    """The ``lm`` folder of a shared-data folder; the ``lm`` folder itself is
    accepted too. DataError when neither holds a manifest.json."""
    base = shared or default_shared_dir()
    for root in (os.path.join(base, "lm"), base):
        if os.path.isfile(os.path.join(root, "manifest.json")):
            return root
    raise DataError(f"--shared {base}: neither {os.path.join(base, 'lm', 'manifest.json')} "
                    "nor manifest.json there (give the shared-data folder that holds lm/)")


def load_lm(shared: Optional[str] = None, with_weights: bool = True) -> LM:
    root = lm_root(shared)
    try:
        with open(os.path.join(root, "manifest.json")) as f:
            manifest = json.load(f)
        cfg = dict(manifest["cfg"])
        tensors = manifest["tensors"]
    except json.JSONDecodeError as e:
        raise DataError(f"{root}/manifest.json is not JSON ({e})") from None
    except (KeyError, TypeError) as e:
        raise DataError(f"{root}/manifest.json lacks {e} (needs cfg and tensors)") from None
    lm = LM(root=root, manifest=manifest, cfg=cfg)
    if with_weights:
        try:
            for t in tensors:
                if t["file"] == "weights.bin":
                    lm.weights[t["name"]] = _read_tensor(root, t)
        except (OSError, ValueError, KeyError) as e:
            raise DataError(f"{root}: cannot read the weights ({e})") from None
    return lm
