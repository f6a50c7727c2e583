//===- Npy.cpp - Minimal .npy reader and writer ---------------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/Npy.h"
#include "uq/Support/Output.h"

#include "uq/Support/Input.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace uq::runtime;
using llvm::StringRef;

namespace {
llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += mlir::ShapedType::isDynamic(shape[i]) ? std::string("?")
                                                : std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

/// Value of key \p key in the header dict text (the characters after
/// "'key':" up to the matching end), or an empty string.
std::string dictValue(StringRef header, StringRef key) {
  std::string pattern = ("'" + key + "'").str();
  size_t at = header.find(pattern);
  if (at == StringRef::npos)
    return "";
  StringRef rest = header.drop_front(at + pattern.size()).ltrim();
  if (!rest.consume_front(":"))
    return "";
  rest = rest.ltrim();
  if (rest.starts_with("'")) {
    size_t end = rest.find('\'', 1);
    return end == StringRef::npos ? "" : rest.substr(0, end + 1).str();
  }
  if (rest.starts_with("(")) {
    size_t end = rest.find(')');
    return end == StringRef::npos ? "" : rest.substr(0, end + 1).str();
  }
  size_t end = rest.find_first_of(",}");
  return rest.substr(0, end).trim().str();
}

int64_t descrItemSize(StringRef descr) {
  if (descr.size() < 3)
    return -1;
  int64_t n;
  if (descr.drop_front(2).getAsInteger(10, n))
    return -1;
  return n;
}
} // namespace

llvm::Expected<NpyArray> uq::runtime::parseNpy(StringRef bytes,
                                               StringRef name) {
  auto bad = [&](const llvm::Twine &why) {
    return fail("malformed .npy file '" + name + "': " + why);
  };
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return bad("missing the \\x93NUMPY magic");
  unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) |
                (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i]))
                   << (8 * i);
    start = 12;
  } else {
    return bad("unsupported format version " + llvm::Twine(major));
  }
  if (start + headerLen > bytes.size())
    return bad("truncated header");
  StringRef header = bytes.substr(start, headerLen);

  NpyArray a;
  std::string descr = dictValue(header, "descr");
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'')
    return bad("no 'descr' string in the header");
  a.descr = descr.substr(1, descr.size() - 2);
  if (a.descr.size() >= 1 && a.descr[0] == '=')
    a.descr[0] = '<'; // Native order is little-endian here.
  if (!a.descr.empty() && a.descr[0] == '>' && descrItemSize(a.descr) > 1)
    return bad("big-endian data ('" + a.descr + "') is not supported");
  std::string fortran = dictValue(header, "fortran_order");
  if (fortran == "True")
    return bad("Fortran-order arrays are not supported (save a C-order "
               "array)");
  if (fortran != "False")
    return bad("no 'fortran_order' in the header");
  std::string shape = dictValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return bad("no 'shape' tuple in the header");
  llvm::SmallVector<StringRef> parts;
  StringRef(shape).drop_front().drop_back().split(parts, ',');
  for (StringRef p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t n;
    if (p.getAsInteger(10, n) || n < 0)
      return bad("bad dimension '" + p + "' in the shape");
    a.shape.push_back(n);
  }
  int64_t item = descrItemSize(a.descr);
  if (item <= 0)
    return bad("unsupported dtype '" + a.descr + "'");
  uint64_t count = 1;
  for (int64_t n : a.shape) {
    if (n != 0 && count > (uint64_t(1) << 48) / static_cast<uint64_t>(n))
      return bad("shape too large");
    count *= static_cast<uint64_t>(n);
  }
  uint64_t need = count * static_cast<uint64_t>(item);
  StringRef payload = bytes.drop_front(start + headerLen);
  if (payload.size() != need)
    return bad("expected " + llvm::Twine(need) + " data bytes for shape " +
               shapeText(a.shape) + " of '" + a.descr + "', found " +
               llvm::Twine(payload.size()));
  a.data.assign(payload.bytes_begin(), payload.bytes_end());
  return a;
}

llvm::Expected<NpyArray> uq::runtime::readNpy(StringRef path) {
  auto buf = uq::readInputFile(path, uq::InputLimits::kMaxNpyBytes, ".npy file",
                               /*allowStdin=*/false,
                               /*nullTerminated=*/false);
  if (!buf)
    return buf.takeError();
  return parseNpy((*buf)->getBuffer(), path);
}

std::string uq::runtime::serializeNpy(const NpyArray &a) {
  std::string dict = "{'descr': '" + a.descr +
                     "', 'fortran_order': False, 'shape': " +
                     shapeText(a.shape) + ", }";
  // Pad magic + length + dict + '\n' to a multiple of 64 bytes.
  bool v2 = dict.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = dict.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    out += static_cast<char>((len >> (8 * i)) & 0xFF);
  out += dict;
  out.append(reinterpret_cast<const char *>(a.data.data()), a.data.size());
  return out;
}

llvm::Error uq::runtime::writeNpy(StringRef path, const NpyArray &array) {
  // Whole or not at all (uq/Support/Output.h): a failed write leaves no
  // partial file and is an error, not LLVM's fatal "IO failure".
  return uq::writeOutputFile(path, serializeNpy(array));
}

namespace {
/// The descriptors accepted for \p t on input; the first is what we write.
std::vector<std::string> acceptedDescrs(DType t) {
  switch (t) {
  case DType::F32:
    return {"<f4"};
  case DType::F64:
    return {"<f8"};
  case DType::F16:
    return {"<f2"};
  case DType::BF16:
    return {"<u2"};
  case DType::I1:
    return {"|b1"};
  case DType::I8:
  case DType::F8:
  case DType::F4:
    return {"|u1", "|i1"};
  case DType::I16:
    return {"<i2", "<u2"};
  case DType::I32:
    return {"<i4", "<u4"};
  case DType::I64:
    return {"<i8", "<u8"};
  }
  return {};
}

const char *numpyName(StringRef descr) {
  static const std::pair<const char *, const char *> names[] = {
      {"<f4", "float32"}, {"<f8", "float64"}, {"<f2", "float16"},
      {"<u2", "uint16"},  {"|b1", "bool"},    {"|u1", "uint8"},
      {"|i1", "int8"},    {"<i2", "int16"},   {"<i4", "int32"},
      {"<u4", "uint32"},  {"<i8", "int64"},   {"<u8", "uint64"}};
  for (auto &[d, n] : names)
    if (descr == d)
      return n;
  return nullptr;
}

std::string describe(StringRef descr) {
  const char *n = numpyName(descr);
  return n ? (std::string(n) + " ('" + descr.str() + "')")
           : ("'" + descr.str() + "'");
}
} // namespace

llvm::Expected<HostTensor>
uq::runtime::npyToTensor(const NpyArray &array, const TensorSpec &spec,
                         StringRef source) {
  std::vector<std::string> ok = acceptedDescrs(spec.dtype);
  if (std::find(ok.begin(), ok.end(), array.descr) == ok.end()) {
    std::string want;
    for (size_t i = 0; i < ok.size(); ++i)
      want += (i ? " or " : "") + describe(ok[i]);
    std::string note;
    if (spec.dtype == DType::BF16)
      note = " (bf16 travels as uint16 bit patterns)";
    return fail(spec.name + " (" + spec.type + "): '" + source +
                "' holds " + describe(array.descr) + ", expected " + want +
                note);
  }
  // Logical shape: 4-bit floats are packed two per byte in the file.
  std::vector<int64_t> shape = array.shape;
  if (spec.dtype == DType::F4 && !shape.empty())
    shape.back() *= 2;
  bool match = shape.size() == spec.shape.size();
  for (size_t i = 0; match && i < shape.size(); ++i)
    if (!mlir::ShapedType::isDynamic(spec.shape[i]) &&
        spec.shape[i] != shape[i])
      match = false;
  if (!match)
    return fail(spec.name + " (" + spec.type + "): '" + source +
                "' has shape " + shapeText(array.shape) + ", expected " +
                shapeText(spec.shape) +
                (spec.dtype == DType::F4
                     ? " with the last dimension halved (packed nibbles)"
                     : ""));
  HostTensor t;
  t.dtype = spec.dtype;
  t.shape = shape;
  if (spec.dtype == DType::F4) {
    t.data.resize(array.data.size() * 2);
    for (size_t i = 0; i < array.data.size(); ++i) {
      t.data[2 * i] = array.data[i] & 0xF;
      t.data[2 * i + 1] = array.data[i] >> 4;
    }
  } else {
    t.data = array.data;
  }
  return t;
}

NpyArray uq::runtime::tensorToNpy(const HostTensor &t) {
  NpyArray a;
  a.descr = acceptedDescrs(t.dtype).front();
  a.shape = t.shape;
  if (t.dtype == DType::F4) {
    if (!a.shape.empty())
      a.shape.back() = (a.shape.back() + 1) / 2;
    a.data.assign((t.data.size() + 1) / 2, 0);
    for (size_t i = 0; i < t.data.size(); ++i)
      a.data[i / 2] |= (t.data[i] & 0xF) << (i % 2 ? 4 : 0);
  } else {
    a.data = t.data;
  }
  return a;
}
