//===- Module.cpp - The _uq Python extension module ----------------------===//
//
// Module initialisation only; each group of bindings lives in its own file.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_uq, m) {
  m.doc() = "uq native module: UltraQuant reference numerics (and, later, "
            "the compiler and emulator)";
  uq::python::populateReferenceBindings(m);
  uq::python::populateMathBindings(m);
  uq::python::populateCompilerBindings(m);
#ifdef UQ_HAVE_LAUNCH
  uq::python::populateLaunchBindings(m);
#endif
}
