"""uq: Python tools for the UltraQuant 4-bit KV cache.

``uq._uq`` is the native module (built by python-bindings/CMakeLists.txt):
the reference-library numerics (``uq.reference``) and the compiler and
emulator bindings. The pure-Python
parts (``uq.quality``) import it lazily, so that data loading and the model
work without it.
"""

try:
    from . import _uq  # noqa: F401
except ImportError as _e:  # not built, or built for another Python
    _uq = None
    _native_error = _e
else:
    _native_error = None


def native():
    """The native module; raises ImportError with the build hint if absent."""
    if _uq is None:
        raise ImportError(
            "uq's native module _uq is not importable (build it with "
            "`ninja _uq` and put <build>/python-bindings on PYTHONPATH): "
            f"{_native_error}")
    return _uq


# Compiler and emulator: uq/compiler.py.
from .compiler import (CompileError, CompileResult, compile,  # noqa: E402
                       compile_with_description, emulate, kernel_info,
                       run_pipeline)

# The reference library's cache write and attention (uq::ref): uq/ref.py.
from . import ref  # noqa: E402,F401

# The launch runtime (uq::launch): uq/runtime.py.
from .runtime import Program, load  # noqa: E402


__all__ = ["native", "ref", "CompileError", "CompileResult", "compile",
           "compile_with_description", "emulate", "kernel_info",
           "run_pipeline", "load", "Program"]
