//===- LaunchBindings.cpp - The launch runtime in Python ------------------===//
//
// The native side of uq.load / uq.Program (python-bindings/uq/runtime.py):
//
//   _uq.load_program(code_object, kernels_json, device, hip_library)
//       -> _uq.LaunchProgram
//   LaunchProgram.ops() -> list of dicts (name, kind, kernels, inputs,
//       outputs, workspaces: [{name, dtype, shape}], sizes)
//   LaunchProgram.device -> str
//   LaunchProgram.plan(op, operands, sizes, check_indices) -> dict of sizes
//   LaunchProgram.run(op, operands, sizes, check_indices)
//       -> {name: (dtype, shape, bytearray)}
//
// operands: {name: (dtype, C-contiguous numpy array)}; the dtype is the
// kernel JSON's name (runtime.py maps numpy dtypes to it). Errors about the
// input are ValueError, device errors RuntimeError.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "uq/Runtime/Launch.h"

namespace py = pybind11;
using namespace uq;

namespace uq::python {
namespace {

[[noreturn]] void raise(llvm::Error e) {
  bool usage = false;
  std::string m = emu::errorMessage(std::move(e), usage);
  if (usage)
    throw py::value_error(m);
  throw std::runtime_error(m);
}

struct LaunchProgram {
  std::unique_ptr<launch::Program> program;
};

py::list bufferList(const std::vector<launch::BufferInfo> &bs) {
  py::list l;
  for (const launch::BufferInfo &b : bs) {
    py::dict d;
    d["name"] = b.name;
    d["dtype"] = b.dtype;
    py::list shape;
    for (auto &[extent, name] : b.shape)
      if (name.empty())
        shape.append(extent);
      else
        shape.append(name);
    d["shape"] = shape;
    l.append(d);
  }
  return l;
}

/// The operands as launch::Arrays (copies, so the GIL can be released).
std::map<std::string, launch::Array> toArrays(const py::dict &operands) {
  std::map<std::string, launch::Array> out;
  for (auto [k, v] : operands) {
    std::string name = py::cast<std::string>(k);
    auto t = py::cast<py::tuple>(v);
    if (t.size() != 2)
      throw py::value_error("operand '" + name + "': expected (dtype, array)");
    launch::Array a;
    a.dtype = py::cast<std::string>(t[0]);
    py::array arr = py::cast<py::array>(t[1]);
    if (!(arr.flags() & py::array::c_style))
      throw py::value_error("operand '" + name + "' must be C-contiguous");
    for (py::ssize_t i = 0; i < arr.ndim(); ++i)
      a.shape.push_back(arr.shape(i));
    const auto *p = static_cast<const uint8_t *>(arr.data());
    a.bytes.assign(p, p + arr.nbytes());
    out[name] = std::move(a);
  }
  return out;
}

launch::RunOptions options(const std::map<std::string, int64_t> &sizes,
                           bool checkIndices) {
  launch::RunOptions o;
  o.sizes = sizes;
  o.checkIndices = checkIndices;
  return o;
}

launch::Operands pointers(const std::map<std::string, launch::Array> &a) {
  launch::Operands ops;
  for (auto &[n, arr] : a)
    ops[n] = &arr;
  return ops;
}

} // namespace

void populateLaunchBindings(py::module_ &m) {
  py::class_<LaunchProgram>(m, "LaunchProgram")
      .def_property_readonly("device",
                             [](LaunchProgram &p) {
                               return p.program->device().name();
                             })
      .def("ops",
           [](LaunchProgram &p) {
             py::list l;
             for (const launch::OpInfo &op : p.program->ops()) {
               py::dict d;
               d["name"] = op.name;
               d["kind"] = launch::opKindName(op.kind);
               d["kernels"] = op.kernels;
               d["inputs"] = bufferList(op.inputs);
               d["outputs"] = bufferList(op.outputs);
               d["workspaces"] = bufferList(op.workspaces);
               d["sizes"] = op.sizes;
               l.append(d);
             }
             return l;
           })
      .def(
          "plan",
          [](LaunchProgram &p, const std::string &op, const py::dict &operands,
             const std::map<std::string, int64_t> &sizes, bool checkIndices) {
            auto arrays = toArrays(operands);
            auto r = p.program->plan(op, pointers(arrays),
                                     options(sizes, checkIndices));
            if (!r)
              raise(r.takeError());
            return *r;
          },
          py::arg("op"), py::arg("operands"), py::arg("sizes"),
          py::arg("check_indices"))
      .def(
          "run",
          [](LaunchProgram &p, const std::string &op, const py::dict &operands,
             const std::map<std::string, int64_t> &sizes, bool checkIndices) {
            auto arrays = toArrays(operands);
            std::optional<llvm::Expected<launch::Results>> r;
            {
              py::gil_scoped_release release;
              r.emplace(p.program->run(op, pointers(arrays),
                                       options(sizes, checkIndices)));
            }
            if (!*r)
              raise(r->takeError());
            py::dict out;
            for (auto &[name, a] : **r)
              out[py::str(name)] = py::make_tuple(
                  a.dtype, a.shape,
                  py::bytearray(reinterpret_cast<const char *>(a.bytes.data()),
                                a.bytes.size()));
            return out;
          },
          py::arg("op"), py::arg("operands"), py::arg("sizes"),
          py::arg("check_indices"));

  m.def(
      "load_program",
      [](const py::bytes &codeObject, const std::string &json,
         const std::string &device, const std::string &hipLibrary) {
        std::unique_ptr<launch::Device> dev;
        if (device == "hip") {
          auto d = launch::createHipDevice(hipLibrary);
          if (!d)
            throw std::runtime_error(llvm::toString(d.takeError()));
          dev = std::move(*d);
        } else if (device != "emulator") {
          throw py::value_error("unknown device '" + device +
                                "' (emulator or hip)");
        }
        std::string co = codeObject;
        auto p = launch::Program::load(
            llvm::ArrayRef<uint8_t>(
                reinterpret_cast<const uint8_t *>(co.data()), co.size()),
            json, std::move(dev));
        if (!p)
          raise(p.takeError());
        return LaunchProgram{std::move(*p)};
      },
      py::arg("code_object"), py::arg("kernels_json"),
      py::arg("device") = "emulator", py::arg("hip_library") = "",
      "Loads a code object and its kernel JSON into the launch runtime.");
}

} // namespace uq::python
