"""Model shapes, KV formats and their exact bytes, and the GPU's memory.

Bytes per cached token per KV head, K and V together (docs/serving.md, "KV
bytes"): BF16 ``4 D``, FP8 E4M3 ``2 D`` (one per-tensor scale, not per
token), UltraQuant ``2 (D/2 + D/32)`` = ``D + D/16``: FP4 codes, two per
byte, plus one UE8M0 byte per 32 channels, for K and for V
(../shared/docs/ultraquant-format.md); 136 B at D = 128.

A model's KV formats are a precision policy (docs/precision-policy.md) over
(layer, KV head); every ``uq`` spec maps to the one UltraQuant kernel
(``uq4``), ``fp8`` and ``bf16`` to theirs. Formats without a kernel (int4,
lloydmax) are refused: there is no time to give them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple

KERNEL_FORMATS = ("bf16", "fp8", "uq4")
GiB = float(1 << 30)


def kv_bytes_per_token_head(fmt: str, head_dim: int) -> float:
    """Exact K+V bytes of one token of one KV head in kernel format ``fmt``."""
    if fmt == "bf16":
        return 4.0 * head_dim
    if fmt == "fp8":
        return 2.0 * head_dim
    if fmt == "uq4":
        if head_dim % 32:
            raise ValueError(f"UltraQuant needs head_dim a multiple of 32, got {head_dim}")
        return 2.0 * (head_dim // 2 + head_dim // 32)
    raise ValueError(f"unknown kernel format {fmt!r} (one of {', '.join(KERNEL_FORMATS)})")


def kernel_format(spec: str) -> str:
    """Kernel format of a precision-policy format spec (validated by
    uq.quality.formats.parse_format)."""
    from ..quality.formats import parse_format

    parse_format(spec)              # ValueError on a bad spec
    name = spec.strip().partition(":")[0]
    if name in ("bf16", "fp8"):
        return name
    if name == "uq":
        return "uq4"
    raise ValueError(f"format {spec!r} has no serving kernel: the simulator knows bf16, "
                     "fp8 and uq[:...] only")


def transformer_params(hidden: int, layers: int, q_heads: int, kv_heads: int,
                       head_dim: int, ffn: int, vocab: int, experts: int = 0,
                       experts_per_token: int = 0, tied_embeddings: bool = False
                       ) -> Tuple[float, float, float]:
    """(total, active per token, routed-expert) parameter counts of a
    Llama-style decoder (gated MLP of 3 matrices; norms ignored). With
    ``experts`` > 0 every layer's MLP is ``experts`` routed experts of width
    ``ffn`` of which ``experts_per_token`` run per token."""
    attn = hidden * head_dim * (2 * q_heads + 2 * kv_heads)
    mlp = 3 * hidden * ffn
    emb = vocab * hidden * (1 if tied_embeddings else 2)
    head = vocab * hidden                    # the lm_head GEMM runs per token
    if experts:
        routed = layers * experts * mlp
        total = layers * attn + routed + emb
        active = layers * (attn + experts_per_token * mlp) + head
        return float(total), float(active), float(routed)
    total = layers * (attn + mlp) + emb
    active = layers * (attn + mlp) + head
    return float(total), float(active), 0.0


@dataclass
class ModelShape:
    """The served model as the simulator needs it (whole model, before TP)."""
    name: str
    layers: int
    q_heads: int
    kv_heads: int
    head_dim: int
    params_total: float              # parameters
    params_active: float             # parameters whose GEMMs run per token
    weight_bytes_per_param: float    # 2 (bf16) or 1 (fp8)
    weight_dtype: str = "bf16"       # MFMA rate of the GEMMs: bf16 | fp8
    routed_params: float = 0.0       # parameters in routed experts (MoE)
    experts: int = 0
    experts_per_token: int = 0
    source: str = ""

    def __post_init__(self):
        for k in ("layers", "q_heads", "kv_heads", "head_dim"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 4096:
                raise ValueError(f"model {k} must be an integer in [1, 4096], got {v!r}")
        if self.q_heads % self.kv_heads:
            raise ValueError(f"q_heads ({self.q_heads}) must be a multiple of kv_heads "
                             f"({self.kv_heads})")
        if self.weight_dtype not in ("bf16", "fp8"):
            raise ValueError(f"weight dtype must be bf16 or fp8, got {self.weight_dtype!r}")
        for k in ("params_total", "params_active", "weight_bytes_per_param"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0) or (
                    v == 0 and k != "weight_bytes_per_param"):
                raise ValueError(f"model {k} must be a finite number > 0 (weight bytes: "
                                 f">= 0), got {v!r}")

    @property
    def gqa(self) -> int:
        return self.q_heads // self.kv_heads

    @property
    def weight_bytes(self) -> float:
        return self.params_total * self.weight_bytes_per_param


def preset(name: str, shared_dir: Optional[str] = None) -> ModelShape:
    """Named model shapes (sources in docs/serving.md, "Models")."""
    if name == "llama-3.1-8b":
        # meta-llama/Llama-3.1-8B config.json: 4096 hidden, 32 layers, 32/8
        # heads of 128, MLP 14336, vocab 128256, untied: 8.03e9 parameters.
        t, a, _ = transformer_params(4096, 32, 32, 8, 128, 14336, 128256)
        return ModelShape("llama-3.1-8b", 32, 32, 8, 128, t, a, 2.0, "bf16",
                          source="Llama-3.1-8B shape (32 layers x 8 KV heads x 128, GQA 4), "
                                 "bf16 weights")
    if name == "gemma-2-9b":
        # google/gemma-2-9b config.json: 3584 hidden, 42 layers, 16/8 heads of
        # 256, MLP 14336, vocab 256000, tied: 9.24e9 parameters. Its sliding-
        # window layers are simulated as global (docs/serving.md, limits).
        t, a, _ = transformer_params(3584, 42, 16, 8, 256, 14336, 256000,
                                     tied_embeddings=True)
        return ModelShape("gemma-2-9b", 42, 16, 8, 256, t, a, 2.0, "bf16",
                          source="Gemma-2-9B shape (42 layers x 8 KV heads x 256, GQA 2), "
                                 "bf16 weights, all layers global attention")
    if name == "minimax-m2.5":
        # MiniMaxAI/MiniMax-M2.5 config.json: 3072 hidden, 62 layers, 48/8
        # heads of 128, 256 experts of width 1536, 8 per token, vocab 200064:
        # 2.29e11 parameters, 1.0e10 active; FP8 checkpoint.
        t, a, r = transformer_params(3072, 62, 48, 8, 128, 1536, 200064,
                                     experts=256, experts_per_token=8)
        return ModelShape("minimax-m2.5", 62, 48, 8, 128, t, a, 1.0, "fp8", r, 256, 8,
                          source="MiniMax-M2.5 shape (62 layers x 8 KV heads x 128, GQA 6, "
                                 "MoE 256x8), fp8 weights")
    if name == "shared-lm":
        from ..quality.data import default_shared_dir
        d = shared_dir or default_shared_dir()
        path = os.path.join(d, "lm", "manifest.json")
        from .limits import MAX_POLICY_BYTES, read_json
        man = read_json(path, "the shared LM's manifest", MAX_POLICY_BYTES)
        try:
            c = man["cfg"]
            t, a, _ = transformer_params(c["d"], c["layers"], c["hq"], c["hk"], c["hd"],
                                         c["ffn"], c["vocab"])
            t = float(man.get("params", t))
            return ModelShape("shared-lm", int(c["layers"]), int(c["hq"]), int(c["hk"]),
                              int(c["hd"]), t, a, 2.0, "bf16",
                              source=f"shared LM ({path})")
        except (KeyError, ValueError, TypeError) as e:
            raise ValueError(f"cannot read the shared LM's cfg from {path}: {e}")
    raise ValueError(f"unknown model {name!r} (one of: {', '.join(PRESETS)})")


PRESETS = ("llama-3.1-8b", "gemma-2-9b", "minimax-m2.5", "shared-lm")


@dataclass
class KVLayout:
    """Kernel format of every (layer, KV head) on one GPU."""
    formats: List[List[str]]          # [layer][kv head on this GPU]
    head_dim: int
    label: str

    @property
    def layers(self) -> int:
        return len(self.formats)

    def bytes_per_token(self) -> float:
        """K+V bytes of one token over all layers and heads on this GPU."""
        return sum(kv_bytes_per_token_head(f, self.head_dim) for row in self.formats for f in row)

    def layer_groups(self) -> List[Tuple[int, Tuple[Tuple[str, int], ...]]]:
        """[(number of layers, ((format, heads), ...))]: layers with the same
        per-format head counts share one attention cost."""
        counts: Dict[Tuple[Tuple[str, int], ...], int] = {}
        for row in self.formats:
            sig: Dict[str, int] = {}
            for f in row:
                sig[f] = sig.get(f, 0) + 1
            key = tuple(sorted(sig.items()))
            counts[key] = counts.get(key, 0) + 1
        return [(n, k) for k, n in sorted(counts.items())]

    def kernel_formats(self) -> List[str]:
        return sorted({f for row in self.formats for f in row})


def tp_heads(kv_heads: int, tp: int) -> Tuple[int, int]:
    """(KV heads per GPU, replication) under tensor parallelism ``tp``: heads
    are split when kv_heads >= tp, else replicated (vLLM's rule,
    vllm/model_executor/layers/linear.py QKVParallelLinear)."""
    if tp < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {tp}")
    if kv_heads >= tp:
        if kv_heads % tp:
            raise ValueError(f"{kv_heads} KV heads do not split over TP {tp}")
        return kv_heads // tp, 1
    if tp % kv_heads:
        raise ValueError(f"TP {tp} is not a multiple of {kv_heads} KV heads")
    return 1, tp // kv_heads


def kv_layout(model: ModelShape, policy, tp: int = 1, label: str = "") -> KVLayout:
    """Per-GPU kernel formats of ``policy`` (a uq.quality.policy.Policy or a
    format spec string) for ``model``. With TP the heads of the GPU with the
    most KV bytes per token are returned (it binds vLLM's block count)."""
    from ..quality.policy import Policy

    if isinstance(policy, str):
        pol = Policy(policy)
        label = label or policy
    else:
        pol = policy
    for o in pol.overrides:
        if not 0 <= o["layer"] < model.layers:
            raise ValueError(f"policy names layer {o['layer']}, the model has "
                             f"{model.layers} layers")
        h = o.get("kv_head")
        if h is not None and not 0 <= h < model.kv_heads:
            raise ValueError(f"policy names KV head {h}, the model has {model.kv_heads}")
    full = [[kernel_format(pol.spec(l, h)) for h in range(model.kv_heads)]
            for l in range(model.layers)]
    per, rep = tp_heads(model.kv_heads, tp)
    ranks = []
    for r in range(tp):
        h0 = (r // rep) * per
        ranks.append([row[h0:h0 + per] for row in full])
    lay = [KVLayout(rk, model.head_dim, label) for rk in ranks]
    return max(lay, key=lambda x: x.bytes_per_token())


@dataclass
class Hardware:
    """One GPU. Defaults: AMD Instinct MI355X (sources in docs/serving.md,
    "Hardware"): 288 GiB HBM3E at 8 TB/s peak, 256 CUs at 2.4 GHz, dense
    MFMA FLOPs per CU per clock 4096 (bf16), 8192 (fp8), 16384 (fp4)."""
    name: str = "MI355X"
    hbm_gib: float = 288.0
    hbm_tb_s: float = 8.0
    cus: int = 256
    clock_ghz: float = 2.4
    flops_per_clk_cu: Dict[str, float] = field(
        default_factory=lambda: {"bf16": 4096.0, "fp8": 8192.0, "fp4": 16384.0})
    # Fractions of peak that a good kernel reaches (assumptions, documented).
    bw_eff: float = 0.625            # 5 TB/s of 8: ../shared/docs/gfx950-notes.md
    mfma_eff: float = 0.6

    def __post_init__(self):
        for k in ("hbm_gib", "hbm_tb_s", "cus", "clock_ghz", "bw_eff", "mfma_eff"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"hardware {k} must be a positive number, got {v!r}")
        if self.bw_eff > 1 or self.mfma_eff > 1:
            raise ValueError("efficiencies are fractions of peak (<= 1)")

    def peak_flops(self, dtype: str) -> float:
        return self.flops_per_clk_cu[dtype] * self.cus * self.clock_ghz * 1e9

    @property
    def bw_bytes_s(self) -> float:
        return self.hbm_tb_s * 1e12 * self.bw_eff


def kv_budget_bytes(hw: Hardware, model: ModelShape, tp: int, gmu: float,
                    reserved_gib: float) -> float:
    """vLLM's KV-cache budget on one GPU: ``gmu`` x HBM minus this GPU's
    share of the weights minus the activation/graph reserve (vLLM measures it
    in a profiling run; here a parameter)."""
    if not 0 < gmu <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gmu}")
    b = gmu * hw.hbm_gib * GiB - model.weight_bytes / tp - reserved_gib * GiB
    if b <= 0:
        raise ValueError(
            f"no room for a KV cache: {gmu} x {hw.hbm_gib} GiB - weights "
            f"{model.weight_bytes / tp / GiB:.1f} GiB/GPU - reserve {reserved_gib} GiB <= 0")
    return b


def with_overrides(m: ModelShape, **kw) -> ModelShape:
    kw = {k: v for k, v in kw.items() if v is not None}
    return replace(m, **kw) if kw else m
