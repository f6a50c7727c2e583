"""Run the uq ops of a compiled code object: ``uq.load``.

A thin layer over the C++ launch runtime (``uq::launch::Program``,
include/uq/Runtime/Launch.h; docs/runtime.md)::

    prog = uq.load("attn.hsaco")            # + attn.hsaco.json
    cache = prog.cache_write(k, v, slot_mapping, cache)
    out = prog.decode_attention(q, cache, block_tables, seq_lens)
    out = prog.paged_attention(q, cache, block_tables, seq_lens,
                               query_start_loc)

Each call takes the op's operands, infers the run-time sizes from their
shapes, checks dtypes, shapes and index values against the kernel JSON,
allocates the workspaces, picks the partition count and the grids by the
JSON's rules, launches the kernels in order and returns the outputs as numpy
arrays. Bad input raises ValueError before anything runs.

Operands are numpy arrays or any object with ``__dlpack__`` on the CPU
(``np.from_dlpack``; a torch bfloat16 tensor is taken as its int16 bits);
Python lists take the operand's dtype (index operands: ``[3, 0, 1]``).
numpy has no bfloat16: a bf16 operand is a uint16 (or int16) array of bit
patterns, and a bf16 output comes back as uint16 bits. The cache is uint8
(int8 is accepted).
"""

import json as _json
import os
import sys
from typing import Any, Dict, Mapping, Optional

import numpy as np

from . import native as _native

# The kernel JSON's element types as numpy dtypes (bf16: its bits).
_NUMPY = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32,
          "f64": np.float64, "i8": np.int8, "u8": np.uint8,
          "i16": np.int16, "u16": np.uint16, "i32": np.int32,
          "u32": np.uint32, "i64": np.int64, "u64": np.uint64}
_NAMES = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
          np.dtype(np.float64): "f64", np.dtype(np.int8): "i8",
          np.dtype(np.uint8): "u8", np.dtype(np.int16): "i16",
          np.dtype(np.uint16): "u16", np.dtype(np.int32): "i32",
          np.dtype(np.uint32): "u32", np.dtype(np.int64): "i64",
          np.dtype(np.uint64): "u64"}


def _launch_module():
    m = _native()
    if not hasattr(m, "load_program"):
        raise NotImplementedError(
            "uq._uq was built without the launch runtime (target UQLaunch "
            "was not part of the build)")
    return m


def _to_numpy(x: Any, name: str, expected: str = "") -> np.ndarray:
    """An ndarray of ``x``: numpy arrays as they are, DLPack tensors through
    np.from_dlpack (torch bf16 as int16 bits), Python lists and tuples (which
    have no dtype) as the operand's ``expected`` dtype."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):
            if x.dtype == torch.bfloat16:
                x = x.view(torch.int16)
            if x.device.type != "cpu":
                raise ValueError(f"operand '{name}': a {x.device} tensor; the "
                                 "runtime copies from host memory (.cpu())")
        try:
            return np.from_dlpack(x)
        except (TypeError, BufferError, RuntimeError, ValueError) as e:
            raise ValueError(f"operand '{name}': cannot import it through "
                             f"DLPack: {e}") from None
    if isinstance(x, (list, tuple)):
        a = np.asarray(x)
        if expected not in _NUMPY or expected == "bf16":
            return a
        want = np.dtype(_NUMPY[expected])
        if want.kind in "iu":
            # numpy would wrap out-of-range integers silently.
            info = np.iinfo(want)
            if a.size and (a.dtype.kind not in "iu" or a.min() < info.min
                           or a.max() > info.max):
                raise ValueError(f"operand '{name}': not {expected} values")
        return a.astype(want)
    raise ValueError(f"operand '{name}': expected a numpy array or a DLPack "
                     f"tensor, got {type(x).__name__}")


def _dtype_name(a: np.ndarray, expected: str, name: str) -> str:
    """The JSON dtype ``a`` stands for, given the operand's ``expected``
    one: 16-bit integers are bf16 bits where bf16 is expected."""
    got = _NAMES.get(a.dtype)
    if got is None:
        raise ValueError(f"operand '{name}' must be {expected}, not numpy "
                         f"{a.dtype}")
    if expected == "bf16" and got in ("u16", "i16"):
        return "bf16"
    return got


class Program:
    """A loaded code object and its kernel JSON (see :func:`load`)."""

    def __init__(self, native_program):
        self._p = native_program
        self.ops = native_program.ops()
        self._inputs = {op["name"]: {b["name"]: b for b in op["inputs"]}
                        for op in self.ops}

    @property
    def device(self) -> str:
        """"emulator", or "hip (<path of libamdhip64.so>)"."""
        return self._p.device

    def _op(self, op: Optional[str], kind: str) -> str:
        if op is not None:
            found = [o for o in self.ops if o["name"] == op]
            if not found:
                raise ValueError(f"the program has no op '{op}'; it has "
                                 f"{[o['name'] for o in self.ops]}")
            if found[0]["kind"] != kind:
                raise ValueError(f"op '{op}' is a {found[0]['kind']}, not a "
                                 f"{kind}")
            return op
        found = [o["name"] for o in self.ops if o["kind"] == kind]
        if not found:
            raise ValueError(f"the program has no {kind} op; it has "
                             f"{[(o['name'], o['kind']) for o in self.ops]}")
        if len(found) > 1:
            raise ValueError(f"the program has several {kind} ops {found}: "
                             "pass op=")
        return found[0]

    def _operands(self, op: str, operands: Mapping[str, Any]):
        specs = self._inputs.get(op)
        if specs is None:
            raise ValueError(f"the program has no op '{op}'")
        packed = {}
        for name, x in operands.items():
            if x is None:
                continue
            expected = specs[name]["dtype"] if name in specs else ""
            a = _to_numpy(x, name, expected)
            packed[name] = (_dtype_name(a, expected, name),
                            np.ascontiguousarray(a))
        return packed

    def plan(self, op: str, operands: Mapping[str, Any],
             sizes: Optional[Mapping[str, int]] = None,
             check_indices: bool = True) -> Dict[str, int]:
        """Every run-time size ``op`` would run with (operands checked as
        :meth:`run` does; nothing runs)."""
        return self._p.plan(op, self._operands(op, operands),
                            dict(sizes or {}), check_indices)

    def run(self, op: str, operands: Mapping[str, Any],
            sizes: Optional[Mapping[str, int]] = None,
            check_indices: bool = True) -> Dict[str, np.ndarray]:
        """Runs the op named ``op`` ("decode_0", or its kind when the
        program has one op of it) on operands named as in the kernel JSON;
        returns its outputs by name. ``sizes`` gives the sizes no operand
        shape gives (``num_partitions``; default by the JSON's rule);
        ``check_indices=False`` leaves out-of-range indices to the kernels'
        clamps (docs/kernel-input-policy.md)."""
        if op not in self._inputs:
            op = self._op(None, op.removeprefix("uq."))
        out = self._p.run(op, self._operands(op, operands),
                          dict(sizes or {}), check_indices)
        return {name: np.frombuffer(buf, dtype=_NUMPY[dt]).reshape(shape)
                for name, (dt, shape, buf) in out.items()}

    def cache_write(self, k, v, slot_mapping, cache, *, k_mean=None,
                    v_mean=None, op: Optional[str] = None,
                    check_indices: bool = True) -> np.ndarray:
        """``uq.cache_write``: codes ``k``, ``v`` [num_tokens, num_kv_heads,
        head_dim] into the slots ``slot_mapping`` (int64; negative: skip)
        of ``cache`` (uint8 [num_blocks, block_size, num_kv_heads,
        slot_bytes]); returns the new cache (``cache`` is not modified)."""
        op = self._op(op, "cache_write")
        return self.run(op, {"key": k, "value": v,
                             "slot_mapping": slot_mapping, "cache": cache,
                             "k_mean": k_mean, "v_mean": v_mean},
                        check_indices=check_indices)["cache"]

    def decode_attention(self, q, cache, block_tables, seq_lens, sinks=None,
                         *, k_mean=None, v_mean=None, op: Optional[str] = None,
                         num_partitions: Optional[int] = None,
                         check_indices: bool = True) -> np.ndarray:
        """``uq.decode_attention``: one query token per sequence, q
        [num_seqs, num_q_heads, head_dim] -> out of the same shape."""
        op = self._op(op, "decode_attention")
        sizes = {} if num_partitions is None else {
            "num_partitions": num_partitions}
        return self.run(op, {"query": q, "cache": cache,
                             "block_tables": block_tables,
                             "seq_lens": seq_lens, "sinks": sinks,
                             "k_mean": k_mean, "v_mean": v_mean},
                        sizes, check_indices)["out"]

    def paged_attention(self, q, cache, block_tables, seq_lens,
                        query_start_loc, sinks=None, *, k_mean=None,
                        v_mean=None, op: Optional[str] = None,
                        num_partitions: Optional[int] = None,
                        check_indices: bool = True) -> np.ndarray:
        """``uq.paged_attention``: prefill chunks and decodes in one batch;
        sequence s owns query tokens query_start_loc[s] ..
        query_start_loc[s+1] - 1 and has seq_lens[s] tokens in the cache
        (its new ones included). q [num_tokens, num_q_heads, head_dim] ->
        out of the same shape."""
        op = self._op(op, "paged_attention")
        sizes = {} if num_partitions is None else {
            "num_partitions": num_partitions}
        return self.run(op, {"query": q, "cache": cache,
                             "block_tables": block_tables,
                             "seq_lens": seq_lens,
                             "query_start_loc": query_start_loc,
                             "sinks": sinks, "k_mean": k_mean,
                             "v_mean": v_mean},
                        sizes, check_indices)["out"]

    def decode_attention_partial(self, q, cache, block_tables, seq_lens, *,
                                 k_mean=None, op: Optional[str] = None,
                                 num_partitions: Optional[int] = None,
                                 check_indices: bool = True):
        """``uq.decode_attention_partial``: (partial_out, partial_max,
        partial_sum) of every split-K partition."""
        op = self._op(op, "decode_attention_partial")
        sizes = {} if num_partitions is None else {
            "num_partitions": num_partitions}
        r = self.run(op, {"query": q, "cache": cache,
                          "block_tables": block_tables, "seq_lens": seq_lens,
                          "k_mean": k_mean}, sizes, check_indices)
        return r["partial_out"], r["partial_max"], r["partial_sum"]

    def merge_partitions(self, partial_out, partial_max, partial_sum,
                         sinks=None, *, op: Optional[str] = None) -> np.ndarray:
        """``uq.merge_partitions``: the attention output of partial
        results."""
        op = self._op(op, "merge_partitions")
        return self.run(op, {"partial_out": partial_out,
                             "partial_max": partial_max,
                             "partial_sum": partial_sum,
                             "sinks": sinks})["out"]


def load(source, kernels_json=None, *, device: str = "emulator",
         hip_library: Optional[str] = None) -> Program:
    """Loads a code object for :class:`Program`'s calls.

    ``source``: a path (the JSON is read from ``<path>.json`` unless
    ``kernels_json`` is given), the code object's bytes (``kernels_json``
    then required: the JSON text, its parsed dict, or a path), or a
    :class:`uq.CompileResult`. ``device``: "emulator" (the CPU gfx950
    emulator) or "hip" (``libamdhip64.so`` loaded at run time;
    ``hip_library`` names another path, default ``$UQ_HIP_LIBRARY`` or the
    loader's search path). Raises ValueError for a JSON that does not
    describe the code object.
    """
    m = _launch_module()
    if hasattr(source, "output") and hasattr(source, "description"):
        code, desc = source.output, source.description
        if not isinstance(code, (bytes, bytearray)):
            raise ValueError("the CompileResult holds no code object "
                             f"(emit={getattr(source, 'emit', '?')})")
        kernels_json = kernels_json if kernels_json is not None else desc
    elif isinstance(source, (bytes, bytearray, memoryview)):
        code = bytes(source)
        if kernels_json is None:
            raise ValueError("a code object given as bytes needs its kernel "
                             "JSON (kernels_json=)")
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            code = f.read()
        if kernels_json is None:
            kernels_json = os.fspath(source) + ".json"
    else:
        raise ValueError("uq.load takes a path, bytes or a CompileResult, "
                         f"not {type(source).__name__}")
    if isinstance(kernels_json, (dict, list)):
        text = _json.dumps(kernels_json)
    elif isinstance(kernels_json, os.PathLike) or (
            isinstance(kernels_json, str)
            and not kernels_json.lstrip().startswith("{")):
        with open(kernels_json, "r") as f:
            text = f.read()
    else:
        text = kernels_json
    if device not in ("emulator", "hip"):
        raise ValueError(f"unknown device '{device}' (emulator or hip)")
    return Program(m.load_program(bytes(code), text, device,
                                  hip_library or ""))


__all__ = ["load", "Program"]
