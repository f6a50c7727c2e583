//===- Input.cpp - Bounded, checked reading of uq's inputs ----------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Support/Input.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Process.h"

using namespace mlir;

namespace {
llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// "1.5 GiB"-style sizes for messages (exact byte counts follow them).
std::string bytesText(uint64_t n) {
  if (n >= (uint64_t(1) << 30) && n % (uint64_t(1) << 30) == 0)
    return std::to_string(n >> 30) + " GiB";
  if (n >= (uint64_t(1) << 20) && n % (uint64_t(1) << 20) == 0)
    return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

const char *typeName(llvm::sys::fs::file_type t) {
  using llvm::sys::fs::file_type;
  switch (t) {
  case file_type::directory_file:
    return "a directory";
  case file_type::block_file:
    return "a block device";
  case file_type::character_file:
    return "a character device";
  case file_type::fifo_file:
    return "a FIFO";
  case file_type::socket_file:
    return "a socket";
  default:
    return "not a regular file";
  }
}

llvm::Error notRegular(llvm::StringRef path, llvm::sys::fs::file_type t,
                       llvm::StringRef what) {
  return fail("cannot read '" + path + "': it is " + typeName(t) +
              ", not a regular file (uq reads " + what +
              " from regular files only; docs/robustness.md)");
}

llvm::Error tooLarge(llvm::StringRef path, uint64_t size, uint64_t limit,
                     llvm::StringRef what) {
  std::string amount = std::to_string(size) + " bytes is";
  return fail("cannot read '" + path + "': " + amount + " over the " +
              bytesText(limit) + " limit for " + what +
              " (docs/robustness.md)");
}

/// Standard input, read in chunks up to `maxBytes`.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readStdin(uint64_t maxBytes, llvm::StringRef what) {
  llvm::sys::fs::file_status st;
  if (!llvm::sys::fs::status(0, st) &&
      st.type() != llvm::sys::fs::file_type::regular_file &&
      st.type() != llvm::sys::fs::file_type::fifo_file &&
      st.type() != llvm::sys::fs::file_type::socket_file &&
      !llvm::sys::Process::StandardInIsUserInput())
    return notRegular("<stdin>", st.type(), what);
  llvm::SmallString<0> data;
  char chunk[1 << 16];
  while (true) {
    llvm::Expected<size_t> n = llvm::sys::fs::readNativeFile(
        llvm::sys::fs::getStdinHandle(), llvm::MutableArrayRef(chunk));
    if (!n)
      return fail("cannot read " + what +
                  " from standard input: " + llvm::toString(n.takeError()));
    if (*n == 0)
      break;
    if (data.size() + *n > maxBytes)
      return tooLarge("<stdin>", data.size() + *n, maxBytes, what);
    data.append(chunk, chunk + *n);
  }
  return llvm::MemoryBuffer::getMemBufferCopy(data, "<stdin>");
}
} // namespace

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
uq::readInputFile(llvm::StringRef path, uint64_t maxBytes, llvm::StringRef what,
                  bool allowStdin, bool nullTerminated) {
  if (allowStdin && path == "-")
    return readStdin(maxBytes, what);
  // Look before opening: opening a FIFO blocks until a writer appears.
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(path, st))
    return fail("cannot read '" + path + "': " + ec.message());
  if (st.type() != llvm::sys::fs::file_type::regular_file)
    return notRegular(path, st.type(), what);
  llvm::Expected<llvm::sys::fs::file_t> fd =
      llvm::sys::fs::openNativeFileForRead(path);
  if (!fd)
    return fail("cannot read '" + path +
                "': " + llvm::toString(fd.takeError()));
  // Decide on what was opened, not on what the path named a moment ago.
  auto close = llvm::make_scope_exit([&] { llvm::sys::fs::closeFile(*fd); });
  if (std::error_code ec = llvm::sys::fs::status(*fd, st))
    return fail("cannot read '" + path + "': " + ec.message());
  if (st.type() != llvm::sys::fs::file_type::regular_file)
    return notRegular(path, st.type(), what);
  if (st.getSize() > maxBytes)
    return tooLarge(path, st.getSize(), maxBytes, what);
  auto buffer =
      llvm::MemoryBuffer::getOpenFile(*fd, path, st.getSize(), nullTerminated);
  if (!buffer)
    return fail("cannot read '" + path + "': " + buffer.getError().message());
  return std::move(*buffer);
}

namespace {
std::string nestingMessage(unsigned limit) {
  return "the input nests deeper than " + std::to_string(limit) +
         " levels (brackets or regions), uq's limit (docs/robustness.md)";
}

bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$';
}

/// `vector.from_elements %a, %b : vector<2xf32>` (the rest of its line in
/// \p rest): MLIR 22's parser builds one operand type per element of the
/// result before it compares the count with the operands, so a result of
/// 2^31 elements runs out of memory. True when the result type has more
/// elements than the line has operands (the parser would refuse it anyway).
bool fromElementsTooWide(llvm::StringRef rest, uint64_t &elements) {
  rest = rest.take_until([](char c) { return c == '\n'; });
  size_t colon = rest.rfind(':');
  if (colon == llvm::StringRef::npos)
    return false;
  llvm::StringRef type = rest.drop_front(colon + 1).ltrim();
  if (!type.consume_front("vector<"))
    return false;
  elements = 1;
  while (!type.empty() && llvm::isDigit(type.front())) {
    size_t digits = 0;
    while (digits < type.size() && llvm::isDigit(type[digits]))
      ++digits;
    uint64_t dim = 0;
    if (type.take_front(digits).getAsInteger(10, dim) ||
        (dim && elements > UINT64_MAX / dim))
      elements = UINT64_MAX;
    else
      elements *= dim;
    type = type.drop_front(digits);
    if (!type.consume_front("x"))
      break;
  }
  return elements > rest.take_front(colon).count('%');
}
} // namespace

std::optional<uq::TextViolation> uq::checkIRText(llvm::StringRef s) {
  // MLIR bytecode starts with "ML\xefR"; its reader does not recurse on
  // nesting, and checkOpNesting bounds what it produced.
  if (s.starts_with("ML\xef\x52"))
    return std::nullopt;
  const unsigned maxDepth = InputLimits::kMaxNesting;
  const unsigned maxTerms = InputLimits::kMaxAffineTerms;
  unsigned depth = 0, line = 1;
  size_t lineStart = 0, n = s.size();
  // Affine context: entered by a bracket right after `affine_map` /
  // `affine_set`, or by any bracket on the line of an `affine.` op; left
  // when the depth falls back below `affineDepth`.
  unsigned affineDepth = 0; // 0: not in an affine context
  unsigned terms = 0;
  bool affineKeyword = false, affineLine = false;
  // On the line of an llvm.insertvalue / llvm.extractvalue: MLIR 22's
  // parser crashes on a struct position of 2^32 or more.
  bool aggregateLine = false;
  auto violation = [&](size_t at, std::string msg) {
    return TextViolation{at, line, static_cast<unsigned>(at - lineStart + 1),
                         std::move(msg)};
  };
  auto countTerm = [&](size_t at) -> std::optional<TextViolation> {
    if (affineDepth && ++terms > maxTerms)
      return violation(at, "an affine expression has more than " +
                               std::to_string(maxTerms) +
                               " operators, uq's limit (docs/robustness.md)");
    return std::nullopt;
  };
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (isIdentifierChar(c) && !llvm::isDigit(c)) {
      size_t start = i;
      while (i + 1 < n && isIdentifierChar(s[i + 1]))
        ++i;
      llvm::StringRef word = s.slice(start, i + 1);
      affineKeyword = word == "affine_map" || word == "affine_set";
      if (word == "array") {
        // `array<index ...>`: MLIR 22's parser asks index for a bit width
        // (parseDenseArrayAttr -> getIntOrFloatBitWidth) and crashes.
        size_t j = i + 1;
        while (j < n && (s[j] == ' ' || s[j] == '\t'))
          ++j;
        if (j < n && s[j] == '<') {
          size_t k = j + 1;
          while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' ||
                           s[k] == '\r'))
            ++k;
          size_t e = k;
          while (e < n && isIdentifierChar(s[e]))
            ++e;
          if (s.slice(k, e) == "index")
            return violation(start,
                             "a dense array of index elements "
                             "(`array<index...>`) crashes MLIR 22's parser; "
                             "uq refuses it (docs/robustness.md)");
        }
      }
      if (word.starts_with("affine."))
        affineLine = true;
      if (word == "llvm.insertvalue" || word == "llvm.extractvalue")
        aggregateLine = true;
      uint64_t elements = 0;
      if (word == "vector.from_elements" &&
          fromElementsTooWide(s.drop_front(i + 1), elements))
        return violation(start,
                         "vector.from_elements with a result of " +
                             std::to_string(elements) +
                             " elements and fewer operands: MLIR 22's "
                             "parser makes one type per element first "
                             "(2^31 of them exhaust the memory); uq "
                             "refuses it (docs/robustness.md)");
      if (word == "floordiv" || word == "ceildiv" || word == "mod")
        if (auto v = countTerm(start))
          return v;
      continue;
    }
    if (llvm::isDigit(c)) {
      // A number, exponent sign included (`1.0e-5` is one term).
      size_t start = i;
      while (i + 1 < n && (isIdentifierChar(s[i + 1]) ||
                           ((s[i + 1] == '-' || s[i + 1] == '+') &&
                            (s[i] == 'e' || s[i] == 'E'))))
        ++i;
      affineKeyword = false;
      uint64_t value = 0;
      if (aggregateLine &&
          (s.slice(start, i + 1).getAsInteger(10, value) ||
           value > 0xffffffffu) &&
          llvm::all_of(s.slice(start, i + 1), llvm::isDigit))
        return violation(start,
                         "a position of 2^32 or more in llvm.insertvalue / "
                         "llvm.extractvalue crashes MLIR 22's parser; uq "
                         "refuses it (docs/robustness.md)");
      continue;
    }
    bool wasKeyword = affineKeyword;
    if (c != ' ' && c != '\t')
      affineKeyword = false;
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      affineLine = false;
      aggregateLine = false;
      break;
    case '"':
      // A string literal ends at the next unescaped quote; MLIR's lexer
      // rejects a newline inside one, so a newline ends it here too.
      for (++i; i < n && s[i] != '"' && s[i] != '\n'; ++i)
        if (s[i] == '\\' && i + 1 < n && s[i + 1] != '\n')
          ++i;
      if (i < n && s[i] == '\n') {
        ++line;
        lineStart = i + 1;
        affineLine = false;
        aggregateLine = false;
      }
      break;
    case '/':
      if (i + 1 < n && s[i + 1] == '/')
        while (i + 1 < n && s[i + 1] != '\n')
          ++i;
      break;
    case '{':
    case '[':
    case '(':
    case '<':
      if (++depth > maxDepth)
        return violation(i, nestingMessage(maxDepth));
      if (!affineDepth && (wasKeyword || affineLine)) {
        affineDepth = depth;
        terms = 0;
      }
      break;
    case '-':
      if (i + 1 < n && s[i + 1] == '>')
        break; // `->`
      [[fallthrough]];
    case '+':
    case '*':
      if (auto v = countTerm(i))
        return v;
      break;
    case '>':
      // `->` (function types, affine maps) and `>=` (integer sets) close
      // nothing.
      if ((i > 0 && s[i - 1] == '-') || (i + 1 < n && s[i + 1] == '='))
        break;
      [[fallthrough]];
    case '}':
    case ']':
    case ')':
      if (depth > 0) {
        if (depth == affineDepth)
          affineDepth = 0;
        --depth;
      }
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

LogicalResult uq::checkSourceText(llvm::StringRef source,
                                  llvm::StringRef bufferName,
                                  MLIRContext *ctx) {
  if (source.size() > InputLimits::kMaxSourceBytes)
    return emitError(FileLineColLoc::get(ctx, bufferName, 1, 1))
           << "the input is " << source.size() << " bytes, more than the "
           << bytesText(InputLimits::kMaxSourceBytes)
           << " limit for IR (docs/robustness.md)";
  if (std::optional<TextViolation> v = checkIRText(source))
    return emitError(FileLineColLoc::get(ctx, bufferName, v->line, v->column))
           << v->message;
  return success();
}

LogicalResult uq::checkOpNesting(Operation *root, unsigned limit) {
  struct Item {
    Operation *op;
    unsigned depth;
  };
  llvm::SmallVector<Item> work{{root, 0}};
  while (!work.empty()) {
    Item item = work.pop_back_val();
    if (item.depth > limit)
      // Not op->emitError: that would print the op, recursing into the very
      // nesting being refused.
      return emitError(item.op->getLoc()) << nestingMessage(limit);
    for (Region &region : item.op->getRegions())
      for (Block &block : region)
        for (Operation &child : block)
          work.push_back({&child, item.depth + 1});
  }
  return success();
}

namespace {
/// The number of elements of `shape`, or nullopt past 2^64.
std::optional<uint64_t> elementCount(ArrayRef<int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt; // dynamic (a tensor or memref) or malformed
    bool overflowed = false;
    n = llvm::SaturatingMultiply(n, static_cast<uint64_t>(d), &overflowed);
    if (overflowed)
      return std::nullopt;
  }
  return n;
}

std::string countText(std::optional<uint64_t> n) {
  return n ? std::to_string(*n) + " elements" : "more than 2^64 elements";
}
} // namespace

LogicalResult uq::checkValueSizes(Operation *root, int64_t maxVectorElements,
                                  int64_t maxConstantElements) {
  // One walker for the whole input: it visits each distinct type and
  // attribute once (AttrTypeWalker caches what it has seen), so a module
  // that repeats a type costs one check of it.
  std::string problem;
  AttrTypeWalker walker;
  walker.addWalk([&](VectorType t) {
    std::optional<uint64_t> n = elementCount(t.getShape());
    if (n && *n <= static_cast<uint64_t>(maxVectorElements))
      return WalkResult::advance();
    llvm::raw_string_ostream os(problem);
    os << "has the vector type " << t << " of " << countText(n)
       << ", more than uq's bound of " << maxVectorElements
       << " elements per vector (InputLimits::kMaxVectorElements, "
          "docs/robustness.md)";
    return WalkResult::interrupt();
  });
  // Every elements attribute (dense, sparse, resource): a sparse splat is
  // as short as a dense one, and LLVM materialises both in full.
  walker.addWalk([&](ElementsAttr a) {
    ShapedType type = a.getShapedType();
    std::optional<uint64_t> n = elementCount(type.getShape());
    if (n && *n <= static_cast<uint64_t>(maxConstantElements))
      return WalkResult::advance();
    llvm::raw_string_ostream os(problem);
    os << "has a constant of type " << type << " (" << countText(n)
       << "), more than uq's bound of " << maxConstantElements
       << " elements per constant (InputLimits::kMaxConstantElements, "
          "docs/robustness.md)";
    return WalkResult::interrupt();
  });
  WalkResult result = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    // Types first: a constant's vector type is named before its value.
    bool bad = false;
    for (Type t : op->getResultTypes())
      bad = bad || walker.walk(t).wasInterrupted();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          bad = bad || walker.walk(arg.getType()).wasInterrupted();
    bad = bad || walker.walk(op->getAttrDictionary()).wasInterrupted();
    if (!bad)
      return WalkResult::advance();
    // Not op->emitOpError: its note prints the op, a vector of 2^31
    // elements with it.
    emitError(op->getLoc()) << "'" << op->getName() << "' op " << problem;
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

OwningOpRef<ModuleOp> uq::parseSourceChecked(llvm::StringRef source,
                                             llvm::StringRef bufferName,
                                             MLIRContext *ctx) {
  if (failed(checkSourceText(source, bufferName, ctx)))
    return {};
  // Verify only once the nesting is known to be bounded.
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      source, ParserConfig(ctx, /*verifyAfterParse=*/false), bufferName);
  // The size check before the verifiers: it only reads types and
  // attributes, and no verifier then sees a vector of 2^31 elements.
  if (!module || failed(checkOpNesting(module->getOperation())) ||
      failed(checkValueSizes(module->getOperation())) ||
      failed(verify(module->getOperation())))
    return {};
  return module;
}
