"""uq.serving: a multi-turn serving simulator on the kernels' own numbers.

A discrete-event model of a vLLM-like engine (paged KV blocks, a prefix cache
with LRU eviction, recompute on a miss, continuous batching, chunked prefill)
serving rounds of concurrent agent sessions, for BF16, FP8 and UltraQuant
KV caches (or any precision policy). Its inputs are measured or exact parts:

- the formats' exact bytes per cached token (``model.py``);
- attention kernel times from the timing-model table that
  ``uq-kernel-report --table`` writes (``kernels.KernelTable``), or, clearly
  labelled as not measured, a roofline (``kernels.RooflineKernels``);
- the model's GEMM time (``kernels.GemmModel``) and the GPU's memory
  (``model.Hardware``).

Entry points: ``python3 -m uq.serving`` / ``build/bin/uq-serving``
(``__main__.py``); the pieces are importable for tests. See docs/serving.md.
Pure Python + numpy (matplotlib for plots only); the native module is not
needed.
"""

from .engine import BlockPool, EngineConfig, Simulator  # noqa: F401
from .kernels import (ExtrapolationError, GemmModel, KernelTable,  # noqa: F401
                      RooflineKernels)
from .model import Hardware, ModelShape, kv_bytes_per_token_head  # noqa: F401
from .workload import SessionPlan, Workload  # noqa: F401

__all__ = ["BlockPool", "EngineConfig", "Simulator", "ExtrapolationError", "GemmModel",
           "KernelTable", "RooflineKernels", "Hardware", "ModelShape",
           "kv_bytes_per_token_head", "SessionPlan", "Workload"]
