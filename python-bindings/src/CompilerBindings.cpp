//===- CompilerBindings.cpp - uq compiler and emulator in Python ----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Low-level entry points of the compiler (uq::compileSource, uq::runPipeline)
// and of the gfx950 emulator (uq::emu). The Python-facing API (uq.compile,
// uq.compile_with_description, uq.run_pipeline, uq.emulate, CompileResult)
// lives in uq/compiler.py and calls these:
//
//   _uq.compile(ir, chip, emit, partition_size, filename) -> (bytes, str)
//   _uq.run_pipeline(ir, pipeline) -> str
//   _uq.emulate(code_object, kernel, grid, block, args, max_instructions)
//       -> dict of launch statistics
//   _uq.kernel_info(code_object) -> list of dicts (the metadata note)
//   _uq.CompileError: raised with the MLIR diagnostics text (args[0] and
//       .diagnostics)
//
// Each part is compiled only when its library is part of the build
// (UQ_HAVE_COMPILER: UQTarget, UQ_HAVE_EMULATOR: UQEmulator) and announced
// by _uq.HAVE_COMPILER / _uq.HAVE_EMULATOR; uq/compiler.py raises
// NotImplementedError, naming the missing library, for the absent ones.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#ifdef UQ_HAVE_COMPILER
#include "uq/InitAll.h"
#include "uq/Target/Compiler.h"
#endif
#ifdef UQ_HAVE_EMULATOR
#include "uq/Emulator/Emulator.h"
#endif

namespace py = pybind11;

namespace uq::python {
namespace {

/// _uq.CompileError, created once per module.
py::object &compileErrorType() {
  static py::object type;
  return type;
}

[[noreturn, maybe_unused]] void raiseCompileError(const std::string &diagnostics) {
  py::object exc = compileErrorType()(diagnostics);
  exc.attr("diagnostics") = diagnostics;
  PyErr_SetObject(compileErrorType().ptr(), exc.ptr());
  throw py::error_already_set();
}

#ifdef UQ_HAVE_COMPILER
py::tuple compile(const std::string &ir, const std::string &chip,
                  const std::string &emit, int64_t partitionSize,
                  const std::string &filename) {
  CompileOptions options;
  options.chip = chip;
  std::optional<EmitStage> stage = parseEmitStage(emit);
  if (!stage)
    throw py::value_error("unknown emit stage '" + emit +
                          "' (expected linalg, kernel, rocdl, llvmir, isa or "
                          "hsaco)");
  options.emit = *stage;
  if (partitionSize <= 0)
    throw py::value_error("partition_size must be positive, got " +
                          std::to_string(partitionSize));
  options.partitionSize = partitionSize;

  std::string diagnostics;
  CompileResult result;
  {
    py::gil_scoped_release release;
    llvm::Expected<CompileResult> r = compileSource(ir, filename, options);
    if (r)
      result = std::move(*r);
    else
      diagnostics = llvm::toString(r.takeError());
  }
  if (!diagnostics.empty())
    raiseCompileError(diagnostics);
  return py::make_tuple(py::bytes(result.output), result.kernelsJson);
}

std::string runPipelineText(const std::string &ir,
                            const std::string &pipeline) {
  static std::once_flag once;
  std::call_once(once, [] { uq::registerAllPasses(); });
  std::string diagnostics, output;
  {
    py::gil_scoped_release release;
    llvm::Expected<std::string> r = runPipeline(ir, pipeline);
    if (r)
      output = std::move(*r);
    else
      diagnostics = llvm::toString(r.takeError());
  }
  if (!diagnostics.empty())
    raiseCompileError(diagnostics);
  return output;
}
#endif // UQ_HAVE_COMPILER

#ifdef UQ_HAVE_EMULATOR
std::vector<uint8_t> toBytes(const py::bytes &b) {
  std::string s = b;
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::unique_ptr<emu::CodeObject> load(const py::bytes &codeObject) {
  std::vector<uint8_t> bytes = toBytes(codeObject);
  llvm::Expected<std::unique_ptr<emu::CodeObject>> co =
      emu::CodeObject::load(bytes);
  if (!co)
    throw py::value_error("cannot load the code object: " +
                          llvm::toString(co.takeError()));
  return std::move(*co);
}

py::dict kernelDict(const emu::KernelInfo &k) {
  py::list args;
  for (const emu::ArgInfo &a : k.args) {
    py::dict d;
    d["name"] = a.name;
    d["value_kind"] = a.valueKind;
    d["address_space"] = a.addressSpace;
    d["offset"] = a.offset;
    d["size"] = a.size;
    d["explicit"] = a.isExplicit();
    args.append(d);
  }
  py::dict d;
  d["name"] = k.name;
  d["symbol"] = k.symbol;
  d["args"] = args;
  d["kernarg_segment_size"] = k.kernargSegmentSize;
  d["group_segment_fixed_size"] = k.groupSegmentSize;
  d["private_segment_fixed_size"] = k.privateSegmentSize;
  d["vgpr_count"] = k.vgprCount;
  d["agpr_count"] = k.agprCount;
  d["sgpr_count"] = k.sgprCount;
  d["wavefront_size"] = k.wavefrontSize;
  d["max_flat_workgroup_size"] = k.maxFlatWorkgroupSize;
  return d;
}

py::list kernelInfo(const py::bytes &codeObject) {
  std::unique_ptr<emu::CodeObject> co = load(codeObject);
  py::list out;
  for (const emu::KernelInfo &k : co->kernels())
    out.append(kernelDict(k));
  return out;
}

std::array<uint32_t, 3> dims(const std::vector<uint32_t> &v,
                             const char *what) {
  if (v.empty() || v.size() > 3)
    throw py::value_error(std::string(what) +
                          " must have 1 to 3 dimensions");
  std::array<uint32_t, 3> d = {1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == 0)
      throw py::value_error(std::string(what) + " dimensions must be >= 1");
    d[i] = v[i];
  }
  return d;
}

/// "argument 2 'name'", or "argument 2 #2" when the metadata has no name
/// (LLVM emits none for unnamed IR arguments), as uq-emu prints them.
std::string argLabel(size_t index, const emu::ArgInfo &info) {
  std::string label = "argument " + std::to_string(index);
  if (!info.name.empty())
    label += " '" + info.name + "'";
  else
    label += " #" + std::to_string(index);
  return label;
}

/// Whether numpy arrays or scalars of \p dt may be kernel arguments: bool,
/// integer, float or complex elements. An object array's bytes are
/// pointers (the kernel would write over them and the interpreter crash
/// on the next use); strings, structured and datetime data are not numbers.
bool isNumeric(const py::dtype &dt) {
  return std::string("biufc").find(dt.kind()) != std::string::npos &&
         !dt.attr("hasobject").cast<bool>();
}

std::string dtypeName(const py::dtype &dt) {
  return py::str(static_cast<const py::handle &>(dt)).cast<std::string>();
}

/// A by-value argument from a Python or numpy scalar, sized by the kernel's
/// metadata: Python ints become int32/int64 and floats float32/float64
/// according to the argument's size; numpy scalars must match it exactly.
emu::KernelArg scalarArg(const py::handle &obj, const emu::ArgInfo &info,
                         size_t index) {
  std::string where = argLabel(index, info) + " (" +
                      std::to_string(info.size) + " bytes by value)";
  if (py::isinstance<py::bool_>(obj))
    throw py::type_error(where + ": bool is not a kernel argument type");
  if (py::isinstance(obj, py::module_::import("numpy").attr("generic"))) {
    py::array a = py::array::ensure(obj);
    if (!isNumeric(a.dtype()))
      throw py::value_error(where + ": a numpy " + dtypeName(a.dtype()) +
                            " is not a numeric scalar");
    if (static_cast<size_t>(a.nbytes()) != info.size)
      throw py::value_error(where + ": numpy scalar has " +
                            std::to_string(a.nbytes()) + " bytes");
    return emu::KernelArg::scalar(a.data(), a.nbytes(), info.name);
  }
  if (py::isinstance<py::int_>(obj)) {
    if (info.size == 4) {
      int64_t v = obj.cast<int64_t>();
      if (v < INT32_MIN || v > static_cast<int64_t>(UINT32_MAX))
        throw py::value_error(where + ": " + std::to_string(v) +
                              " does not fit in 32 bits");
      uint32_t u = static_cast<uint32_t>(v);
      return emu::KernelArg::scalar(&u, 4, info.name);
    }
    if (info.size == 8) {
      int64_t v = obj.cast<int64_t>();
      return emu::KernelArg::scalar(&v, 8, info.name);
    }
  } else if (py::isinstance<py::float_>(obj)) {
    if (info.size == 4) {
      float v = obj.cast<float>();
      return emu::KernelArg::scalar(&v, 4, info.name);
    }
    if (info.size == 8) {
      double v = obj.cast<double>();
      return emu::KernelArg::scalar(&v, 8, info.name);
    }
  }
  throw py::type_error(where + ": pass an int, a float or a numpy scalar of "
                       "that size");
}

py::dict statsDict(const emu::Stats &s) {
  py::dict d;
  d["wave_instructions"] = s.waveInstructions;
  d["lane_ops"] = s.laneOps;
  d["salu"] = s.salu;
  d["smem"] = s.smem;
  d["branch"] = s.branch;
  d["valu"] = s.valu;
  d["valu_trans"] = s.valuTrans;
  d["lds"] = s.lds;
  d["global"] = s.global;
  d["scratch"] = s.scratch;
  d["barriers"] = s.barriers;
  d["waitcnts"] = s.waitcnts;
  d["nops"] = s.nops;
  d["other"] = s.other;
  d["mfma"] = s.mfma;
  py::dict byKind;
  for (const auto &[k, v] : s.mfmaByKind)
    byKind[py::str(k)] = v;
  d["mfma_by_kind"] = byKind;
  d["global_bytes_read"] = s.globalBytesRead;
  d["global_bytes_written"] = s.globalBytesWritten;
  d["lds_bytes_read"] = s.ldsBytesRead;
  d["lds_bytes_written"] = s.ldsBytesWritten;
  d["workgroups"] = s.workgroups;
  d["waves"] = s.waves;
  d["seconds"] = s.seconds;
  d["summary"] = s.str();
  return d;
}

/// Runs one kernel. Buffer arguments are numpy arrays (C-contiguous,
/// writeable: updated in place after the launch) or bytearrays; by-value
/// arguments are scalars (see scalarArg). `args` lists the explicit
/// arguments in the kernel's order; hidden ones are filled by the emulator.
py::dict emulate(const py::bytes &codeObject, const std::string &kernel,
                 const std::vector<uint32_t> &grid,
                 const std::vector<uint32_t> &block, const py::list &args,
                 uint64_t maxInstructions, uint32_t dynamicLds) {
  std::unique_ptr<emu::CodeObject> co = load(codeObject);
  llvm::Expected<const emu::KernelInfo *> info = co->findKernel(kernel);
  if (!info)
    throw py::value_error(llvm::toString(info.takeError()));
  std::vector<const emu::ArgInfo *> explicitArgs;
  for (const emu::ArgInfo &a : (*info)->args)
    if (a.isExplicit())
      explicitArgs.push_back(&a);
  if (explicitArgs.size() != args.size())
    throw py::value_error("kernel '" + kernel + "' takes " +
                          std::to_string(explicitArgs.size()) +
                          " explicit arguments, got " +
                          std::to_string(args.size()));

  std::vector<emu::KernelArg> kargs;
  // Where each buffer's contents go back after the launch.
  std::vector<std::pair<size_t, py::object>> outputs;
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle obj = args[i];
    const emu::ArgInfo &ai = *explicitArgs[i];
    if (ai.valueKind != "global_buffer") {
      kargs.push_back(scalarArg(obj, ai, i));
      continue;
    }
    std::string where = argLabel(i, ai) + " (a buffer)";
    if (py::isinstance<py::array>(obj)) {
      py::array a = py::reinterpret_borrow<py::array>(obj);
      if (!isNumeric(a.dtype()))
        throw py::value_error(where + ": a numpy array of dtype " +
                              dtypeName(a.dtype()) +
                              " is not a numeric buffer (bool, integer, float "
                              "or complex elements only)");
      if (!(a.flags() & py::array::c_style))
        throw py::value_error(where + ": the array must be C-contiguous");
      if (!a.writeable())
        throw py::value_error(where + ": the array must be writeable");
      const auto *p = static_cast<const uint8_t *>(a.data());
      kargs.push_back(emu::KernelArg::buffer(
          std::vector<uint8_t>(p, p + a.nbytes()), ai.name));
      outputs.emplace_back(i, py::reinterpret_borrow<py::object>(obj));
    } else if (py::isinstance<py::bytearray>(obj)) {
      auto *p = reinterpret_cast<const uint8_t *>(
          PyByteArray_AsString(obj.ptr()));
      size_t n = PyByteArray_Size(obj.ptr());
      kargs.push_back(
          emu::KernelArg::buffer(std::vector<uint8_t>(p, p + n), ai.name));
      outputs.emplace_back(i, py::reinterpret_borrow<py::object>(obj));
    } else {
      throw py::type_error(where + ": pass a numpy array or a bytearray");
    }
  }

  emu::LaunchConfig config;
  config.grid = dims(grid, "grid");
  config.block = dims(block, "block");
  config.maxWaveInstructions = maxInstructions;
  config.dynamicLds = dynamicLds;

  emu::Emulator emulator(*co);
  std::string error;
  {
    py::gil_scoped_release release;
    if (llvm::Error e = emulator.launch(kernel, config, kargs))
      error = llvm::toString(std::move(e));
  }
  if (!error.empty())
    throw py::value_error("emulation of '" + kernel + "' failed: " + error);

  for (auto &[i, obj] : outputs) {
    const std::vector<uint8_t> &bytes = kargs[i].bytes;
    if (py::isinstance<py::array>(obj)) {
      py::array a = py::reinterpret_borrow<py::array>(obj);
      if (static_cast<size_t>(a.nbytes()) != bytes.size())
        throw py::value_error("emulator changed the size of buffer " +
                              std::to_string(i));
      std::memcpy(a.mutable_data(), bytes.data(), bytes.size());
    } else {
      std::memcpy(PyByteArray_AsString(obj.ptr()), bytes.data(),
                  std::min<size_t>(bytes.size(), PyByteArray_Size(obj.ptr())));
    }
  }
  return statsDict(emulator.stats());
}
#endif // UQ_HAVE_EMULATOR

} // namespace

void populateCompilerBindings(py::module_ &m) {
  compileErrorType() = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc(
          "uq._uq.CompileError",
          "uq IR that does not parse, verify or compile; .diagnostics (and "
          "args[0]) hold the MLIR diagnostics text with locations.",
          PyExc_Exception, nullptr));
  m.attr("CompileError") = compileErrorType();

#ifdef UQ_HAVE_COMPILER
  m.attr("HAVE_COMPILER") = true;
  m.def("compile", &compile, py::arg("ir"), py::arg("chip") = "gfx950",
        py::arg("emit") = "hsaco", py::arg("partition_size") = 256,
        py::arg("filename") = "<python>",
        "Compiles uq IR; returns (output bytes, kernels JSON text). Raises "
        "CompileError with the diagnostics.");
  m.def("run_pipeline", &runPipelineText, py::arg("ir"), py::arg("pipeline"),
        "Runs a textual pass pipeline on IR text and returns the printed "
        "result. Raises CompileError with the diagnostics.");
#else
  m.attr("HAVE_COMPILER") = false;
#endif

#ifdef UQ_HAVE_EMULATOR
  m.attr("HAVE_EMULATOR") = true;
  m.def("kernel_info", &kernelInfo, py::arg("code_object"),
        "Kernels of a code object as the AMDHSA metadata note lists them.");
  m.def("emulate", &emulate, py::arg("code_object"), py::arg("kernel"),
        py::arg("grid"), py::arg("block"), py::arg("args"),
        py::arg("max_instructions") = 0, py::arg("dynamic_lds") = 0,
        "Runs a kernel of a gfx950 code object on the CPU emulator; buffers "
        "are updated in place; returns the launch statistics.");
#else
  m.attr("HAVE_EMULATOR") = false;
#endif
}

} // namespace uq::python
