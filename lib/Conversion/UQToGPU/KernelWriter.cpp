//===- KernelWriter.cpp - Text builder for kernel templates ---------------===//

#include "KernelWriter.h"

#include <cctype>
#include <cstdio>
#include <cstring>

using namespace uq::kernels;

void KernelWriter::emit(llvm::StringRef text) {
  size_t i = 0;
  while (i < text.size()) {
    char ch = text[i];
    if (ch != '$') {
      out.push_back(ch);
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (
        j < text.size() &&
        (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
      ++j;
    // The longest known key that prefixes the identifier ("$QNx" is "$QN"
    // followed by "x").
    size_t k = j;
    for (; k > i + 1; --k)
      if (vars.count(text.slice(i + 1, k)))
        break;
    if (k == i + 1) {
      // Unknown keys stay as written so the parser reports them.
      out.append(text.slice(i, j).str());
      i = j;
      continue;
    }
    out.append(vars.find(text.slice(i + 1, k))->second);
    i = k;
  }
  out.push_back('\n');
}

std::string uq::kernels::f32Literal(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08X", bits);
  return buf;
}

std::string uq::kernels::f64Literal(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016llX",
                static_cast<unsigned long long>(bits));
  return buf;
}

std::string
uq::kernels::emitShuffleXorF64(KernelWriter &w, llvm::StringRef value,
                               llvm::StringRef offset, llvm::StringRef width,
                               llvm::StringRef c32, llvm::StringRef prefix) {
  std::string p = prefix.str();
  std::string text;
  auto line = [&](const std::string &l) { text += "      " + l + "\n"; };
  std::string v = value.str(), o = offset.str(), wd = width.str(),
              c = c32.str();
  line("%" + p + "_b = arith.bitcast " + v + " : f64 to i64");
  line("%" + p + "_lo = arith.trunci %" + p + "_b : i64 to i32");
  line("%" + p + "_hs = arith.shrui %" + p + "_b, " + c + " : i64");
  line("%" + p + "_hi = arith.trunci %" + p + "_hs : i64 to i32");
  line("%" + p + "_plo, %" + p + "_ok1 = gpu.shuffle xor %" + p + "_lo, " + o +
       ", " + wd + " : i32");
  line("%" + p + "_phi, %" + p + "_ok2 = gpu.shuffle xor %" + p + "_hi, " + o +
       ", " + wd + " : i32");
  line("%" + p + "_pl = arith.extui %" + p + "_plo : i32 to i64");
  line("%" + p + "_ph0 = arith.extui %" + p + "_phi : i32 to i64");
  line("%" + p + "_ph = arith.shli %" + p + "_ph0, " + c + " : i64");
  line("%" + p + "_pb = arith.ori %" + p + "_ph, %" + p + "_pl : i64");
  line("%" + p + "_p = arith.bitcast %" + p + "_pb : i64 to f64");
  // Appended as is: no `$` substitution happens in these lines.
  w.emitRaw(text);
  return "%" + p + "_p";
}

void uq::kernels::emitButterflyXorF64(KernelWriter &w, llvm::StringRef value,
                                      llvm::StringRef offset,
                                      llvm::StringRef width,
                                      llvm::StringRef c32,
                                      llvm::StringRef upper,
                                      llvm::StringRef result) {
  std::string r = result.drop_front().str(), v = value.str();
  std::string p = emitShuffleXorF64(w, value, offset, width, c32, r + "_sh");
  w.emitRaw("      %" + r + "_sum = arith.addf " + v + ", " + p + " : f64\n" +
            "      %" + r + "_dif = arith.subf " + p + ", " + v + " : f64\n" +
            "      " + result.str() + " = arith.select " + upper.str() + ", %" +
            r + "_dif, %" + r + "_sum : f64\n");
}
