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
