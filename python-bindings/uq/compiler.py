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
    --pass-pipeline=...``) and returns the printed result. ValueError for a
    pipeline that is not a string or names no pass at all (an empty one
    would return the input unchanged as if it had run)."""
    if not isinstance(pipeline, str):
        raise TypeError(f"pipeline must be a str, got {type(pipeline).__name__}")
    if not pipeline.strip():
        raise ValueError("the pass pipeline is empty: name the passes, e.g. "
                         "'builtin.module(canonicalize)'")
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


#: numpy dtypes a buffer of each description dtype must have (by name,
#: numpy.dtype(x).name): exactly these, nothing is converted. numpy has no
#: bfloat16 or FP8 type, so bf16 buffers are their 16-bit patterns (uint16 or
#: int16) and FP8 ones their bytes (uint8 or int8).
BUFFER_DTYPES = {
    "f32": ("float32",), "f64": ("float64",), "f16": ("float16",),
    "bf16": ("uint16", "int16"),
    "i8": ("int8",), "u8": ("uint8",), "i16": ("int16",), "u16": ("uint16",),
    "i32": ("int32",), "u32": ("uint32",), "i64": ("int64",), "u64": ("uint64",),
    "fp8": ("uint8", "int8"), "bf8": ("uint8", "int8"),
    "f8E4M3FN": ("uint8", "int8"), "f8E5M2": ("uint8", "int8"),
}
#: Element kinds numpy arrays may have at all (bool, signed and unsigned
#: integers, floats, complex): an object, string, structured or datetime
#: array is refused even without a description (its bytes would be
#: pointers or text, and the kernel would write over them).
NUMERIC_KINDS = "biufc"


def _check_buffer(where: str, a, dtype: Optional[str]) -> None:
    import numpy as np
    if not isinstance(a, np.ndarray):
        return                                  # bytearray: raw bytes
    if a.dtype.kind not in NUMERIC_KINDS or a.dtype.hasobject:
        raise ValueError(f"{where}: a numpy array of dtype {a.dtype} is not a numeric "
                         "buffer (bool, integer, float or complex elements only)")
    if dtype is None:
        return
    ok = BUFFER_DTYPES.get(dtype)
    if ok is None:
        raise ValueError(f"{where}: the description's dtype {dtype!r} is unknown")
    if a.dtype.name not in ok or a.dtype.byteorder == ">":
        raise ValueError(f"{where}: the kernel takes {dtype} elements, so the array must be "
                         f"{' or '.join(ok)} (little-endian); got {a.dtype} (nothing is "
                         "converted: use a.astype(...))")


def _check_scalar(where: str, v, dtype: str) -> Any:
    """The by-value argument ``v`` for a ``dtype`` scalar: a numpy scalar of
    exactly that dtype, a Python int for an integer, a Python int or float
    for a float (an int is converted to the float type)."""
    import numpy as np
    is_float = dtype in ("f32", "f64", "f16", "bf16")
    if isinstance(v, bool) or isinstance(v, np.bool_):
        raise TypeError(f"{where}: bool is not a kernel argument type")
    if isinstance(v, np.generic):
        ok = BUFFER_DTYPES.get(dtype, ())
        if v.dtype.name not in ok or dtype == "bf16":
            raise ValueError(f"{where}: the kernel takes this scalar as {dtype}; got a "
                             f"numpy {v.dtype}")
        return v
    if isinstance(v, int):
        if is_float:
            return {"f32": np.float32, "f64": np.float64, "f16": np.float16}[dtype](v) \
                if dtype != "bf16" else v
        return v
    if isinstance(v, float):
        if not is_float:
            raise ValueError(f"{where}: the kernel takes this scalar as {dtype} (an "
                             f"integer); got the float {v!r}")
        return v
    raise TypeError(f"{where}: pass an int, a float or a numpy scalar")


def _resolve_shape(shape, scalars: Dict[str, Any]) -> Optional[int]:
    n = 1
    for d in shape:
        if isinstance(d, str):
            v = scalars.get(d)
            if v is None:
                return None
            d = int(v)
            if d < 0:
                raise ValueError(f"dimension {shape} names {d!r}, which is negative")
        n *= int(d)
    return n


def emulate(code_object, kernel: str, grid: Sequence[int],
            block: Sequence[int], args: Sequence[Any], *,
            max_instructions: int = 0, dynamic_lds: int = 0,
            description: Optional[Dict[str, Any]] = None,
            sizes: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """Runs ``kernel`` of a gfx950 code object on the CPU emulator.

    ``grid`` counts workgroups and ``block`` work-items per workgroup (1 to 3
    dimensions each, like HIP's gridDim/blockDim). ``args`` are the explicit
    kernel arguments in order: numpy arrays (C-contiguous, writeable, of a
    numeric dtype) or bytearrays (raw bytes) for buffers, which are updated
    in place with the device contents after the run; ints, floats or numpy
    scalars for by-value arguments (Python numbers take the argument's size
    from the metadata).

    ``code_object`` is the code object's bytes, or a :class:`CompileResult`,
    whose description of ``kernel`` is then used like ``description=``.
    With a description (the kernel's entry of the JSON ``uq-compile``
    writes, ``CompileResult.kernel(name)``) every argument is checked
    against it before the launch and nothing is converted: a buffer's numpy
    dtype must be the one ``BUFFER_DTYPES`` gives for its dtype (``f32`` ->
    float32, ``i32`` -> int32, ``bf16`` -> uint16 or int16 bit patterns,
    ...) and its size the shape's, with symbolic dimensions taken from the
    by-value arguments; a by-value integer must be an int or a numpy scalar
    of its dtype (a float is an error), a by-value float a float, an int
    (converted to it) or a numpy scalar of its dtype. Without one, buffers
    are taken as raw bytes (any numeric dtype; object, string, structured
    or datetime arrays are refused). Returns the launch statistics
    (instruction mix, MFMA count, bytes moved, ``summary`` text). Raises
    ValueError on a bad launch or a fault, TypeError for an argument of a
    type that is neither a buffer nor a scalar.

    ``sizes`` maps the kernel JSON's size names (``num_seqs``,
    ``num_partitions``, ...) to values: a name in ``grid`` or in ``args``
    (for a by-value argument) stands for its value, so the JSON's ``grid``
    can be passed as it is. A name missing from ``sizes`` is a ValueError.
    """
    # Size names first: the checks below take numbers only.
    grid = _resolve_sizes("grid", grid, sizes)
    args = _resolve_sizes("args", args, sizes)
    if isinstance(code_object, CompileResult):
        if description is None:
            description = code_object.kernel(kernel)
        code_object = code_object.output
    if not isinstance(code_object, (bytes, bytearray, memoryview)):
        raise TypeError("code_object must be bytes (or a CompileResult), got "
                        f"{type(code_object).__name__}")
    args = list(args)
    if description is not None:
        if not isinstance(description, dict) or not isinstance(
                description.get("args"), list):
            raise ValueError("description must be a kernel's entry of the kernel JSON (a "
                             "dict with 'args'), e.g. CompileResult.kernel(name)")
        specs = description["args"]
        if len(specs) != len(args):
            raise ValueError(f"kernel '{kernel}' takes {len(specs)} arguments (its "
                             f"description), got {len(args)}")
        scalars = {}
        for i, (spec, v) in enumerate(zip(specs, args)):
            if not isinstance(spec, dict):
                raise ValueError(f"description argument {i} is not a dict")
            where = f"argument {i} '{spec.get('name')}' ({spec.get('dtype')})"
            if spec.get("kind") == "by_value":
                args[i] = _check_scalar(where, v, str(spec.get("dtype")))
                scalars[str(spec.get("name"))] = args[i]
        for i, (spec, v) in enumerate(zip(specs, args)):
            if spec.get("kind") != "global_buffer":
                continue
            where = f"argument {i} '{spec.get('name')}' ({spec.get('dtype')})"
            _check_buffer(where, v, str(spec.get("dtype")))
            shape = spec.get("shape")
            n = _resolve_shape(shape, scalars) if isinstance(shape, list) else None
            size = BUFFER_DTYPES.get(str(spec.get("dtype")))
            if n is not None and size is not None:
                import numpy as np
                want = n * np.dtype(size[0]).itemsize
                got = v.nbytes if hasattr(v, "nbytes") else len(v) \
                    if isinstance(v, bytearray) else None
                if got is not None and got != want:
                    raise ValueError(f"{where} {shape}: buffer of {got} bytes given, {want} "
                                     "expected")
    else:
        for i, v in enumerate(args):
            _check_buffer(f"argument {i}", v, None)
    return _emulator().emulate(bytes(code_object), kernel, list(grid),
                               list(block), args, max_instructions,
                               dynamic_lds)


def __getattr__(name):
    # uq.compiler.CompileError resolves to the native exception type.
    if name == "CompileError":
        return _compile_error_type()
    raise AttributeError(name)
