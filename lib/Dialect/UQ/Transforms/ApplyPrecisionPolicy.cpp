//===- ApplyPrecisionPolicy.cpp - KV formats from a policy JSON -----------===//
//
// Reads a `uq.precision-policy/1` JSON (docs/precision-policy.md) and sets
// the KV formats of the cache-write and attention ops of a module to the
// policy's choice for one layer.
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/Transforms/Passes.h"

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Support/Input.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <optional>

namespace uq {
#define GEN_PASS_DEF_UQAPPLYPRECISIONPOLICYPASS
#include "uq/Dialect/UQ/Transforms/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;

namespace {

/// The K and V formats of one policy spec.
struct FormatPair {
  KVFormatAttr key, value;
  bool quantized4Bit;
  /// `q=fp8s32`: per-32 UE8M0 query scales.
  bool scaledQuery = false;
};

/// Parses a number like `0.196` or a fraction like `1/6`.
std::optional<double> parseNumber(llvm::StringRef text) {
  auto [num, den] = text.split('/');
  double n, d = 1.0;
  if (num.trim().getAsDouble(n) ||
      (!den.empty() && den.trim().getAsDouble(d)) || d == 0.0)
    return std::nullopt;
  return n / d;
}

FailureOr<FormatPair> parseOneSpec(MLIRContext *ctx, llvm::StringRef spec,
                                   std::string &why);

/// Turns a policy format spec (`uq`, `uq:c=0.196,search`, `fp8`, `bf16`, and
/// `KSPEC|VSPEC`: K as in KSPEC, V as in VSPEC) into dialect formats, or
/// explains why it cannot.
FailureOr<FormatPair> parseSpec(MLIRContext *ctx, llvm::StringRef spec,
                                std::string &why) {
  auto [kSpec, vSpec] = spec.split('|');
  if (vSpec.empty() && !spec.contains('|'))
    return parseOneSpec(ctx, spec, why);
  if (vSpec.contains('|') || kSpec.trim().empty() || vSpec.trim().empty()) {
    why = "format '" + spec.str() + "': 'KSPEC|VSPEC' takes exactly two specs";
    return failure();
  }
  FailureOr<FormatPair> k = parseOneSpec(ctx, kSpec.trim(), why);
  if (failed(k))
    return failure();
  FailureOr<FormatPair> v = parseOneSpec(ctx, vSpec.trim(), why);
  if (failed(v))
    return failure();
  // The query path follows K's format.
  return FormatPair{k->key, v->value, k->quantized4Bit, k->scaledQuery};
}

FailureOr<FormatPair> parseOneSpec(MLIRContext *ctx, llvm::StringRef spec,
                                   std::string &why) {
  auto [kind, opts] = spec.split(':');
  kind = kind.trim();
  if (kind == "fp8" || kind == "bf16") {
    if (!opts.empty()) {
      why = "format '" + spec.str() + "' takes no options";
      return failure();
    }
    ElementCode code =
        kind == "fp8" ? ElementCode::fp8_e4m3 : ElementCode::bf16;
    KVFormatAttr f = KVFormatAttr::getDefault(ctx, code, Rotation::none);
    return FormatPair{f, f, false};
  }
  if (kind != "uq") {
    why = "format '" + spec.str() +
          "' has no uq dialect equivalent (uq, uq:OPTIONS, fp8 and bf16 do)";
    return failure();
  }
  double ck = 0.156, cv = 0.156;
  bool rotateK = true, rotateV = false, search = false, nearestEven = false;
  bool e4m3V = false, scaledQuery = false;
  unsigned groupV = 32;
  SmallVector<llvm::StringRef> parts;
  opts.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.trim().split('=');
    if (key == "c" || key == "ck" || key == "cv") {
      std::optional<double> c = parseNumber(value);
      if (!c || !KVFormatAttr::isValidScaleConstant(*c)) {
        why = "bad value of '" + key.str() + "' in format '" + spec.str() +
              "' (c must be a finite, positive, normal f32 value)";
        return failure();
      }
      if (key != "cv")
        ck = *c;
      if (key != "ck")
        cv = *c;
    } else if (key == "norot") {
      rotateK = false;
    } else if (key == "rotv") {
      rotateV = true;
    } else if (key == "search") {
      search = true;
    } else if (key == "nearest_even") {
      nearestEven = true;
    } else if (key == "q" && value == "fp8") {
      // The default query path.
    } else if (key == "q" && value == "fp8s32") {
      scaledQuery = true;
    } else if (key == "vs" && (value == "e4m3" || value == "ue8m0")) {
      e4m3V = value == "e4m3";
    } else if (key == "gv" && (value == "16" || value == "32")) {
      groupV = value == "16" ? 16 : 32;
    } else if (key == "kmean" || key == "vmean") {
      why = "option '" + part.trim().str() + "' of format '" + spec.str() +
            "' is not a #uq.kv_format field: channel means are the k_mean / "
            "v_mean operands of uq.cache_write and the attention ops, which "
            "the model integration supplies";
      return failure();
    } else {
      why = "option '" + part.trim().str() + "' of format '" + spec.str() +
            "' is not expressible in #uq.kv_format (q=bf16, balance scales, "
            "principal directions and fp6 are study-only)";
      return failure();
    }
  }
  auto make = [&](double c, bool rotate, unsigned group, ScaleEncoding scale) {
    return KVFormatAttr::get(
        ctx, ElementCode::fp4_e2m1, group, scale, llvm::APFloat(c),
        rotate ? Rotation::hadamard : Rotation::none,
        nearestEven ? Rounding::nearest_even : Rounding::ties_down,
        search ? ScaleRule::mse_search : ScaleRule::log_round);
  };
  // `vs=e4m3`: V scales in E4M3 with the study's c = 1/6 (c/cv apply to
  // UE8M0 scales only).
  return FormatPair{
      make(ck, rotateK, 32, ScaleEncoding::ue8m0),
      e4m3V ? make(1.0 / 6.0, rotateV, groupV, ScaleEncoding::e4m3)
            : make(cv, rotateV, groupV, ScaleEncoding::ue8m0),
      true, scaledQuery};
}

/// The policy's format spec for (layer, kvHead).
std::string specFor(const llvm::json::Object &policy, int64_t layer,
                    int64_t kvHead) {
  std::string spec = policy.getString("default").value_or("uq").str();
  std::optional<std::string> perLayer, perHead;
  if (const llvm::json::Array *overrides = policy.getArray("overrides"))
    for (const llvm::json::Value &v : *overrides) {
      const llvm::json::Object *o = v.getAsObject();
      if (!o || o->getInteger("layer") != layer)
        continue;
      std::optional<llvm::StringRef> fmt = o->getString("format");
      if (!fmt)
        continue;
      if (std::optional<int64_t> h = o->getInteger("kv_head")) {
        if (*h == kvHead)
          perHead = fmt->str();
      } else {
        perLayer = fmt->str();
      }
    }
  if (perHead)
    return *perHead;
  if (perLayer)
    return *perLayer;
  return spec;
}

} // namespace

LogicalResult uq::applyPrecisionPolicy(ModuleOp module,
                                       llvm::StringRef policyText,
                                       llvm::StringRef policyName,
                                       int64_t layer) {
  MLIRContext *ctx = module.getContext();
  bool ok = true;
  auto fail = [&](Location loc, const llvm::Twine &msg) {
    emitError(loc) << "uq-apply-precision-policy: " << msg;
    ok = false;
  };
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(policyText);
  if (!json) {
    fail(module.getLoc(), "policy '" + policyName + "' is not JSON: " +
                              llvm::toString(json.takeError()));
    return failure();
  }
  const llvm::json::Object *root = json->getAsObject();
  if (!root || root->getString("schema") != "uq.precision-policy/1") {
    fail(module.getLoc(), "policy '" + policyName +
                              "' is not a uq.precision-policy/1 document");
    return failure();
  }

  module.walk([&](Operation *op) {
    int64_t numKVHeads;
    if (auto write = dyn_cast<CacheWriteOp>(op))
      numKVHeads = write.getCacheType().getDimSize(2);
    else if (auto attn = dyn_cast<DecodeAttentionOp>(op))
      numKVHeads = attn.getNumKVHeads();
    else if (auto part = dyn_cast<DecodeAttentionPartialOp>(op))
      numKVHeads = part.getNumKVHeads();
    else if (auto paged = dyn_cast<PagedAttentionOp>(op))
      numKVHeads = paged.getNumKVHeads();
    else
      return WalkResult::advance();
    std::string spec = specFor(*root, layer, 0);
    for (int64_t h = 1; h < numKVHeads; ++h)
      if (specFor(*root, layer, h) != spec) {
        fail(op->getLoc(), "the policy gives layer " + llvm::Twine(layer) +
                               "'s KV heads different formats ('" + spec +
                               "', '" + specFor(*root, layer, h) +
                               "'); a uq cache has one format per layer");
        return WalkResult::interrupt();
      }
    std::string why;
    FailureOr<FormatPair> formats = parseSpec(ctx, spec, why);
    if (failed(formats)) {
      fail(op->getLoc(), why);
      return WalkResult::interrupt();
    }
    op->setAttr("k_format", formats->key);
    op->setAttr("v_format", formats->value);
    // The study measured FP8/BF16 caches with an unrounded query.
    if (isa<DecodeAttentionOp, DecodeAttentionPartialOp, PagedAttentionOp>(op))
      op->setAttr("query_precision",
                  QueryPrecisionAttr::get(
                      ctx, !formats->quantized4Bit ? QueryPrecision::f32
                           : formats->scaledQuery
                               ? QueryPrecision::fp8_e4m3_scaled
                               : QueryPrecision::fp8_e4m3));
    return WalkResult::advance();
  });
  return success(ok);
}

namespace {

struct ApplyPrecisionPolicyPass
    : public uq::impl::UQApplyPrecisionPolicyPassBase<
          ApplyPrecisionPolicyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto buffer = readInputFile(policy, InputLimits::kMaxPolicyBytes,
                                "a precision policy");
    if (!buffer) {
      emitError(module.getLoc()) << "uq-apply-precision-policy: "
                                 << llvm::toString(buffer.takeError());
      return signalPassFailure();
    }
    if (failed(applyPrecisionPolicy(module, (*buffer)->getBuffer(), policy,
                                    layer)))
      signalPassFailure();
  }
};

} // namespace
