//===- Launch.cpp - Run the uq ops of a code object -----------------------===//
//
// Groups the kernel JSON's kernels into uq ops (`<func>_<n>_<kernel>`),
// classifies each op's buffers by their `access` across its launch
// sequence (read first: an operand; written and read later: a workspace;
// written and never read again: an output), infers the run-time sizes from
// the operands' shapes and the rest by the grid rules of
// docs/uq-compile.md, then launches on a Device.
//
//===----------------------------------------------------------------------===//

#include "uq/Runtime/Launch.h"

#include "uq/Conversion/DecodePartitions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <climits>
#include <mutex>
#include <set>

using namespace llvm;
using namespace uq;
using namespace uq::launch;

namespace {

/// An error about the caller's input.
Error usage(const Twine &m) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           m);
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

std::string shapeString(const BufferInfo &b) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(b.shape))
    s += (i ? ", " : "") + (d.second.empty() ? std::to_string(d.first)
                                              : d.second);
  return s + "]";
}

/// The kernel kinds of an op, by name suffix, in launch order.
constexpr const char *kSuffixes[] = {"cache_write", "query",   "partial",
                                     "single",      "prefill", "merge"};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

int64_t Array::numElements() const {
  // Saturates at INT64_MAX (no array is that large) instead of overflowing.
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

const char *uq::launch::opKindName(OpKind k) {
  switch (k) {
  case OpKind::CacheWrite:
    return "cache_write";
  case OpKind::DecodeAttention:
    return "decode_attention";
  case OpKind::DecodeAttentionPartial:
    return "decode_attention_partial";
  case OpKind::MergePartitions:
    return "merge_partitions";
  case OpKind::PagedAttention:
    return "paged_attention";
  }
  return "?";
}

struct Program::Impl {
  std::vector<uint8_t> codeObject;
  std::vector<emu::KernelDescription> kernels;
  std::vector<OpInfo> ops;
  std::unique_ptr<Device> device;
  /// One run at a time on the device (Python releases the GIL in run).
  std::mutex runMutex;

  const emu::KernelDescription *kernel(StringRef name) const {
    for (const emu::KernelDescription &k : kernels)
      if (k.name == name)
        return &k;
    return nullptr;
  }
  /// The first of \p op's kernels that has param \p key.
  std::optional<int64_t> param(const OpInfo &op, StringRef key) const {
    for (const std::string &k : op.kernels) {
      const emu::KernelDescription *d = kernel(k);
      auto it = d->params.find(key.str());
      if (it != d->params.end())
        return it->second;
    }
    return std::nullopt;
  }
  Error buildOps();
  Error checkIndices(const OpInfo &op, const Operands &operands,
                     const std::map<std::string, int64_t> &sizes) const;
};

Program::Program() : impl(std::make_unique<Impl>()) {}
Program::~Program() = default;
const std::vector<OpInfo> &Program::ops() const { return impl->ops; }
Device &Program::device() { return *impl->device; }

Error Program::Impl::buildOps() {
  // Kernels grouped by prefix, in the JSON's order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::string>> groups;
  for (const emu::KernelDescription &k : kernels) {
    StringRef name = k.name;
    StringRef suffix;
    for (const char *s : kSuffixes)
      if (name.ends_with(std::string("_") + s)) {
        suffix = s;
        break;
      }
    if (suffix.empty())
      return usage("kernel JSON: kernel '" + name +
                   "' is not a uq op's kernel (<func>_<n>_cache_write, "
                   "_query, _partial, _single, _prefill or _merge)");
    std::string base = name.drop_back(suffix.size() + 1).str();
    if (!groups.count(base))
      order.push_back(base);
    groups[base][suffix.str()] = name.str();
  }
  for (const std::string &base : order) {
    auto &g = groups[base];
    OpInfo op;
    op.name = base;
    std::set<std::string> present;
    for (auto &[s, n] : g)
      present.insert(s);
    using Set = std::set<std::string>;
    if (present == Set{"cache_write"})
      op.kind = OpKind::CacheWrite;
    else if (present == Set{"query", "partial", "merge"} ||
             present == Set{"query", "partial", "single", "merge"})
      op.kind = OpKind::DecodeAttention;
    else if (present == Set{"query", "partial"})
      op.kind = OpKind::DecodeAttentionPartial;
    else if (present == Set{"merge"})
      op.kind = OpKind::MergePartitions;
    else if (present == Set{"query", "prefill", "merge"})
      op.kind = OpKind::PagedAttention;
    else
      return usage("kernel JSON: the kernels of '" + base +
                   "' are no uq op's launch sequence");
    for (const char *s : kSuffixes)
      if (g.count(s))
        op.kernels.push_back(g[s]);
    // Buffers by access across the sequence; sizes in first-use order.
    std::vector<std::string> produced;
    std::set<std::string> seen, consumed;
    std::map<std::string, BufferInfo> infos;
    for (const std::string &kn : op.kernels) {
      const emu::KernelDescription *k = kernel(kn);
      for (const emu::ArgSpec &a : k->args) {
        if (a.name.empty())
          return usage("kernel JSON: an argument of '" + kn +
                       "' has no name");
        if (!a.isBuffer) {
          if (!llvm::is_contained(op.sizes, a.name))
            op.sizes.push_back(a.name);
          continue;
        }
        if (a.access.empty())
          return usage("kernel JSON: argument '" + a.name + "' of '" + kn +
                       "' has no \"access\" (a JSON from an older "
                       "uq-compile?)");
        BufferInfo b;
        b.name = a.name;
        b.dtype = a.dtype;
        for (const emu::DimSpec &d : a.shape)
          b.shape.push_back(
              {d.extent, d.argIndex >= 0 ? k->args[d.argIndex].name : ""});
        // One buffer, one dtype and shape across the launch sequence.
        if (seen.count(a.name) &&
            (infos[a.name].dtype != b.dtype || infos[a.name].shape != b.shape))
          return usage("kernel JSON: buffer '" + a.name + "' is " +
                       infos[a.name].dtype + " " +
                       shapeString(infos[a.name]) + " in an earlier kernel "
                       "of '" + base + "' but " + b.dtype + " " +
                       shapeString(b) + " in '" + kn + "'");
        if (seen.insert(a.name).second) {
          infos[a.name] = b;
          if (a.access == "write") {
            produced.push_back(a.name);
          } else {
            op.inputs.push_back(b);
            if (a.access == "read_write")
              op.outputs.push_back(b);
          }
        } else if (a.access != "write" &&
                   llvm::is_contained(produced, a.name)) {
          consumed.insert(a.name);
        }
      }
    }
    for (const std::string &p : produced)
      (consumed.count(p) ? op.workspaces : op.outputs).push_back(infos[p]);
    ops.push_back(std::move(op));
  }
  return Error::success();
}

Expected<std::unique_ptr<Program>>
Program::load(ArrayRef<uint8_t> codeObject, StringRef kernelsJson,
              std::unique_ptr<Device> device) {
  auto kernels = emu::parseKernelsJson(kernelsJson);
  if (!kernels)
    return kernels.takeError();
  // The JSON must describe this code object: every kernel in it, with the
  // metadata's number of explicit arguments.
  auto co = emu::CodeObject::load(codeObject);
  if (!co)
    return co.takeError();
  for (const emu::KernelDescription &k : *kernels) {
    auto info = (*co)->findKernel(k.name);
    if (!info) {
      consumeError(info.takeError());
      return usage("the kernel JSON's kernel '" + k.name +
                   "' is not in the code object (another program's JSON?)");
    }
    if ((*info)->numExplicitArgs() != k.args.size())
      return usage("kernel '" + k.name + "': the JSON has " +
                   Twine(k.args.size()) + " arguments, the code object " +
                   Twine((*info)->numExplicitArgs()));
  }
  std::unique_ptr<Program> p(new Program());
  p->impl->codeObject.assign(codeObject.begin(), codeObject.end());
  p->impl->kernels = std::move(*kernels);
  if (Error e = p->impl->buildOps())
    return std::move(e);
  p->impl->device = device ? std::move(device) : createEmulatorDevice();
  if (Error e = p->impl->device->loadCodeObject(p->impl->codeObject))
    return std::move(e);
  return p;
}

Expected<std::unique_ptr<Program>>
Program::loadFile(StringRef codeObjectPath, StringRef jsonPath,
                  std::unique_ptr<Device> device) {
  std::string json = jsonPath.empty() ? (codeObjectPath + ".json").str()
                                      : jsonPath.str();
  auto read = [](StringRef path) -> Expected<std::unique_ptr<MemoryBuffer>> {
    sys::fs::file_status st;
    if (std::error_code ec = sys::fs::status(path, st))
      return usage("cannot read '" + path + "': " + ec.message());
    if (st.type() != sys::fs::file_type::regular_file)
      return usage("cannot read '" + path + "': not a regular file");
    if (st.getSize() > emu::kMaxCodeObjectBytes)
      return usage("'" + path + "' is larger than 256 MiB");
    auto buf = MemoryBuffer::getFile(path, /*IsText=*/false);
    if (!buf)
      return usage("cannot read '" + path + "': " +
                   buf.getError().message());
    return std::move(*buf);
  };
  auto co = read(codeObjectPath);
  if (!co)
    return co.takeError();
  auto js = read(json);
  if (!js)
    return js.takeError();
  auto p = load(ArrayRef<uint8_t>(
                    reinterpret_cast<const uint8_t *>((*co)->getBufferStart()),
                    (*co)->getBufferSize()),
                (*js)->getBuffer(), std::move(device));
  if (!p)
    return usage(json + ": " + toString(p.takeError()));
  return p;
}

Expected<const OpInfo *> Program::findOp(StringRef name) const {
  const OpInfo *found = nullptr;
  std::vector<std::string> names;
  for (const OpInfo &op : impl->ops) {
    names.push_back(op.name + " (" + opKindName(op.kind) + ")");
    if (op.name == name)
      return &op;
  }
  StringRef kind = name;
  kind.consume_front("uq.");
  for (const OpInfo &op : impl->ops) {
    if (kind != opKindName(op.kind))
      continue;
    if (found)
      return usage("the program has several " + kind + " ops (" +
                   found->name + ", " + op.name + "): name one");
    found = &op;
  }
  if (!found)
    return usage("the program has no op '" + name + "'; it has " +
                 (names.empty() ? std::string("none") : join(names, ", ")));
  return found;
}

// One long function on purpose: it is the runtime's checklist (steps 1 to 5
// of docs/runtime.md, in that order), each step a few lines that read and
// extend the same `sizes` map; split, the steps would pass that map and the
// op's buffers through every call.
Expected<std::map<std::string, int64_t>>
Program::plan(StringRef opName, const Operands &operands,
              const RunOptions &options) const {
  auto opOr = findOp(opName);
  if (!opOr)
    return opOr.takeError();
  const OpInfo &op = **opOr;
  std::string where = std::string("uq.") + opKindName(op.kind) + " (" +
                      op.name + ")";
  // Every operand given, none unknown.
  for (const BufferInfo &in : op.inputs) {
    auto it = operands.find(in.name);
    if (it == operands.end() || !it->second)
      return usage(where + ": missing operand '" + in.name + "' " +
                   shapeString(in) + " " + in.dtype);
  }
  for (auto &[name, a] : operands)
    if (!llvm::any_of(op.inputs,
                      [&](const BufferInfo &b) { return b.name == name; })) {
      std::vector<std::string> want;
      for (const BufferInfo &b : op.inputs)
        want.push_back(b.name);
      return usage(where + ": unknown operand '" + name + "' (the op takes " +
                   join(want, ", ") + ")");
    }
  // Dtypes, ranks, fixed extents; sizes from the symbolic extents.
  std::map<std::string, int64_t> sizes;
  std::map<std::string, std::string> sizeSource;
  for (const BufferInfo &in : op.inputs) {
    const Array &a = *operands.at(in.name);
    std::string what = where + ": operand '" + in.name + "'";
    bool bytesAlike = in.dtype == "u8" && a.dtype == "i8";
    if (a.dtype != in.dtype && !bytesAlike)
      return usage(what + " must be " + in.dtype + ", not " +
                   (a.dtype.empty() ? std::string("(no dtype)") : a.dtype));
    if (a.shape.size() != in.shape.size())
      return usage(what + " must have shape " + shapeString(in) +
                   ", not " + shapeString(a.shape));
    for (int64_t d : a.shape)
      if (d < 0)
        return usage(what + " has a negative extent: " +
                     shapeString(a.shape));
    unsigned esize = emu::dtypeSize(in.dtype);
    uint64_t need = 0;
    if (__builtin_mul_overflow(uint64_t(a.numElements()), uint64_t(esize),
                               &need) ||
        need != a.bytes.size())
      return usage(what + " holds " + Twine(a.bytes.size()) +
                   " bytes, not the " + Twine(esize) + " per element its "
                   "shape " + shapeString(a.shape) + " needs");
    for (auto [i, d] : llvm::enumerate(in.shape)) {
      int64_t got = a.shape[i];
      if (d.second.empty()) {
        if (got != d.first)
          return usage(what + " must have shape " + shapeString(in) +
                       ", not " + shapeString(a.shape) + " (dimension " +
                       Twine(i) + " is compiled in as " + Twine(d.first) +
                       ")");
        continue;
      }
      auto [it, fresh] = sizes.insert({d.second, got});
      if (fresh) {
        sizeSource[d.second] = in.name;
      } else if (it->second != got) {
        return usage(what + " has " + d.second + " = " + Twine(got) +
                     " (dimension " + Twine(i) + " of " +
                     shapeString(a.shape) + "), but '" +
                     sizeSource[d.second] + "' has " + Twine(it->second));
      }
    }
  }
  // The caller's sizes: only the op's, never against an operand's.
  for (auto &[name, v] : options.sizes) {
    if (!llvm::is_contained(op.sizes, name))
      return usage(where + ": unknown size '" + name + "' (the op's are " +
                   join(op.sizes, ", ") + ")");
    auto it = sizes.find(name);
    if (it != sizes.end() && it->second != v)
      return usage(where + ": size " + name + " = " + Twine(v) +
                   " contradicts operand '" + sizeSource[name] +
                   "', which has " + Twine(it->second));
    if (v < 0)
      return usage(where + ": size " + name + " = " + Twine(v) +
                   " is negative");
  }
  auto given = [&](StringRef name) -> std::optional<int64_t> {
    auto it = options.sizes.find(name.str());
    if (it == options.sizes.end())
      return std::nullopt;
    return it->second;
  };
  // The grid rules' sizes (docs/uq-compile.md).
  for (const std::string &name : op.sizes) {
    if (sizes.count(name))
      continue;
    if (name == "num_partitions") {
      std::optional<int64_t> ps = impl->param(op, "partition_size"),
                             bs = impl->param(op, "block_size");
      if (!ps || !bs || *ps <= 0 || !sizes.count("max_blocks"))
        return usage(where + ": the kernel JSON gives no partition_size and "
                             "block_size for the num_partitions rule");
      int64_t rule = std::max<int64_t>(
          1, ceilDiv(sizes["max_blocks"] * *bs, *ps));
      // uq.decode_attention's partition rule when the JSON gives its
      // constants (uq/Conversion/DecodePartitions.h, docs/uq-compile.md).
      std::optional<int64_t> maxT = impl->param(op, "max_partition_tokens"),
                             minT = impl->param(op, "min_partition_tokens"),
                             target = impl->param(op, "target_workgroups"),
                             hkv = impl->param(op, "num_kv_heads");
      if (maxT && minT && target && hkv && sizes.count("num_seqs")) {
        if (*maxT <= 0 || *minT <= 0 || *target <= 0 || *hkv <= 0)
          return usage(where + ": the kernel JSON's partition rule constants "
                               "must be positive");
        rule = decodePartitionCount({*maxT, *minT, *target},
                                    sizes["num_seqs"], *hkv,
                                    sizes["max_blocks"] * *bs);
      }
      if (std::optional<int64_t> g = given(name)) {
        if (*g < 1)
          return usage(where + ": num_partitions must be at least 1");
        rule = *g;
      }
      sizes[name] = rule;
    } else if (name == "num_query_tiles") {
      std::optional<int64_t> tpt = impl->param(op, "tokens_per_tile");
      if (!tpt || *tpt <= 0 || !sizes.count("num_tokens") ||
          !sizes.count("num_seqs"))
        return usage(where + ": the kernel JSON gives no tokens_per_tile "
                             "for the num_query_tiles rule");
      int64_t least = sizes["num_tokens"] / *tpt + sizes["num_seqs"] + 2;
      int64_t v = least;
      if (std::optional<int64_t> g = given(name)) {
        if (*g < least)
          return usage(where + ": num_query_tiles = " + Twine(*g) +
                       " is below the grid rule's num_tokens / " +
                       Twine(*tpt) + " + num_seqs + 2 = " + Twine(least));
        v = *g;
      }
      sizes[name] = v;
    } else if (std::optional<int64_t> g = given(name)) {
      sizes[name] = *g;
    } else {
      return usage(where + ": missing size '" + name +
                   "': no operand's shape gives it and it has no rule; "
                   "pass it in the sizes");
    }
  }
  for (auto &[name, v] : sizes)
    if (v > INT32_MAX)
      return usage(where + ": size " + name + " = " + Twine(v) +
                   " does not fit the kernels' i32");
  // Every device buffer of the run, within options.maxBufferBytes.
  uint64_t total = 0;
  std::string largest;
  uint64_t largestBytes = 0;
  for (const auto *list : {&op.inputs, &op.workspaces, &op.outputs})
    for (const BufferInfo &b : *list) {
      if (list == &op.outputs &&
          llvm::any_of(op.inputs, [&](const BufferInfo &i) {
            return i.name == b.name;
          }))
        continue; // read_write: counted as an input
      uint64_t n = emu::dtypeSize(b.dtype);
      bool overflow = false;
      for (auto &d : b.shape) {
        uint64_t e = d.second.empty() ? uint64_t(d.first) : sizes[d.second];
        overflow |= __builtin_mul_overflow(n, e, &n);
      }
      overflow |= __builtin_add_overflow(total, n, &total);
      if (n > largestBytes || overflow) {
        largestBytes = n;
        largest = b.name;
      }
      if (overflow || (options.maxBufferBytes && total > options.maxBufferBytes))
        return usage(where + ": the run's buffers need more than " +
                     Twine(options.maxBufferBytes) + " bytes (maxBufferBytes; "
                     "the largest is '" + largest + "')");
    }
  if (options.checkIndices)
    if (Error e = impl->checkIndices(op, operands, sizes))
      return std::move(e);
  return sizes;
}

Error Program::Impl::checkIndices(
    const OpInfo &op, const Operands &operands,
    const std::map<std::string, int64_t> &sizes) const {
  std::string where = std::string("uq.") + opKindName(op.kind) + " (" +
                      op.name + ")";
  auto size = [&](StringRef n) {
    auto it = sizes.find(n.str());
    return it == sizes.end() ? int64_t(0) : it->second;
  };
  std::optional<int64_t> bsOr = param(op, "block_size");
  if (op.kind == OpKind::MergePartitions)
    return Error::success();
  if (!bsOr || *bsOr <= 0)
    return usage(where + ": the kernel JSON gives no block_size");
  const int64_t bs = *bsOr, numBlocks = size("num_blocks");
  if (op.kind == OpKind::CacheWrite) {
    std::vector<int64_t> slots = operands.at("slot_mapping")->values<int64_t>();
    for (auto [i, s] : llvm::enumerate(slots))
      if (s >= numBlocks * bs)
        return usage(where + ": slot_mapping[" + Twine(i) + "] = " +
                     Twine(s) + " is past the cache (num_blocks * "
                     "block_size = " + Twine(numBlocks * bs) +
                     " slots; negative slots are skipped)");
    return Error::success();
  }
  const int64_t seqs = size("num_seqs"), maxBlocks = size("max_blocks");
  std::vector<int32_t> lens = operands.at("seq_lens")->values<int32_t>();
  std::vector<int32_t> tables =
      operands.at("block_tables")->values<int32_t>();
  for (int64_t s = 0; s < seqs; ++s) {
    if (lens[s] < 0 || lens[s] > maxBlocks * bs)
      return usage(where + ": seq_lens[" + Twine(s) + "] = " +
                   Twine(lens[s]) + " is outside [0, max_blocks * "
                   "block_size = " + Twine(maxBlocks * bs) + "]");
    for (int64_t j = 0; j < ceilDiv(lens[s], bs); ++j) {
      int32_t b = tables[s * maxBlocks + j];
      if (b < 0 || b >= numBlocks)
        return usage(where + ": block_tables[" + Twine(s) + ", " + Twine(j) +
                     "] = " + Twine(b) + " is not a block of the cache "
                     "(num_blocks = " + Twine(numBlocks) + "), and sequence " +
                     Twine(s) + " uses it for its " + Twine(lens[s]) +
                     " tokens");
    }
  }
  if (op.kind != OpKind::PagedAttention)
    return Error::success();
  std::vector<int32_t> qsl = operands.at("query_start_loc")->values<int32_t>();
  if (int64_t(qsl.size()) != seqs + 1)
    return usage(where + ": query_start_loc must have num_seqs + 1 = " +
                 Twine(seqs + 1) + " entries, not " + Twine(qsl.size()));
  const int64_t tokens = size("num_tokens");
  for (int64_t s = 0; s <= seqs; ++s) {
    if (qsl[s] < 0 || qsl[s] > tokens || (s && qsl[s] < qsl[s - 1]))
      return usage(where + ": query_start_loc[" + Twine(s) + "] = " +
                   Twine(qsl[s]) + " is not ascending within [0, num_tokens "
                   "= " + Twine(tokens) + "]");
    if (s && qsl[s] - qsl[s - 1] > lens[s - 1])
      return usage(where + ": sequence " + Twine(s - 1) + " has " +
                   Twine(qsl[s] - qsl[s - 1]) + " query tokens but seq_lens[" +
                   Twine(s - 1) + "] = " + Twine(lens[s - 1]) +
                   " (its new tokens must be in the cache)");
  }
  return Error::success();
}

Expected<Results> Program::run(StringRef opName, const Operands &operands,
                               const RunOptions &options) {
  auto sizesOr = plan(opName, operands, options);
  if (!sizesOr)
    return sizesOr.takeError();
  std::map<std::string, int64_t> &sizes = *sizesOr;
  const OpInfo &op = **findOp(opName);
  std::lock_guard<std::mutex> lock(impl->runMutex);
  Device &dev = *impl->device;
  auto bytesOf = [&](const BufferInfo &b) {
    uint64_t n = emu::dtypeSize(b.dtype);
    for (auto &d : b.shape)
      n *= d.second.empty() ? uint64_t(d.first) : uint64_t(sizes[d.second]);
    return n;
  };
  auto shapeOf = [&](const BufferInfo &b) {
    std::vector<int64_t> s;
    for (auto &d : b.shape)
      s.push_back(d.second.empty() ? d.first : sizes[d.second]);
    return s;
  };
  // Device buffers by name, released on every path.
  std::map<std::string, DevicePtr> buffers;
  auto releaseAll = [&]() -> Error {
    Error all = Error::success();
    for (auto &[n, p] : buffers)
      if (p)
        all = joinErrors(std::move(all), dev.release(p));
    buffers.clear();
    return all;
  };
  auto fail = [&](Error e) -> Error {
    return joinErrors(std::move(e), releaseAll());
  };
  auto allocate = [&](const BufferInfo &b) -> Error {
    if (buffers.count(b.name))
      return Error::success();
    uint64_t n = bytesOf(b);
    DevicePtr p = 0;
    if (n) {
      auto got = dev.allocate(n);
      if (!got)
        return got.takeError();
      p = *got;
    }
    buffers[b.name] = p;
    return Error::success();
  };
  for (const BufferInfo &b : op.inputs) {
    if (Error e = allocate(b))
      return fail(std::move(e));
    const Array &a = *operands.at(b.name);
    if (!a.bytes.empty())
      if (Error e = dev.copyToDevice(buffers[b.name], a.bytes.data(),
                                     a.bytes.size()))
        return fail(std::move(e));
  }
  for (const BufferInfo &b : op.workspaces)
    if (Error e = allocate(b))
      return fail(std::move(e));
  for (const BufferInfo &b : op.outputs) {
    if (buffers.count(b.name))
      continue; // read_write: uploaded as an input
    if (Error e = allocate(b))
      return fail(std::move(e));
    // Defined contents where a kernel writes nothing (empty grids).
    std::vector<uint8_t> zeros(bytesOf(b), 0);
    if (!zeros.empty())
      if (Error e = dev.copyToDevice(buffers[b.name], zeros.data(),
                                     zeros.size()))
        return fail(std::move(e));
  }
  // A decode with a single-pass kernel: that kernel alone when there is one
  // partition, the partial and merge kernels otherwise (the compiler's host
  // code makes the same choice).
  const bool hasSingle = llvm::any_of(op.kernels, [](const std::string &k) {
    return StringRef(k).ends_with("_single");
  });
  const bool onePass = hasSingle && sizes.count("num_partitions") &&
                       sizes["num_partitions"] == 1;
  for (const std::string &kn : op.kernels) {
    if (hasSingle) {
      StringRef n = kn;
      bool single = n.ends_with("_single");
      bool split = n.ends_with("_partial") || n.ends_with("_merge");
      if ((onePass && split) || (!onePass && single))
        continue;
    }
    const emu::KernelDescription &k = *impl->kernel(kn);
    std::array<uint32_t, 3> grid = {1, 1, 1};
    if (!k.grid)
      return fail(usage("kernel JSON: '" + kn + "' has no grid"));
    bool empty = false;
    for (int i = 0; i < 3; ++i) {
      const emu::DimSpec &d = (*k.grid)[i];
      int64_t v = d.argIndex >= 0 ? sizes[k.args[d.argIndex].name] : d.extent;
      grid[i] = uint32_t(v);
      empty |= v == 0;
    }
    if (empty)
      continue; // the grid rules: no workgroups, no launch
    std::vector<LaunchArg> args;
    for (const emu::ArgSpec &a : k.args) {
      LaunchArg la;
      la.isBuffer = a.isBuffer;
      if (a.isBuffer)
        la.buffer = buffers.at(a.name);
      else
        la.value = int32_t(sizes.at(a.name));
      args.push_back(la);
    }
    if (Error e = dev.launch(
            k, grid, k.block.value_or(std::array<uint32_t, 3>{64, 1, 1}),
            args))
      return fail(createStringError(inconvertibleErrorCode(),
                                    "launching " + kn + " on " + dev.name() +
                                        ": " + toString(std::move(e))));
  }
  if (Error e = dev.synchronize())
    return fail(std::move(e));
  Results results;
  for (const BufferInfo &b : op.outputs) {
    Array out;
    out.dtype = b.dtype;
    out.shape = shapeOf(b);
    out.bytes.resize(bytesOf(b));
    if (!out.bytes.empty())
      if (Error e = dev.copyToHost(out.bytes.data(), buffers[b.name],
                                   out.bytes.size()))
        return fail(std::move(e));
    results[b.name] = std::move(out);
  }
  if (Error e = releaseAll())
    return std::move(e);
  return results;
}

namespace {
/// \p base plus \p extra (which must not repeat a name).
Expected<Operands> withExtra(Operands base, const Operands &extra) {
  for (auto &[n, a] : extra)
    if (!base.emplace(n, a).second)
      return usage("operand '" + n + "' is given twice");
  return base;
}

/// The single output \p name of \p r.
Expected<Array> take(Expected<Results> r, StringRef name) {
  if (!r)
    return r.takeError();
  auto it = r->find(name.str());
  if (it == r->end())
    return createStringError(inconvertibleErrorCode(),
                             "the op returned no '" + name + "'");
  return std::move(it->second);
}

/// \p op, or the only op of \p kind; an error if it is another kind.
Expected<std::string> pick(const Program &p, StringRef op, OpKind kind) {
  auto found = p.findOp(op.empty() ? StringRef(opKindName(kind)) : op);
  if (!found)
    return found.takeError();
  if ((*found)->kind != kind)
    return usage("op '" + op + "' is a " + opKindName((*found)->kind) +
                 ", not a " + opKindName(kind));
  return (*found)->name;
}
} // namespace

Expected<Array> Program::cacheWrite(const Array &key, const Array &value,
                                    const Array &slotMapping,
                                    const Array &cache, const Operands &extra,
                                    StringRef op, const RunOptions &options) {
  auto name = pick(*this, op, OpKind::CacheWrite);
  if (!name)
    return name.takeError();
  auto ops = withExtra({{"key", &key},
                        {"value", &value},
                        {"slot_mapping", &slotMapping},
                        {"cache", &cache}},
                       extra);
  if (!ops)
    return ops.takeError();
  return take(run(*name, *ops, options), "cache");
}

Expected<Array> Program::decodeAttention(const Array &query,
                                         const Array &cache,
                                         const Array &blockTables,
                                         const Array &seqLens,
                                         const Array *sinks,
                                         const Operands &extra, StringRef op,
                                         const RunOptions &options) {
  auto name = pick(*this, op, OpKind::DecodeAttention);
  if (!name)
    return name.takeError();
  Operands base = {{"query", &query},
                   {"cache", &cache},
                   {"block_tables", &blockTables},
                   {"seq_lens", &seqLens}};
  if (sinks)
    base["sinks"] = sinks;
  auto ops = withExtra(base, extra);
  if (!ops)
    return ops.takeError();
  return take(run(*name, *ops, options), "out");
}

Expected<Array> Program::pagedAttention(
    const Array &query, const Array &cache, const Array &blockTables,
    const Array &seqLens, const Array &queryStartLoc, const Array *sinks,
    const Operands &extra, StringRef op, const RunOptions &options) {
  auto name = pick(*this, op, OpKind::PagedAttention);
  if (!name)
    return name.takeError();
  Operands base = {{"query", &query},
                   {"cache", &cache},
                   {"block_tables", &blockTables},
                   {"seq_lens", &seqLens},
                   {"query_start_loc", &queryStartLoc}};
  if (sinks)
    base["sinks"] = sinks;
  auto ops = withExtra(base, extra);
  if (!ops)
    return ops.takeError();
  return take(run(*name, *ops, options), "out");
}

Expected<Results> Program::decodeAttentionPartial(
    const Array &query, const Array &cache, const Array &blockTables,
    const Array &seqLens, const Operands &extra, StringRef op,
    const RunOptions &options) {
  auto name = pick(*this, op, OpKind::DecodeAttentionPartial);
  if (!name)
    return name.takeError();
  auto ops = withExtra({{"query", &query},
                        {"cache", &cache},
                        {"block_tables", &blockTables},
                        {"seq_lens", &seqLens}},
                       extra);
  if (!ops)
    return ops.takeError();
  return run(*name, *ops, options);
}

Expected<Array> Program::mergePartitions(const Array &partialOut,
                                         const Array &partialMax,
                                         const Array &partialSum,
                                         const Array *sinks, StringRef op,
                                         const RunOptions &options) {
  auto name = pick(*this, op, OpKind::MergePartitions);
  if (!name)
    return name.takeError();
  Operands ops = {{"partial_out", &partialOut},
                  {"partial_max", &partialMax},
                  {"partial_sum", &partialSum}};
  if (sinks)
    ops["sinks"] = sinks;
  return take(run(*name, ops, options), "out");
}
