//===- CommandLine.h - --help of uq's tools ---------------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// uq's tools link LLVM and MLIR, whose libraries register a few hundred
/// command-line options of their own. Each tool puts its options in one
/// llvm::cl::OptionCategory and calls hideUnrelatedOptions before parsing:
/// `--help` then lists the tool's options (and the generic --help/--version)
/// only, and `--help-hidden` lists everything, as MLIR's tools do. Unlike
/// llvm::cl::HideUnrelatedOptions, which makes the other options
/// ReallyHidden (absent even from --help-hidden), this only hides them.
///
/// LLVM prints categories sorted by name, after comparing bytes: a tool's
/// category name starts with a capital letter before 'G' so that it comes
/// before "Generic Options".
///
//===----------------------------------------------------------------------===//

#ifndef UQ_SUPPORT_COMMANDLINE_H
#define UQ_SUPPORT_COMMANDLINE_H

#include "llvm/Support/CommandLine.h"

namespace uq {

/// Hides from --help every registered option that is neither in `category`
/// nor a generic option (--help, --version, ...); --help-hidden still lists
/// them.
void hideUnrelatedOptions(llvm::cl::OptionCategory &category);
/// The same for a tool whose options fall into several categories (its
/// modes, say), each named to sort before "Generic Options".
void hideUnrelatedOptions(
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories);

} // namespace uq

#endif // UQ_SUPPORT_COMMANDLINE_H
