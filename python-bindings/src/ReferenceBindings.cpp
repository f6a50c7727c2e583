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

#include <climits>
#include <cmath>
#include <cstdint>
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

Format makeFormat(const std::string &code, int groupSize, double c,
                  bool rotate, const std::string &rounding,
                  const std::string &overflow,
                  const std::string &scaleRule = "log_round") {
  Format f;
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
                   const std::string &overflow, const std::string &scaleRule) {
  F32Array x = asFloat(xIn, "quantize");
  Format f =
      makeFormat(code, groupSize, c, rotate, rounding, overflow, scaleRule);
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
                    const std::string &code) {
  U8Array codes = asBytes(codesIn, "dequantize(codes)");
  U8Array scales = asBytes(scalesIn, "dequantize(scales)");
  Format f = makeFormat(code, groupSize, c, rotate, "ties_down", "nan");
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
                   const std::string &scaleRule) {
  F32Array x = asFloat(xIn, "quantize_dequantize");
  Format f =
      makeFormat(code, groupSize, c, rotate, rounding, overflow, scaleRule);
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

//===----------------------------------------------------------------------===//
// Cache write and attention (ref::cacheWrite, decodeAttention,
// pagedAttention)
//===----------------------------------------------------------------------===//

/// A format from a dict of quantize()'s keyword names (code, rotate, c,
/// group_size, rounding, fp8_overflow, scale_rule); None gives \p def.
Format formatFrom(const py::object &spec, Format def, const char *what) {
  if (spec.is_none())
    return def;
  if (!py::isinstance<py::dict>(spec))
    throw py::type_error(std::string(what) +
                         ": expected None or a dict of format fields");
  Format f = def;
  for (auto item : py::cast<py::dict>(spec)) {
    std::string key = py::cast<std::string>(item.first);
    py::handle v = item.second;
    if (key == "code")
      f.code = parseCode(py::cast<std::string>(v));
    else if (key == "rotate")
      f.rotate = py::cast<bool>(v);
    else if (key == "c")
      f.c = py::cast<double>(v);
    else if (key == "group_size")
      f.groupSize = py::cast<int>(v);
    else if (key == "rounding")
      f.rounding = parseRounding(py::cast<std::string>(v));
    else if (key == "fp8_overflow")
      f.fp8Overflow = parseOverflow(py::cast<std::string>(v));
    else if (key == "scale_rule")
      f.scaleRule = parseScaleRule(py::cast<std::string>(v));
    else
      throw py::value_error(std::string(what) + ": unknown format field '" +
                            key +
                            "' (expected code, rotate, c, group_size, "
                            "rounding, fp8_overflow or scale_rule)");
  }
  return f;
}

QueryPrecision parsePrecision(const std::string &p) {
  if (p == "fp8_e4m3")
    return QueryPrecision::FP8_E4M3;
  if (p == "f32")
    return QueryPrecision::F32;
  throw py::value_error("query_precision must be 'fp8_e4m3' or 'f32', got '" +
                        p + "'");
}

void expectRank(const py::array &x, py::ssize_t rank, const char *what,
                const char *shape) {
  if (x.ndim() != rank)
    throw py::value_error(std::string(what) + ": expected shape " + shape +
                          ", got " + std::to_string(x.ndim()) + " dimensions");
}

/// An integer array as int32 values (any integer dtype; values must fit).
std::vector<int32_t> asI32(const py::array &x, const char *what) {
  char kind = x.dtype().kind();
  if (kind != 'i' && kind != 'u')
    throw py::type_error(std::string(what) +
                         ": expected an integer array, "
                         "got dtype " +
                         std::string(py::str(x.dtype())));
  auto wide =
      py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(
          x);
  std::vector<int32_t> out(wide.size());
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    int64_t v = wide.data()[i];
    if (kind == 'u' && x.itemsize() == 8 && v < 0)
      v = INT64_MAX; // uint64 above INT64_MAX: out of range below
    if (v < INT32_MIN || v > INT32_MAX)
      throw py::value_error(std::string(what) + ": value " + std::to_string(v) +
                            " does not fit int32");
    out[i] = static_cast<int32_t>(v);
  }
  return out;
}

/// The geometry of a uint8 cache [num_blocks, block_size, Hkv, slot_bytes]
/// holding rows of \p headDim.
CacheGeometry geometryOf(const U8Array &cache, int64_t headDim) {
  expectRank(cache, 4, "cache",
             "[num_blocks, block_size, num_kv_heads, slot_bytes]");
  return {cache.shape(0), cache.shape(1), cache.shape(2), headDim,
          cache.shape(3)};
}

U8Array cacheWriteNp(const py::array &kIn, const py::array &vIn,
                     const py::array &slotsIn, const py::array &cacheIn,
                     const py::object &kSpec, const py::object &vSpec) {
  F32Array k = asFloat(kIn, "cache_write(k)");
  F32Array v = asFloat(vIn, "cache_write(v)");
  U8Array cacheArr = asBytes(cacheIn, "cache_write(cache)");
  expectRank(k, 3, "cache_write(k)", "[num_tokens, num_kv_heads, head_dim]");
  if (v.ndim() != 3 || v.shape(0) != k.shape(0) || v.shape(1) != k.shape(1) ||
      v.shape(2) != k.shape(2))
    throw py::value_error("cache_write: v must have k's shape");
  char kind = slotsIn.dtype().kind();
  if (kind != 'i')
    throw py::type_error("cache_write(slot_mapping): expected a signed "
                         "integer array, got dtype " +
                         std::string(py::str(slotsIn.dtype())));
  auto slots =
      py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(
          slotsIn);
  if (slots.ndim() != 1 || slots.shape(0) != k.shape(0))
    throw py::value_error("cache_write(slot_mapping): expected shape "
                          "[num_tokens]");
  Format kf = formatFrom(kSpec, keyFormat(), "cache_write(k_format)");
  Format vf = formatFrom(vSpec, valueFormat(), "cache_write(v_format)");
  CacheGeometry g = geometryOf(cacheArr, k.shape(2));
  if (g.numKvHeads != k.shape(1))
    throw py::value_error("cache_write: the cache has " +
                          std::to_string(g.numKvHeads) + " kv heads, k has " +
                          std::to_string(k.shape(1)));
  std::vector<py::ssize_t> shape(cacheArr.shape(),
                                 cacheArr.shape() + cacheArr.ndim());
  U8Array out(shape);
  std::memcpy(out.mutable_data(), cacheArr.data(), cacheArr.size());
  Status st;
  {
    py::gil_scoped_release release;
    st = cacheWrite(kf, vf, g, k.data(), v.data(), slots.data(), k.shape(0),
                    out.mutable_data());
  }
  check(st, "cache_write");
  return out;
}

/// Shared argument handling of decode_attention and paged_attention.
struct AttentionArgs {
  F32Array q;
  U8Array cache;
  CacheGeometry g;
  Format kf, vf;
  AttentionParams p;
  std::vector<int32_t> tables, lens;
  int64_t numSeqs, maxBlocks;
  std::vector<float> sinks;
  bool hasSinks;
};

AttentionArgs attentionArgs(const char *what, const py::array &qIn,
                            const py::array &cacheIn, const py::array &btIn,
                            const py::array &lensIn, float scale,
                            const py::object &sinksIn,
                            const std::string &precision,
                            const py::object &kSpec, const py::object &vSpec,
                            bool accumulateF64) {
  std::string w(what);
  AttentionArgs a;
  a.q = asFloat(qIn, (w + "(q)").c_str());
  expectRank(a.q, 3, (w + "(q)").c_str(), "[tokens, num_q_heads, head_dim]");
  a.cache = asBytes(cacheIn, (w + "(cache)").c_str());
  a.g = geometryOf(a.cache, a.q.shape(2));
  a.kf = formatFrom(kSpec, keyFormat(), (w + "(k_format)").c_str());
  a.vf = formatFrom(vSpec, valueFormat(), (w + "(v_format)").c_str());
  a.p.softmaxScale = scale;
  a.p.queryPrecision = parsePrecision(precision);
  a.p.accumulateF64 = accumulateF64;
  expectRank(btIn, 2, (w + "(block_tables)").c_str(), "[num_seqs, max_blocks]");
  expectRank(lensIn, 1, (w + "(seq_lens)").c_str(), "[num_seqs]");
  a.tables = asI32(btIn, (w + "(block_tables)").c_str());
  a.lens = asI32(lensIn, (w + "(seq_lens)").c_str());
  a.numSeqs = lensIn.shape(0);
  a.maxBlocks = btIn.shape(1);
  if (btIn.shape(0) != a.numSeqs)
    throw py::value_error(w + ": block_tables has " +
                          std::to_string(btIn.shape(0)) + " rows for " +
                          std::to_string(a.numSeqs) + " sequences");
  a.hasSinks = !sinksIn.is_none();
  if (a.hasSinks) {
    F32Array s = asFloat(py::cast<py::array>(sinksIn), (w + "(sinks)").c_str());
    if (s.ndim() != 1 || s.shape(0) != a.q.shape(1))
      throw py::value_error(w + "(sinks): expected shape [num_q_heads] = [" +
                            std::to_string(a.q.shape(1)) + "]");
    a.sinks.assign(s.data(), s.data() + s.size());
  }
  return a;
}

F32Array decodeAttentionNp(const py::array &q, const py::array &cache,
                           const py::array &bt, const py::array &lens,
                           float scale, const py::object &sinks,
                           const std::string &precision,
                           const py::object &kSpec, const py::object &vSpec,
                           bool accumulateF64) {
  AttentionArgs a =
      attentionArgs("decode_attention", q, cache, bt, lens, scale, sinks,
                    precision, kSpec, vSpec, accumulateF64);
  if (a.q.shape(0) != a.numSeqs)
    throw py::value_error("decode_attention: q has " +
                          std::to_string(a.q.shape(0)) + " rows for " +
                          std::to_string(a.numSeqs) + " sequences");
  F32Array out({a.q.shape(0), a.q.shape(1), a.q.shape(2)});
  Status st;
  {
    py::gil_scoped_release release;
    st = decodeAttention(a.kf, a.vf, a.g, a.cache.data(), a.p, a.q.data(),
                         a.numSeqs, a.q.shape(1), a.tables.data(), a.maxBlocks,
                         a.lens.data(), a.hasSinks ? a.sinks.data() : nullptr,
                         out.mutable_data());
  }
  check(st, "decode_attention");
  return out;
}

F32Array pagedAttentionNp(const py::array &q, const py::array &cache,
                          const py::array &bt, const py::array &lens,
                          const py::array &startsIn, float scale,
                          const py::object &sinks, const py::object &window,
                          const std::string &precision, const py::object &kSpec,
                          const py::object &vSpec, bool accumulateF64) {
  AttentionArgs a =
      attentionArgs("paged_attention", q, cache, bt, lens, scale, sinks,
                    precision, kSpec, vSpec, accumulateF64);
  expectRank(startsIn, 1, "paged_attention(query_start_loc)", "[num_seqs + 1]");
  if (startsIn.shape(0) != a.numSeqs + 1)
    throw py::value_error("paged_attention(query_start_loc): expected " +
                          std::to_string(a.numSeqs + 1) + " entries, got " +
                          std::to_string(startsIn.shape(0)));
  std::vector<int32_t> starts =
      asI32(startsIn, "paged_attention(query_start_loc)");
  int64_t w = 0;
  if (!window.is_none()) {
    w = py::cast<int64_t>(window);
    if (w < 1)
      throw py::value_error("paged_attention(window): expected None or a "
                            "number of tokens >= 1, got " +
                            std::to_string(w));
  }
  F32Array out({a.q.shape(0), a.q.shape(1), a.q.shape(2)});
  Status st;
  {
    py::gil_scoped_release release;
    st = pagedAttention(a.kf, a.vf, a.g, a.cache.data(), a.p, w, a.q.data(),
                        a.q.shape(0), a.q.shape(1), starts.data(), a.numSeqs,
                        a.tables.data(), a.maxBlocks, a.lens.data(),
                        a.hasSinks ? a.sinks.data() : nullptr,
                        out.mutable_data());
  }
  check(st, "paged_attention");
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
        py::arg("scale_rule") = "log_round",
        R"doc(Encode rows x[..., D] (float32, or bf16 bits as uint16).

Returns (codes uint8 [..., D/2], scales uint8 [..., D/group_size]) for FP4
(two codes per byte, element 2i in the low nibble); for code='fp8' the
codes are [..., D] E4M3 bytes and scales is empty; for 'bf16' [..., 2D].
rotate=True multiplies each row by H_D/sqrt(D) first (keys).
scale_rule='mse_search' picks each FP4 group's exponent among e0-1, e0,
e0+1 (e0 the 'log_round' one) by least squared error (ties to the
smaller; needs a power-of-two group_size), as
#uq.kv_format<..., scale_rule = mse_search>.)doc");
  m.def("dequantize", &dequantize, py::arg("codes"), py::arg("scales"),
        py::kw_only(), py::arg("rotate") = false, py::arg("unrotate") = false,
        py::arg("c") = 0.156, py::arg("group_size") = 32,
        py::arg("code") = "fp4",
        R"doc(Decode rows to float32 [..., D]. The result is in the coded
domain (rotated for keys) unless rotate=True and unrotate=True.)doc");
  m.def("quantize_dequantize", &roundTrip, py::arg("x"), py::kw_only(),
        py::arg("rotate") = false, py::arg("unrotate") = false,
        py::arg("c") = 0.156, py::arg("group_size") = 32,
        py::arg("rounding") = "ties_down", py::arg("code") = "fp4",
        py::arg("fp8_overflow") = "nan", py::arg("scale_rule") = "log_round",
        "encodeRow + decodeRow per row, float32 out (coded domain unless "
        "unrotate=True); scale_rule 'log_round' or 'mse_search' as in "
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
  m.def("cache_write", &cacheWriteNp, py::arg("k"), py::arg("v"),
        py::arg("slot_mapping"), py::arg("cache"), py::kw_only(),
        py::arg("k_format") = py::none(), py::arg("v_format") = py::none(),
        R"doc(ref::cacheWrite on a copy of `cache` (uint8 [num_blocks,
block_size, num_kv_heads, slot_bytes]): codes k and v ([num_tokens,
num_kv_heads, head_dim], float32 or bf16 bits as uint16) into the slots
slot_mapping[t] = block * block_size + offset (int64; negative = skip) and
returns the new cache. k_format / v_format: None for UltraQuant's key
(rotated FP4) and value (FP4) formats, or a dict of quantize()'s keywords
(code, rotate, c, group_size, rounding, fp8_overflow, scale_rule).)doc");
  m.def("decode_attention", &decodeAttentionNp, py::arg("q"), py::arg("cache"),
        py::arg("block_tables"), py::arg("seq_lens"), py::kw_only(),
        py::arg("scale"), py::arg("sinks") = py::none(),
        py::arg("query_precision") = "fp8_e4m3",
        py::arg("k_format") = py::none(), py::arg("v_format") = py::none(),
        py::arg("accumulate_f64") = false,
        R"doc(ref::decodeAttention, the meaning of uq.decode_attention: one
query token per sequence, q [num_seqs, num_q_heads, head_dim]; returns
float32 of q's shape. Rejects seq_lens and used block ids out of range.)doc");
  m.def("paged_attention", &pagedAttentionNp, py::arg("q"), py::arg("cache"),
        py::arg("block_tables"), py::arg("seq_lens"),
        py::arg("query_start_loc"), py::kw_only(), py::arg("scale"),
        py::arg("sinks") = py::none(), py::arg("window") = py::none(),
        py::arg("query_precision") = "fp8_e4m3",
        py::arg("k_format") = py::none(), py::arg("v_format") = py::none(),
        py::arg("accumulate_f64") = false,
        R"doc(ref::pagedAttention, the meaning of uq.paged_attention: prefill
chunks and decodes in one batch. q [num_tokens, num_q_heads, head_dim];
sequence s owns the query tokens query_start_loc[s]..query_start_loc[s+1]-1
and has seq_lens[s] context tokens in the cache (its new ones included);
token i of a sequence attends causally to keys 0..seq_len - query_len + i
(the last `window` of them with a window). Out-of-range index inputs follow
the input policy of docs/dialect.md (never an error). Returns float32 of
q's shape.)doc");
#else
  m.attr("has_reference") = false;
#endif
}

} // namespace uq::python
