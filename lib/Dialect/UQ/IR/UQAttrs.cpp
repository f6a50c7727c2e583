//===- UQAttrs.cpp - Attributes of the uq dialect -------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"
#include <charconv>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace uq;

#include "uq/Dialect/UQ/IR/UQEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "uq/Dialect/UQ/IR/UQAttrs.cpp.inc"

void UQDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "uq/Dialect/UQ/IR/UQAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// KVFormatAttr
//===----------------------------------------------------------------------===//

namespace {
/// Defaults of the optional fields of #uq.kv_format, which depend on the
/// element code (and the group size on the scale encoding).
ScaleEncoding defaultScale(ElementCode e) {
  return e == ElementCode::fp4_e2m1 ? ScaleEncoding::ue8m0
                                    : ScaleEncoding::none;
}
unsigned defaultGroup(ScaleEncoding s) {
  return s == ScaleEncoding::none ? 0 : 32;
}
/// The scale rule is `2^round(log2(c * absmax))`: 0.156 is UltraQuant's
/// constant (the paper's MSE-optimal value for the FP4 grid). Formats
/// without scales (FP8, BF16) have no scale rule and c = 0.
double defaultC(ElementCode e) {
  return e == ElementCode::fp4_e2m1 ? 0.156 : 0.0;
}
/// With E4M3 scales the group maximum maps onto the largest FP4 level, 6.
double defaultCFor(ElementCode e, ScaleEncoding s) {
  return s == ScaleEncoding::e4m3 ? 1.0 / 6.0 : defaultC(e);
}
Rounding defaultRounding(ElementCode e) {
  return e == ElementCode::fp4_e2m1 ? Rounding::ties_down
                                    : Rounding::nearest_even;
}

} // namespace

bool KVFormatAttr::isValidScaleConstant(double c) {
  return c >= static_cast<double>(std::numeric_limits<float>::min()) &&
         c <= static_cast<double>(std::numeric_limits<float>::max());
}

std::string KVFormatAttr::formatScaleConstant(double c) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), c);
  std::string out(buf, res.ptr);
  // MLIR's float literal is `[0-9]+ '.' [0-9]* ([eE] [-+]? [0-9]+)?`: the
  // mantissa needs its dot ("1e-05" lexes as the integer 1 and "e-05").
  // Non-finite values (rejected by the verifier) are left as they are.
  if (!std::isfinite(c) || out.find('.') != std::string::npos)
    return out;
  size_t e = out.find_first_of("eE");
  if (e == std::string::npos)
    return out + ".0";
  return out.insert(e, ".0");
}

KVFormatAttr KVFormatAttr::getDefault(MLIRContext *ctx, ElementCode element,
                                      Rotation rotation) {
  ScaleEncoding scale = defaultScale(element);
  return KVFormatAttr::get(ctx, element, defaultGroup(scale), scale,
                           llvm::APFloat(defaultC(element)), rotation,
                           defaultRounding(element), ScaleRule::log_round);
}

unsigned KVFormatAttr::getElementBits() const {
  switch (getElement()) {
  case ElementCode::fp4_e2m1:
    return 4;
  case ElementCode::fp8_e4m3:
    return 8;
  case ElementCode::bf16:
    return 16;
  }
  llvm_unreachable("unknown element code");
}

int64_t KVFormatAttr::getCodeBytes(int64_t headDim) const {
  return headDim * getElementBits() / 8;
}

int64_t KVFormatAttr::getScaleBytes(int64_t headDim) const {
  return hasScales() ? headDim / getGroupSize() : 0;
}

Attribute KVFormatAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  StringRef elementName;
  if (parser.parseLess() || parser.parseKeyword(&elementName))
    return {};
  std::optional<ElementCode> element = symbolizeElementCode(elementName);
  if (!element) {
    parser.emitError(loc, "unknown element code '")
        << elementName << "' (expected fp4_e2m1, fp8_e4m3 or bf16)";
    return {};
  }
  std::optional<unsigned> group;
  std::optional<ScaleEncoding> scale;
  std::optional<double> c;
  std::optional<Rotation> rotation;
  std::optional<Rounding> rounding;
  std::optional<ScaleRule> scaleRule;

  while (succeeded(parser.parseOptionalComma())) {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    auto parseEnum = [&](auto symbolize, auto &slot,
                         StringRef expected) -> bool {
      SMLoc valueLoc = parser.getCurrentLocation();
      StringRef value;
      if (parser.parseKeyword(&value))
        return false;
      auto parsed = symbolize(value);
      if (!parsed) {
        parser.emitError(valueLoc, "unknown ")
            << key << " '" << value << "' (expected " << expected << ")";
        return false;
      }
      slot = *parsed;
      return true;
    };
    auto duplicate = [&](bool present) {
      if (present)
        parser.emitError(keyLoc, "'") << key << "' given twice";
      return present;
    };
    if (key == "group") {
      unsigned value;
      if (duplicate(group.has_value()) || parser.parseInteger(value))
        return {};
      group = value;
    } else if (key == "scale") {
      if (duplicate(scale.has_value()) ||
          !parseEnum([](StringRef v) { return symbolizeScaleEncoding(v); },
                     scale, "none, ue8m0 or e4m3"))
        return {};
    } else if (key == "c") {
      double value;
      if (duplicate(c.has_value()) || parser.parseFloat(value))
        return {};
      c = value;
    } else if (key == "rotation") {
      if (duplicate(rotation.has_value()) ||
          !parseEnum([](StringRef v) { return symbolizeRotation(v); }, rotation,
                     "none or hadamard"))
        return {};
    } else if (key == "rounding") {
      if (duplicate(rounding.has_value()) ||
          !parseEnum([](StringRef v) { return symbolizeRounding(v); }, rounding,
                     "ties_down or nearest_even"))
        return {};
    } else if (key == "scale_rule") {
      if (duplicate(scaleRule.has_value()) ||
          !parseEnum([](StringRef v) { return symbolizeScaleRule(v); },
                     scaleRule, "log_round or mse_search"))
        return {};
    } else {
      parser.emitError(keyLoc, "unknown kv_format field '")
          << key
          << "' (expected group, scale, c, rotation, rounding or scale_rule)";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};

  ScaleEncoding s = scale.value_or(defaultScale(*element));
  return parser.getChecked<KVFormatAttr>(
      loc, ctx, *element, group.value_or(defaultGroup(s)), s,
      llvm::APFloat(c.value_or(defaultCFor(*element, s))),
      rotation.value_or(Rotation::none),
      rounding.value_or(defaultRounding(*element)),
      scaleRule.value_or(ScaleRule::log_round));
}

void KVFormatAttr::print(AsmPrinter &printer) const {
  ElementCode e = getElement();
  printer << "<" << stringifyElementCode(e);
  if (getScale() != defaultScale(e))
    printer << ", scale = " << stringifyScaleEncoding(getScale());
  if (getGroupSize() != defaultGroup(getScale()))
    printer << ", group = " << getGroupSize();
  if (hasScales() && getCValue() != defaultCFor(e, getScale()))
    printer << ", c = " << formatScaleConstant(getCValue());
  if (getRotation() != Rotation::none)
    printer << ", rotation = " << stringifyRotation(getRotation());
  if (getRounding() != defaultRounding(e))
    printer << ", rounding = " << stringifyRounding(getRounding());
  if (getScaleRule() != ScaleRule::log_round)
    printer << ", scale_rule = " << stringifyScaleRule(getScaleRule());
  printer << ">";
}

LogicalResult KVFormatAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ElementCode element, unsigned groupSize,
                                   ScaleEncoding scale, llvm::APFloat cValue,
                                   Rotation rotation, Rounding rounding,
                                   ScaleRule scaleRule) {
  double c = cValue.convertToDouble();
  if (scale == ScaleEncoding::none) {
    if (element == ElementCode::fp4_e2m1)
      return emitError() << "fp4_e2m1 needs per-group scales (scale = ue8m0)";
    if (groupSize != 0)
      return emitError() << "a group size needs scales (scale = ue8m0)";
    // Without scales c means nothing and is not printed: a value other than
    // the default would not survive a print/parse round trip.
    if (c != defaultC(element))
      return emitError() << "c needs scales (scale = ue8m0); "
                         << stringifyElementCode(element)
                         << " without scales has no scale rule";
  } else {
    if (element == ElementCode::bf16)
      return emitError() << "bf16 elements take no scale";
    // MX-FP8 (E4M3 codes with UE8M0 group scales) is expressible but no
    // lowering (CPU or gfx950) and no reference implements it.
    if (element == ElementCode::fp8_e4m3 && scale == ScaleEncoding::ue8m0)
      return emitError() << "fp8_e4m3 with ue8m0 scales (MX-FP8) is not "
                            "supported: no lowering or reference implements "
                            "it; use fp8_e4m3 without scales or fp4_e2m1";
    if (groupSize == 0 || groupSize % 2 != 0)
      return emitError() << "group size must be a positive even number, got "
                         << groupSize;
    if (!isValidScaleConstant(c))
      return emitError()
             << "c must be a finite, positive, normal f32 value (in "
                "[1.1754944e-38, 3.4028235e+38]), got "
             << formatScaleConstant(c);
  }
  if (scale == ScaleEncoding::e4m3 && element != ElementCode::fp4_e2m1)
    return emitError() << "scale = e4m3 is defined for fp4_e2m1 elements only";
  if (scaleRule != ScaleRule::log_round &&
      (element != ElementCode::fp4_e2m1 || scale == ScaleEncoding::none))
    return emitError() << "scale_rule = " << stringifyScaleRule(scaleRule)
                       << " is defined for fp4_e2m1 with scales only";
  if (scaleRule == ScaleRule::mse_search && !llvm::isPowerOf2_32(groupSize))
    return emitError() << "scale_rule = mse_search needs a power-of-two group "
                          "size, got "
                       << groupSize;
  if (element != ElementCode::fp4_e2m1 && rounding != Rounding::nearest_even)
    return emitError() << stringifyElementCode(element)
                       << " elements round to nearest even only";
  return success();
}

//===----------------------------------------------------------------------===//
// CacheLayoutAttr
//===----------------------------------------------------------------------===//

int64_t CacheLayoutAttr::getBlockSizeDim() const {
  return getKind() == LayoutKind::head_major ? 2 : 1;
}

int64_t CacheLayoutAttr::getKVHeadsDim() const {
  return getKind() == LayoutKind::head_major ? 1 : 2;
}

int64_t CacheLayoutAttr::getKeyScaleOffset(int64_t headDim,
                                           KVFormatAttr kFormat) const {
  return kFormat.getCodeBytes(headDim);
}

int64_t CacheLayoutAttr::getValueCodeOffset(int64_t headDim,
                                            KVFormatAttr kFormat) const {
  return getKeyScaleOffset(headDim, kFormat) + kFormat.getScaleBytes(headDim);
}

int64_t CacheLayoutAttr::getValueScaleOffset(int64_t headDim,
                                             KVFormatAttr kFormat,
                                             KVFormatAttr vFormat) const {
  return getValueCodeOffset(headDim, kFormat) + vFormat.getCodeBytes(headDim);
}

int64_t CacheLayoutAttr::getSlotBytes(int64_t headDim, KVFormatAttr kFormat,
                                      KVFormatAttr vFormat) const {
  return getValueScaleOffset(headDim, kFormat, vFormat) +
         vFormat.getScaleBytes(headDim);
}

//===----------------------------------------------------------------------===//
// LaneLayoutAttr
//===----------------------------------------------------------------------===//

SmallVector<int64_t> LaneLayoutAttr::getShape() const {
  SmallVector<int64_t> shape;
  for (int64_t d = 0, e = getRank(); d < e; ++d)
    shape.push_back(getBatch()[d] * getThreads()[d] * getElems()[d]);
  return shape;
}

int64_t LaneLayoutAttr::getElementsPerLane() const {
  int64_t n = 1;
  for (int64_t d = 0, e = getRank(); d < e; ++d)
    n *= getBatch()[d] * getElems()[d];
  return n;
}

LogicalResult
LaneLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       ArrayRef<int64_t> batch, ArrayRef<int64_t> threads,
                       ArrayRef<int64_t> elems, ArrayRef<int64_t> strides) {
  size_t rank = batch.size();
  if (rank == 0 || threads.size() != rank || elems.size() != rank ||
      strides.size() != rank)
    return emitError() << "lane_layout needs batch, threads, elems and "
                          "lane_strides of one equal, non-zero rank";
  uint64_t used = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (batch[d] <= 0 || elems[d] <= 0 || threads[d] <= 0)
      return emitError() << "lane_layout sizes must be positive";
    if (!llvm::isPowerOf2_64(threads[d]) || !llvm::isPowerOf2_64(strides[d]) ||
        threads[d] * strides[d] > 64)
      return emitError() << "lane_layout dimension " << d << ": " << threads[d]
                         << " lanes of stride " << strides[d]
                         << " must be powers of two within 64 lanes";
    uint64_t bits = (uint64_t(threads[d]) - 1) * uint64_t(strides[d]);
    if (used & bits)
      return emitError() << "lane_layout dimensions share lane bits";
    used |= bits;
  }
  return success();
}

namespace {
ParseResult parseIntList(AsmParser &p, StringRef key,
                         SmallVectorImpl<int64_t> &out) {
  if (p.parseKeyword(key) || p.parseEqual())
    return failure();
  return p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    int64_t v;
    if (p.parseInteger(v))
      return failure();
    out.push_back(v);
    return success();
  });
}
} // namespace

Attribute LaneLayoutAttr::parse(AsmParser &p, Type) {
  SmallVector<int64_t> batch, threads, elems, strides;
  if (p.parseLess() || parseIntList(p, "batch", batch) || p.parseComma() ||
      parseIntList(p, "threads", threads) || p.parseComma() ||
      parseIntList(p, "elems", elems) || p.parseComma() ||
      parseIntList(p, "lane_strides", strides) || p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); },
                    p.getContext(), batch, threads, elems, strides);
}

void LaneLayoutAttr::print(AsmPrinter &p) const {
  auto list = [&](StringRef key, ArrayRef<int64_t> v) {
    p << key << " = [";
    llvm::interleaveComma(v, p);
    p << "]";
  };
  p << "<";
  list("batch", getBatch());
  p << ", ";
  list("threads", getThreads());
  p << ", ";
  list("elems", getElems());
  p << ", ";
  list("lane_strides", getLaneStrides());
  p << ">";
}
