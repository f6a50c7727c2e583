//===- CommandLine.cpp - --help of uq's tools -----------------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Support/CommandLine.h"

#include "llvm/ADT/STLExtras.h"

void uq::hideUnrelatedOptions(llvm::cl::OptionCategory &category) {
  hideUnrelatedOptions({&category});
}

void uq::hideUnrelatedOptions(
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *opt = entry.second;
    bool keep = llvm::any_of(opt->Categories, [&](llvm::cl::OptionCategory *c) {
      // LLVM's own --help/--version live in "Generic Options".
      return llvm::is_contained(categories, c) ||
             c->getName() == "Generic Options";
    });
    if (!keep && opt->getOptionHiddenFlag() == llvm::cl::NotHidden)
      opt->setHiddenFlag(llvm::cl::Hidden);
  }
}
