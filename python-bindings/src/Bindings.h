//===- Bindings.h - Pieces of the _uq Python module -------------*- C++ -*-===//
//
// Each populate*Bindings() adds one group of functions to the module; they are
// all called from Module.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_PYTHON_BINDINGS_H
#define UQ_PYTHON_BINDINGS_H

#include <pybind11/pybind11.h>

namespace uq::python {

/// Bit-exact numerics of the reference library (uq::ref): quantize,
/// dequantize, FP8, Hadamard, bf16 conversions.
void populateReferenceBindings(pybind11::module_ &m);

/// Helpers for uq.quality that are not part of the format (float32 GEMM).
void populateMathBindings(pybind11::module_ &m);

/// The compiler (uq::compileSource, uq::runPipeline) and the gfx950
/// emulator; CompileError.
void populateCompilerBindings(pybind11::module_ &m);

/// The launch runtime (uq::launch::Program): uq.load and uq.Program.
void populateLaunchBindings(pybind11::module_ &m);

} // namespace uq::python

#endif // UQ_PYTHON_BINDINGS_H
