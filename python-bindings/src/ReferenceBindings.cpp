//===- ReferenceBindings.cpp - numpy wrappers of uq::ref -----------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Every function takes numpy arrays of shape [..., D] and works row by row
// along the last axis through the bit-exact reference library. Inputs are
// float32 or bf16 bit patterns stored as uint16; anything else raises
// TypeError, bad shapes or format parameters raise ValueError (with the
// reference library's message). Nothing here aborts the interpreter.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#ifdef UQ_HAVE_REFERENCE
#include "uq/Reference/Reference.h"
#endif

namespace py = pybind11;

namespace uq::python {

#ifdef UQ_HAVE_REFERENCE
namespace {
using namespace uq::ref;

using U8Array = py::array_t<uint8_t, py::array::c_style>;
using F32Array = py::array_t<float, py::array::c_style>;

void check(const Status &s, const char *what) {
  if (!s.ok())
    throw py::value_error(std::string(what) + ": " + s.message());
}

Rounding parseRounding(const std::string &r) {
  if (r == "ties_down")
    return Rounding::TiesDown;
  if (r == "nearest_even")
    return Rounding::NearestEven;
  throw py::value_error("rounding must be 'ties_down' (vLLM) or "
                        "'nearest_even', got '" + r + "'");
}

Fp8Overflow parseOverflow(const std::string &o) {
  if (o == "nan")
    return Fp8Overflow::NaN;
  if (o == "saturate")
    return Fp8Overflow::Saturate;
  throw py::value_error("fp8_overflow must be 'nan' or 'saturate', got '" +
                        o + "'");
}

ScaleRule parseScaleRule(const std::string &r) {
  if (r == "log_round")
    return ScaleRule::LogRound;
  if (r == "mse_search")
    return ScaleRule::MseSearch;
  throw py::value_error("scale_rule must be 'log_round' or 'mse_search', got '" +
                        r + "'");
}

ElementCode parseCode(const std::string &c) {
  if (c == "fp4")
    return ElementCode::FP4_E2M1;
  if (c == "fp8")
    return ElementCode::FP8_E4M3;
  if (c == "bf16")
    return ElementCode::BF16;
  throw py::value_error("code must be 'fp4', 'fp8' or 'bf16', got '" + c +
                        "'");
}

ScaleCode parseScaleCode(const std::string &s) {
  if (s == "ue8m0")
    return ScaleCode::UE8M0;
  if (s == "e4m3")
    return ScaleCode::E4M3;
  throw py::value_error("scale must be 'ue8m0' or 'e4m3', got '" + s + "'");
}

Format makeFormat(const std::string &code, int groupSize, double c,
                  bool rotate, const std::string &rounding,
                  const std::string &overflow,
                  const std::string &scaleRule = "log_round",
                  const std::string &scale = "ue8m0") {
  Format f;
  f.scaleCode = parseScaleCode(scale);
  f.code = parseCode(code);
  f.groupSize = groupSize;
  f.c = c;
  f.rotate = rotate;
  f.rounding = parseRounding(rounding);
  f.fp8Overflow = parseOverflow(overflow);
  f.scaleRule = parseScaleRule(scaleRule);
  return f;
}

/// A C-contiguous float32 copy (or view) of a float32 or bf16-as-uint16
/// array; rejects every other dtype.
F32Array asFloat(const py::array &x, const char *what) {
  if (x.ndim() < 1)
    throw py::value_error(std::string(what) +
                          ": expected an array of shape [..., D], got a "
                          "0-d array");
  if (x.dtype().kind() == 'f' && x.itemsize() == 4)
    return F32Array::ensure(x);
  if (x.dtype().kind() == 'u' && x.itemsize() == 2) {
    auto u = py::array_t<uint16_t, py::array::c_style>::ensure(x);
    std::vector<py::ssize_t> shape(u.shape(), u.shape() + u.ndim());
    F32Array out(shape);
    const uint16_t *src = u.data();
    float *dst = out.mutable_data();
    for (py::ssize_t i = 0, n = u.size(); i < n; ++i)
      dst[i] = bf16ToFloat(src[i]);
    return out;
  }
  throw py::type_error(std::string(what) +
                       ": expected float32, or bf16 bit patterns as uint16, "
                       "got dtype " + std::string(py::str(x.dtype())) +
                       " (cast with .astype(np.float32))");
}

U8Array asBytes(const py::array &x, const char *what) {
  if (!(x.dtype().kind() == 'u' && x.itemsize() == 1))
    throw py::type_error(std::string(what) + ": expected uint8, got dtype " +
                         std::string(py::str(x.dtype())));
  if (x.ndim() < 1)
    throw py::value_error(std::string(what) + ": expected an array of shape "
                                              "[..., n], got a 0-d array");
  return U8Array::ensure(x);
}

std::vector<py::ssize_t> withLast(const py::array &x, py::ssize_t last) {
  std::vector<py::ssize_t> s(x.shape(), x.shape() + x.ndim());
  s.back() = last;
  return s;
}

py::tuple quantize(const py::array &xIn, bool rotate, double c, int groupSize,
                   const std::string &rounding, const std::string &code,
                   const std::string &overflow, const std::string &scaleRule,
                   const std::string &scale) {
  F32Array x = asFloat(xIn, "quantize");
  Format f = makeFormat(code, groupSize, c, rotate, rounding, overflow,
                        scaleRule, scale);
  int64_t d = x.shape(x.ndim() - 1);
  check(validateFormat(f, d), "quantize");
  int64_t cb = codeBytes(f, d), sb = scaleBytes(f, d);
  int64_t rows = d ? x.size() / d : 0;
  U8Array codes(withLast(x, cb)), scales(withLast(x, sb));
  const float *px = x.data();
  uint8_t *pc = codes.mutable_data(), *ps = scales.mutable_data();
  Status err;
  {
    py::gil_scoped_release release;
    for (int64_t r = 0; r < rows; ++r) {
      Status s = encodeRow(f, px + r * d, d, pc + r * cb,
                           sb ? ps + r * sb : nullptr);
      if (!s.ok()) {
        err = s;
        break;
      }
    }
  }
  check(err, "quantize");
  return py::make_tuple(codes, scales);
}

F32Array dequantize(const py::array &codesIn, const py::array &scalesIn,
                    bool rotate, bool unrotate, double c, int groupSize,
                    const std::string &code, const std::string &scale) {
  U8Array codes = asBytes(codesIn, "dequantize(codes)");
  U8Array scales = asBytes(scalesIn, "dequantize(scales)");
  Format f = makeFormat(code, groupSize, c, rotate, "ties_down", "nan",
                        "log_round", scale);
  int64_t cb = codes.shape(codes.ndim() - 1);
  int64_t d;
  if (f.code == ElementCode::FP4_E2M1)
    d = 2 * cb;
  else if (f.code == ElementCode::FP8_E4M3)
    d = cb;
  else
    d = cb / 2;
  check(validateFormat(f, d), "dequantize");
  int64_t sb = scaleBytes(f, d);
  int64_t rows = cb ? codes.size() / cb : 0;
  bool shapesOk = scales.ndim() == codes.ndim();
  for (py::ssize_t i = 0; shapesOk && i + 1 < codes.ndim(); ++i)
    shapesOk = scales.shape(i) == codes.shape(i);
  if (!shapesOk || scales.shape(scales.ndim() - 1) != sb)
    throw py::value_error(
        "dequantize: scales must have the codes' leading shape and " +
        std::to_string(sb) + " bytes per row for " + std::to_string(d) +
        " elements (group size " + std::to_string(groupSize) + ")");
  F32Array out(withLast(codes, d));
  const uint8_t *pc = codes.data(), *ps = scales.data();
  float *po = out.mutable_data();
  Status err;
  {
    py::gil_scoped_release release;
    for (int64_t r = 0; r < rows; ++r) {
      Status s = decodeRow(f, pc + r * cb, sb ? ps + r * sb : nullptr, d,
                           po + r * d);
      if (s.ok() && rotate && unrotate)
        s = hadamardRotate(po + r * d, d); // H/sqrt(d) is its own inverse
      if (!s.ok()) {
        err = s;
        break;
      }
    }
  }
  check(err, "dequantize");
  return out;
}

/// quantize + dequantize in one pass (no intermediate arrays).
F32Array roundTrip(const py::array &xIn, bool rotate, bool unrotate, double c,
                   int groupSize, const std::string &rounding,
                   const std::string &code, const std::string &overflow,
                   const std::string &scaleRule, const std::string &scale) {
  F32Array x = asFloat(xIn, "quantize_dequantize");
  Format f = makeFormat(code, groupSize, c, rotate, rounding, overflow,
                        scaleRule, scale);
  int64_t d = x.shape(x.ndim() - 1);
  check(validateFormat(f, d), "quantize_dequantize");
  int64_t cb = codeBytes(f, d), sb = scaleBytes(f, d);
  int64_t rows = d ? x.size() / d : 0;
  F32Array out(withLast(x, d));
  const float *px = x.data();
  float *po = out.mutable_data();
  Status err;
  {
    py::gil_scoped_release release;
    std::vector<uint8_t> cbuf(cb), sbuf(sb ? sb : 1);
    for (int64_t r = 0; r < rows; ++r) {
      Status s = encodeRow(f, px + r * d, d, cbuf.data(),
                           sb ? sbuf.data() : nullptr);
      if (s.ok())
        s = decodeRow(f, cbuf.data(), sb ? sbuf.data() : nullptr, d,
                      po + r * d);
      if (s.ok() && rotate && unrotate)
        s = hadamardRotate(po + r * d, d);
      if (!s.ok()) {
        err = s;
        break;
      }
    }
  }
  check(err, "quantize_dequantize");
  return out;
}

F32Array hadamard(const py::array &xIn) {
  F32Array x = asFloat(xIn, "hadamard");
  int64_t d = x.shape(x.ndim() - 1);
  F32Array out(withLast(x, d));
  std::memcpy(out.mutable_data(), x.data(), sizeof(float) * x.size());
  float *po = out.mutable_data();
  int64_t rows = d ? x.size() / d : 0;
  if (d <= 0 || (d & (d - 1)) != 0)
    throw py::value_error("hadamard: the last dimension must be a power of "
                          "two, got " + std::to_string(d));
  for (int64_t r = 0; r < rows; ++r)
    check(hadamardRotate(po + r * d, d), "hadamard");
  return out;
}

template <typename Fn>
F32Array mapFloat(const py::array &xIn, const char *what, Fn fn) {
  F32Array x = asFloat(xIn, what);
  std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
  F32Array out(shape);
  const float *px = x.data();
  float *po = out.mutable_data();
  for (py::ssize_t i = 0, n = x.size(); i < n; ++i)
    po[i] = fn(px[i]);
  return out;
}

template <typename Fn>
U8Array mapToBytes(const py::array &xIn, const char *what, Fn fn) {
  F32Array x = asFloat(xIn, what);
  std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
  U8Array out(shape);
  const float *px = x.data();
  uint8_t *po = out.mutable_data();
  for (py::ssize_t i = 0, n = x.size(); i < n; ++i)
    po[i] = fn(px[i]);
  return out;
}

template <typename Fn>
F32Array mapFromBytes(const py::array &bIn, const char *what, Fn fn) {
  U8Array b = asBytes(bIn, what);
  std::vector<py::ssize_t> shape(b.shape(), b.shape() + b.ndim());
  F32Array out(shape);
  const uint8_t *pb = b.data();
  float *po = out.mutable_data();
  for (py::ssize_t i = 0, n = b.size(); i < n; ++i)
    po[i] = fn(pb[i]);
  return out;
}

} // namespace
#endif // UQ_HAVE_REFERENCE

void populateReferenceBindings(py::module_ &m) {
#ifdef UQ_HAVE_REFERENCE
  m.attr("has_reference") = true;
  m.def("quantize", &quantize, py::arg("x"), py::kw_only(),
        py::arg("rotate") = false, py::arg("c") = 0.156,
        py::arg("group_size") = 32, py::arg("rounding") = "ties_down",
        py::arg("code") = "fp4", py::arg("fp8_overflow") = "nan",
        py::arg("scale_rule") = "log_round", py::arg("scale") = "ue8m0",
        R"doc(Encode rows x[..., D] (float32, or bf16 bits as uint16).

Returns (codes uint8 [..., D/2], scales uint8 [..., D/group_size]) for FP4
(two codes per byte, element 2i in the low nibble); for code='fp8' the
codes are [..., D] E4M3 bytes and scales is empty; for 'bf16' [..., 2D].
rotate=True multiplies each row by H_D/sqrt(D) first (keys).
scale_rule='mse_search' picks each FP4 group's exponent among e0-1, e0,
e0+1 (e0 the 'log_round' one) by least squared error (ties to the
smaller; needs a power-of-two group_size), as
#uq.kv_format<..., scale_rule = mse_search>. scale='e4m3' codes each FP4
group's scale byte as FP8 E4M3 (#uq.kv_format<fp4_e2m1, scale = e4m3>; use
c=1/6): S = e4m3(c * absmax), codes fp4(x / S); mse_search then tries the
neighbouring E4M3 bytes.)doc");
  m.def("dequantize", &dequantize, py::arg("codes"), py::arg("scales"),
        py::kw_only(), py::arg("rotate") = false, py::arg("unrotate") = false,
        py::arg("c") = 0.156, py::arg("group_size") = 32,
        py::arg("code") = "fp4", py::arg("scale") = "ue8m0",
        R"doc(Decode rows to float32 [..., D]. The result is in the coded
domain (rotated for keys) unless rotate=True and unrotate=True.)doc");
  m.def("quantize_dequantize", &roundTrip, py::arg("x"), py::kw_only(),
        py::arg("rotate") = false, py::arg("unrotate") = false,
        py::arg("c") = 0.156, py::arg("group_size") = 32,
        py::arg("rounding") = "ties_down", py::arg("code") = "fp4",
        py::arg("fp8_overflow") = "nan", py::arg("scale_rule") = "log_round",
        py::arg("scale") = "ue8m0",
        "encodeRow + decodeRow per row, float32 out (coded domain unless "
        "unrotate=True); scale_rule and scale ('ue8m0' or 'e4m3') as in "
        "quantize.");
  m.def("hadamard", &hadamard, py::arg("x"),
        "x[..., D] @ (H_D/sqrt(D))^T along the last axis (the reference "
        "rotation; D a power of two).");
  m.def(
      "fp8_e4m3",
      [](const py::array &x, const std::string &overflow) {
        Fp8Overflow o = parseOverflow(overflow);
        return mapFloat(x, "fp8_e4m3", [o](float v) {
          return fp8e4m3Decode(fp8e4m3Encode(v, o));
        });
      },
      py::arg("x"), py::kw_only(), py::arg("fp8_overflow") = "nan",
      "Round to OCP FP8 E4M3FN (scale 1, RNE) and back to float32.");
  m.def(
      "fp8_e4m3_encode",
      [](const py::array &x, const std::string &overflow) {
        Fp8Overflow o = parseOverflow(overflow);
        return mapToBytes(x, "fp8_e4m3_encode",
                          [o](float v) { return fp8e4m3Encode(v, o); });
      },
      py::arg("x"), py::kw_only(), py::arg("fp8_overflow") = "nan");
  m.def("fp8_e4m3_decode", [](const py::array &b) {
    return mapFromBytes(b, "fp8_e4m3_decode", fp8e4m3Decode);
  });
  m.def(
      "fp4_encode",
      [](const py::array &x, const std::string &rounding) {
        Rounding r = parseRounding(rounding);
        return mapToBytes(x, "fp4_encode",
                          [r](float v) { return fp4Encode(v, r); });
      },
      py::arg("x"), py::kw_only(), py::arg("rounding") = "ties_down",
      "One unpacked 4-bit E2M1 code per element (x already divided by its "
      "scale).");
  m.def("fp4_decode", [](const py::array &b) {
    return mapFromBytes(b, "fp4_decode",
                        [](uint8_t v) { return fp4Decode(v & 0xF); });
  });
  m.def("e8m0_decode", [](const py::array &b) {
    return mapFromBytes(b, "e8m0_decode", e8m0Decode);
  });
  m.def(
      "e4m3_scale",
      [](const py::array &absmax, double c) {
        return mapToBytes(absmax, "e4m3_scale",
                          [c](float a) { return e4m3ScaleByte(a, c); });
      },
      py::arg("absmax"), py::kw_only(), py::arg("c") = 1.0 / 6.0,
      "The E4M3 scale byte of an FP4 group per group maximum (0 = zero "
      "sentinel).");
  m.def(
      "ue8m0_scale",
      [](const py::array &absmax, double c) {
        return mapToBytes(absmax, "ue8m0_scale",
                          [c](float a) { return ue8m0ScaleByte(a, c); });
      },
      py::arg("absmax"), py::kw_only(), py::arg("c") = 0.156,
      "The UE8M0 scale byte per group maximum (0 = zero sentinel).");
  m.def("bf16_round", [](const py::array &x) {
    return mapFloat(x, "bf16_round",
                    [](float v) { return bf16ToFloat(floatToBf16(v)); });
  });
  m.def("to_bf16", [](const py::array &xIn) {
    F32Array x = asFloat(xIn, "to_bf16");
    std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
    py::array_t<uint16_t> out(shape);
    for (py::ssize_t i = 0, n = x.size(); i < n; ++i)
      out.mutable_data()[i] = floatToBf16(x.data()[i]);
    return out;
  });
  m.def(
      "slot_bytes",
      [](int64_t d) {
        int64_t b = slotBytes(keyFormat(), valueFormat(), d);
        if (b < 0)
          throw py::value_error("slot_bytes: head dim " + std::to_string(d) +
                                " is not valid for the UltraQuant format");
        return b;
      },
      py::arg("head_dim"),
      "Bytes per (token, kv head) slot of the vLLM-compatible cache.");
#else
  m.attr("has_reference") = false;
#endif
}

} // namespace uq::python
