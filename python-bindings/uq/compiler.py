"""The uq compiler and the gfx950 emulator from Python.

Thin layer over the native module ``uq._uq`` (python-bindings/src/
CompilerBindings.cpp), which wraps the same library functions as
``uq-compile`` and the C API (``uq::compileSource``, ``uq::runPipeline``) and
the emulator library (``uq::emu``)::

    import uq
    hsaco = uq.compile(ir)                         # bytes of the code object
    res = uq.compile_with_description(ir)          # CompileResult
    res.kernels[0]["args"]                         # the kernel's arguments
    text = uq.compile(ir, emit="linalg")           # str for textual stages
    out = uq.run_pipeline(ir, "builtin.module(canonicalize)")
    stats = uq.emulate(hsaco, "kernel", grid=(4,), block=(64,), args=[a, b, n])

Errors in the IR raise :class:`CompileError`, whose ``diagnostics`` hold the
MLIR diagnostics text with locations.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import native as _native

#: Stages :func:`compile` can stop at; all but ``hsaco`` produce text.
EMIT_STAGES = ("linalg", "wave", "layouts", "lanes", "kernel", "rocdl",
               "llvmir", "isa", "hsaco")


def _module():
    return _native()


def _compiler():
    m = _module()
    if not getattr(m, "HAVE_COMPILER", False):
        raise NotImplementedError(
            "uq._uq was built without the compiler library (target UQTarget "
            "was not part of the build); rebuild _uq once lib/Target exists")
    return m


def _emulator():
    m = _module()
    if not getattr(m, "HAVE_EMULATOR", False):
        raise NotImplementedError(
            "uq._uq was built without the gfx950 emulator (target UQEmulator "
            "was not part of the build); rebuild _uq once lib/Emulator "
            "provides it")
    return m


def _compile_error_type():
    try:
        return _module().CompileError
    except ImportError:
        return _FallbackCompileError


class _FallbackCompileError(Exception):
    """Stands in for CompileError when the native module is not importable."""

    def __init__(self, diagnostics: str = ""):
        super().__init__(diagnostics)
        self.diagnostics = diagnostics


@dataclass(frozen=True)
class CompileResult:
    """Output of :func:`compile_with_description`.

    ``output`` is the code object (bytes) for ``emit="hsaco"`` and the text of
    the stage otherwise. ``description`` is the parsed kernel description the
    compiler emits with a code object (``{}`` for textual stages); ``kernels``
    is its list of kernels, each a dict with the arguments in order (offsets,
    sizes, kinds), the workgroup size, the grid rule, LDS and register
    counts.
    """

    output: Union[bytes, str]
    description: Dict[str, Any] = field(default_factory=dict)
    emit: str = "hsaco"

    @property
    def kernels(self) -> List[Dict[str, Any]]:
        d = self.description
        if isinstance(d, list):
            return d
        return list(d.get("kernels", []))

    def kernel(self, name: Optional[str] = None) -> Dict[str, Any]:
        """The kernel called ``name`` (or the only kernel if ``name`` is None)."""
        ks = self.kernels
        if name is None:
            if len(ks) != 1:
                raise ValueError(
                    f"the code object has {len(ks)} kernels; name one of "
                    f"{[k.get('name') for k in ks]}")
            return ks[0]
        for k in ks:
            if name in (k.get("name"), k.get("symbol")):
                return k
        raise KeyError(f"no kernel '{name}' in "
                       f"{[k.get('name') for k in ks]}")


def _check_stage(emit: str) -> None:
    if emit not in EMIT_STAGES:
        raise ValueError(f"unknown emit stage '{emit}' (expected one of "
                         f"{', '.join(EMIT_STAGES)})")


def compile_with_description(ir: str, chip: str = "gfx950",
                             emit: str = "hsaco", partition_size: int = 256,
                             *, filename: str = "<python>") -> CompileResult:
    """Compiles uq IR text; see :class:`CompileResult`.

    ``filename`` names the input in diagnostics. Raises :class:`CompileError`
    when the IR does not parse, verify or compile, ValueError for bad options.
    """
    _check_stage(emit)
    out, kernels_json = _compiler().compile(ir, chip, emit, partition_size,
                                            filename)
    description = json.loads(kernels_json) if kernels_json else {}
    output = out if emit == "hsaco" else out.decode("utf-8")
    return CompileResult(output=output, description=description, emit=emit)


def compile(ir: str, chip: str = "gfx950", emit: str = "hsaco",
            partition_size: int = 256, *,
            filename: str = "<python>") -> Union[bytes, str]:
    """Compiles uq IR text to ``emit``: the code object bytes for ``hsaco``,
    the stage's text (str) for the others."""
    return compile_with_description(ir, chip, emit, partition_size,
                                    filename=filename).output


def run_pipeline(ir: str, pipeline: str) -> str:
    """Parses ``ir``, runs the textual ``pipeline`` (as ``uq-opt
    --pass-pipeline=...``) and returns the printed result."""
    return _compiler().run_pipeline(ir, pipeline)


def kernel_info(code_object: bytes) -> List[Dict[str, Any]]:
    """The kernels of a code object as its AMDHSA metadata note lists them
    (read by the emulator's loader)."""
    return _emulator().kernel_info(bytes(code_object))


def _resolve_sizes(what: str, values: Sequence[Any],
                   sizes: Optional[Dict[str, int]]) -> List[Any]:
    """``values`` with each string (a size name of the kernel JSON, as in
    its ``grid`` and by-value arguments) replaced by ``sizes[name]``."""
    out = []
    for v in values:
        if isinstance(v, str):
            if sizes is None or v not in sizes:
                raise ValueError(f"{what} names the size '{v}': pass its "
                                 f"value in sizes= (given: "
                                 f"{sorted(sizes or {})})")
            n = sizes[v]
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
                    or n < 0:
                raise ValueError(f"sizes['{v}'] must be an integer >= 0, "
                                 f"not {n!r}")
            v = int(n)
        out.append(v)
    return out


def emulate(code_object: bytes, kernel: str, grid: Sequence[int],
            block: Sequence[int], args: Sequence[Any], *,
            max_instructions: int = 0, dynamic_lds: int = 0,
            sizes: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """Runs ``kernel`` of a gfx950 code object on the CPU emulator.

    ``grid`` counts workgroups and ``block`` work-items per workgroup (1 to 3
    dimensions each, like HIP's gridDim/blockDim). ``args`` are the explicit
    kernel arguments in order: numpy arrays (C-contiguous, writeable) or
    bytearrays for buffers, which are updated in place with the device
    contents after the run; ints, floats or numpy scalars for by-value
    arguments (Python numbers take the argument's size from the metadata).
    Returns the launch statistics (instruction mix, MFMA count, bytes moved,
    ``summary`` text). Raises ValueError on a bad launch or a fault.

    ``sizes`` maps the kernel JSON's size names (``num_seqs``,
    ``num_partitions``, ...) to values: a name in ``grid`` or in ``args``
    (for a by-value argument) stands for its value, so the JSON's ``grid``
    can be passed as it is. A name missing from ``sizes`` is a ValueError.
    """
    grid = _resolve_sizes("grid", grid, sizes)
    args = _resolve_sizes("args", args, sizes)
    return _emulator().emulate(bytes(code_object), kernel, list(grid),
                               list(block), list(args), max_instructions,
                               dynamic_lds)


def __getattr__(name):
    # uq.compiler.CompileError resolves to the native exception type.
    if name == "CompileError":
        return _compile_error_type()
    raise AttributeError(name)
