//===- Emulator.cpp - Dispatch, wave scheduling and statistics ------------===//
//
// Lays out a flat 64-bit device address space (code image, kernarg segment,
// dispatch packet, one region per buffer argument), sets up the initial
// wave state the kernel descriptor asks for (AMDGPUUsage, "Initial Kernel
// Execution State"), and runs the workgroups one after another; the waves of
// one workgroup run round-robin between barriers.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "llvm/Support/AMDHSAKernelDescriptor.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cstring>
#include <deque>

using namespace llvm;
using namespace uq::emu;
using namespace uq::emu::detail;

KernelArg KernelArg::buffer(std::vector<uint8_t> data, std::string label) {
  KernelArg a;
  a.kind = Kind::Buffer;
  a.bytes = std::move(data);
  a.label = std::move(label);
  return a;
}
KernelArg KernelArg::nullBuffer(std::string label) {
  KernelArg a;
  a.kind = Kind::Buffer;
  a.isNull = true;
  a.label = std::move(label);
  return a;
}
KernelArg KernelArg::scalar(const void *data, size_t size, std::string label) {
  KernelArg a;
  a.kind = Kind::Scalar;
  a.bytes.assign((const uint8_t *)data, (const uint8_t *)data + size);
  a.label = std::move(label);
  return a;
}

std::string Stats::str() const {
  std::string s;
  raw_string_ostream os(s);
  os << formatv("wave-instructions {0}  lane-ops {1}  workgroups {2}  waves "
                "{3}\n",
                waveInstructions, laneOps, workgroups, waves);
  os << formatv("  SALU {0}  SMEM {1}  branch {2}  VALU {3}  VALU-trans {4}\n",
                salu, smem, branch, valu, valuTrans);
  os << formatv("  MFMA {0}", mfma);
  for (const auto &[k, v] : mfmaByKind)
    os << formatv("  [{0} {1}]", k, v);
  os << "\n";
  os << formatv("  LDS {0} (read {1} B, written {2} B)\n", lds, ldsBytesRead,
                ldsBytesWritten);
  os << formatv("  global/buffer {0} (read {1} B, written {2} B)  scratch {3}\n",
                global, globalBytesRead, globalBytesWritten, scratch);
  os << formatv("  barriers {0}  waitcnts {1}  nops {2}  other {3}\n",
                barriers, waitcnts, nops, other);
  os << formatv("  host time {0:f3} s  ({1:f1} M wave-inst/s, {2:f1} M "
                "lane-ops/s)\n",
                seconds, seconds > 0 ? waveInstructions / seconds / 1e6 : 0.0,
                seconds > 0 ? laneOps / seconds / 1e6 : 0.0);
  return s;
}

TraceSink::~TraceSink() = default;

unsigned Emulator::numImplementedOpcodes() { return opTable().size(); }
std::vector<std::string> Emulator::implementedOpcodes() {
  std::vector<std::string> v;
  for (const auto &e : opTable())
    v.push_back(e.getKey().str());
  std::sort(v.begin(), v.end());
  return v;
}

namespace {
constexpr uint64_t kCodeBase = 0x7f0000000000ull;
constexpr uint64_t kKernargBase = 0x10000000ull;
constexpr uint64_t kDispatchBase = 0x20000000ull;
constexpr uint64_t kQueueBase = 0x30000000ull;
constexpr uint64_t kBufferBase = 0x10000000000ull; // 1 TiB
constexpr uint64_t kBufferStride = 0x10000000000ull;

Error err(const Twine &m) {
  return createStringError(inconvertibleErrorCode(), m);
}
/// An error caused by the caller's arguments or geometry.
Error usage(const Twine &m) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           m);
}

std::string product(const std::vector<uint64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}
} // namespace

std::string uq::emu::errorMessage(Error e, bool &isUsage) {
  isUsage = false;
  std::string msg;
  handleAllErrors(std::move(e), [&](const ErrorInfoBase &info) {
    if (info.convertToErrorCode() ==
        std::make_error_code(std::errc::invalid_argument))
      isUsage = true;
    msg += (msg.empty() ? "" : "\n") + info.message();
  });
  return msg;
}

std::string uq::emu::argLabel(const KernelInfo &K, unsigned index,
                              const std::vector<ArgSpec> *specs) {
  unsigned n = 0;
  for (const ArgInfo &a : K.args) {
    if (!a.isExplicit())
      continue;
    if (n++ != index)
      continue;
    if (!a.name.empty())
      return "'" + a.name + "'";
    break;
  }
  if (specs && index < specs->size() && !(*specs)[index].name.empty())
    return "'" + (*specs)[index].name + "'";
  return "#" + std::to_string(index);
}

Error uq::emu::checkArgs(const KernelInfo &K, const std::vector<ArgSpec> &specs,
                         const std::vector<KernelArg> &args) {
  std::vector<const ArgInfo *> explicitArgs;
  for (const ArgInfo &a : K.args)
    if (a.isExplicit())
      explicitArgs.push_back(&a);
  if (specs.size() != explicitArgs.size())
    return usage(formatv("the argument description lists {0} arguments, "
                         "kernel '{1}' takes {2}",
                         specs.size(), K.name, explicitArgs.size()));
  if (args.size() != explicitArgs.size())
    return usage(formatv("kernel '{0}' takes {1} arguments, {2} given", K.name,
                         explicitArgs.size(), args.size()));
  // Kinds and scalar sizes first: symbolic dimensions read the scalars.
  for (size_t i = 0; i < specs.size(); ++i) {
    const ArgSpec &S = specs[i];
    const ArgInfo &A = *explicitArgs[i];
    std::string what = formatv("argument {0} ({1}, {2})", i,
                               argLabel(K, i, &specs), S.dtype);
    bool metaBuffer = A.valueKind == "global_buffer";
    if (S.isBuffer != metaBuffer)
      return usage(what + ": the description says " +
                   (S.isBuffer ? "a buffer" : "a by-value scalar") +
                   ", the code object's metadata says " + A.valueKind);
    if (!S.isBuffer && S.elementSize != A.size)
      return usage(formatv("{0}: the description says {1} bytes, the code "
                           "object's metadata {2}",
                           what, S.elementSize, A.size));
    if (S.isBuffer != (args[i].kind == KernelArg::Kind::Buffer))
      return usage(what + (S.isBuffer ? " needs a buffer, got a scalar"
                                      : " needs a scalar, got a buffer"));
    if (!S.isBuffer && args[i].bytes.size() != S.elementSize)
      return usage(formatv("{0}: scalar of {1} bytes given, {2} expected",
                           what, args[i].bytes.size(), S.elementSize));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const ArgSpec &S = specs[i];
    if (!S.isBuffer)
      continue;
    std::string what = formatv("argument {0} ({1}, {2})", i,
                               argLabel(K, i, &specs), S.dtype);
    std::vector<uint64_t> dims;
    uint64_t elems = 1;
    bool overflow = false;
    for (const DimSpec &d : S.shape) {
      int64_t v = d.extent;
      if (d.argIndex >= 0) {
        if ((size_t)d.argIndex >= specs.size() ||
            specs[d.argIndex].isBuffer || !specs[d.argIndex].isInteger)
          return usage(what + ": a dimension refers to argument " +
                       Twine(d.argIndex) + ", which is not an integer "
                       "scalar");
        const std::vector<uint8_t> &b = args[d.argIndex].bytes;
        if (b.size() == 4) {
          int32_t x;
          std::memcpy(&x, b.data(), 4);
          v = x;
        } else if (b.size() == 8) {
          std::memcpy(&v, b.data(), 8);
        } else {
          return usage(what + ": a dimension refers to argument " +
                       Twine(d.argIndex) + ", which is not 4 or 8 bytes");
        }
        if (v < 0)
          return usage(formatv("{0}: dimension {1} = argument {2} ({3}) is "
                               "negative ({4})",
                               what, dims.size(), d.argIndex,
                               argLabel(K, d.argIndex, &specs), v));
      }
      if (v < 0)
        return usage(what + ": negative dimension in the description");
      dims.push_back((uint64_t)v);
      if (v && elems > UINT64_MAX / (uint64_t)v)
        overflow = true;
      elems *= (uint64_t)v;
    }
    if (overflow || (S.elementSize && elems > UINT64_MAX / S.elementSize))
      return usage(what + ": shape " + product(dims) + " overflows 64 bits");
    uint64_t want = elems * S.elementSize, got = args[i].bytes.size();
    if (want != got)
      return usage(formatv("{0} {1}: buffer of {2} bytes given, {3} expected "
                           "({4} elements of {5} bytes)",
                           what, product(dims), got, want, elems,
                           S.elementSize));
  }
  return Error::success();
}

Expected<std::vector<KernelArg>>
uq::emu::argsByOffset(const KernelInfo &K,
                      const std::map<uint32_t, KernelArg> &byOffset) {
  std::vector<KernelArg> out;
  std::map<uint32_t, const ArgInfo *> slots;
  for (const ArgInfo &a : K.args)
    if (a.isExplicit())
      slots[a.offset] = &a;
  for (const auto &[off, arg] : byOffset) {
    auto it = slots.find(off);
    if (it == slots.end())
      return usage(formatv("kernel '{0}' has no explicit argument at kernarg "
                           "offset {1}",
                           K.name, off));
    const ArgInfo &A = *it->second;
    bool buf = A.valueKind == "global_buffer";
    if (buf != (arg.kind == KernelArg::Kind::Buffer))
      return usage(formatv("kernarg offset {0} of kernel '{1}' is {2} ({3}), "
                           "a {4} was given",
                           off, K.name, A.valueKind, A.name,
                           buf ? "scalar" : "buffer"));
    if (!buf && arg.bytes.size() > A.size)
      return usage(formatv("kernarg offset {0} of kernel '{1}' holds {2} "
                           "bytes, {3} given",
                           off, K.name, A.size, arg.bytes.size()));
  }
  for (const ArgInfo &A : K.args) {
    if (!A.isExplicit())
      continue;
    auto it = byOffset.find(A.offset);
    if (A.valueKind == "global_buffer") {
      out.push_back(it != byOffset.end() ? it->second
                                         : KernelArg::nullBuffer(A.name));
      continue;
    }
    std::vector<uint8_t> v(A.size, 0);
    if (it != byOffset.end())
      std::copy(it->second.bytes.begin(), it->second.bytes.end(), v.begin());
    out.push_back(KernelArg::scalar(v.data(), v.size(), A.name));
  }
  return out;
}

struct Emulator::Impl {
  Decoder decoder;
  std::deque<Inst> insts;
  std::vector<Inst *> cache; ///< By (pc - codeBase) / 4.

  Inst *fetch(const CodeObject &co, uint64_t pc) {
    uint64_t off = pc - kCodeBase;
    if (pc < kCodeBase || off + 4 > co.image().size() || (off & 3))
      return nullptr;
    if (cache.size() != co.image().size() / 4)
      cache.assign(co.image().size() / 4, nullptr);
    Inst *&slot = cache[off / 4];
    if (!slot) {
      ArrayRef<uint8_t> bytes = co.image().drop_front(off);
      if (bytes.size() > 16)
        bytes = bytes.take_front(16);
      insts.push_back(decoder.decode(bytes, pc));
      slot = &insts.back();
    }
    return slot;
  }

  /// Instructions executed by class, lane operations, and all of them (for
  /// the instruction limit), over a launch.
  struct Counts {
    uint64_t cls[16] = {0};
    uint64_t laneOps = 0, total = 0;
  };

  /// Runs the waves of one workgroup round-robin between barriers, each
  /// until it ends or waits at a barrier; a barrier releases when no wave
  /// runs.
  Error runWorkgroup(const CodeObject &co, Exec &X, std::vector<Wave> &waves,
                     Counts &counts, TraceSink *sink, uint64_t limit,
                     std::array<uint32_t, 3> id, uint64_t wgIndex);
};

Emulator::Emulator(const CodeObject &co)
    : co(co), impl(std::make_unique<Impl>()) {}
Emulator::~Emulator() = default;

namespace {

/// The launch's geometry against the kernel and the hardware: grid and
/// block sizes, the kernel's block, whole waves, LDS.
Error checkGeometry(const KernelInfo &K, const LaunchConfig &cfg) {
  for (unsigned i = 0; i < 3; ++i)
    if (cfg.grid[i] == 0 || cfg.block[i] == 0)
      return usage("grid and block dimensions must be >= 1");
  if (cfg.block[0] > 1024 || cfg.block[1] > 1024 || cfg.block[2] > 1024)
    return usage("block dimensions must be <= 1024 (10-bit work-item ids)");
  uint64_t blockSize = (uint64_t)cfg.block[0] * cfg.block[1] * cfg.block[2];
  if (blockSize > K.maxFlatWorkgroupSize)
    return usage(formatv("block of {0} work-items exceeds the kernel's "
                         "max_flat_workgroup_size {1}",
                         blockSize, K.maxFlatWorkgroupSize));
  for (unsigned i = 0; i < 3; ++i)
    if ((uint64_t)cfg.grid[i] * cfg.block[i] > UINT32_MAX)
      return usage(formatv("grid {0} x block {1} work-items in dimension {2} "
                           "exceeds 2^32 - 1 (the dispatch packet's grid "
                           "size is 32 bits)",
                           cfg.grid[i], cfg.block[i], "xyz"[i]));
  if (cfg.requiredBlock && *cfg.requiredBlock != cfg.block)
    return usage(formatv("kernel '{0}' is compiled for a block of "
                         "{1},{2},{3} work-items; {4},{5},{6} given",
                         K.name, (*cfg.requiredBlock)[0],
                         (*cfg.requiredBlock)[1], (*cfg.requiredBlock)[2],
                         cfg.block[0], cfg.block[1], cfg.block[2]));
  if (blockSize % 64 && !cfg.allowPartialWaves && K.maxFlatWorkgroupSize >= 64)
    return usage(formatv("a block of {0} work-items is not a whole number of "
                         "64-lane waves: the last wave would run with {1} "
                         "lanes, which code written for full waves silently "
                         "skips (allow it explicitly for kernels written for "
                         "partial waves)",
                         blockSize, blockSize % 64));
  uint64_t ldsSize = (uint64_t)K.groupSegmentSize + cfg.dynamicLds;
  if (ldsSize > kMaxLdsBytes)
    return usage(formatv("LDS size {0} (static {1} + dynamic {2}) exceeds "
                         "160 KiB",
                         ldsSize, K.groupSegmentSize, cfg.dynamicLds));
  return Error::success();
}

/// The kernarg segment: every explicit argument checked against the
/// kernel's metadata (and the description's specs, when given), buffers
/// mapped as regions of \p X at their own base, then the hidden arguments.
Expected<std::vector<uint8_t>> buildKernarg(const KernelInfo &K,
                                            const LaunchConfig &cfg,
                                            std::vector<KernelArg> &args,
                                            Exec &X) {
  std::vector<const ArgInfo *> explicitArgs;
  for (const ArgInfo &a : K.args)
    if (a.isExplicit())
      explicitArgs.push_back(&a);
  if (explicitArgs.size() != args.size())
    return usage(formatv("kernel '{0}' takes {1} arguments, {2} given", K.name,
                         explicitArgs.size(), args.size()));
  const std::vector<ArgSpec> *specs = cfg.argSpecs ? &*cfg.argSpecs : nullptr;
  if (specs)
    if (Error e = checkArgs(K, *specs, args))
      return std::move(e);
  // The loader bounds every offset + size by kMaxKernargBytes.
  uint64_t kaSize = K.kernargSegmentSize;
  for (const ArgInfo &a : K.args)
    kaSize = std::max<uint64_t>(kaSize, (uint64_t)a.offset + a.size);
  std::vector<uint8_t> kernarg(std::max<uint64_t>(kaSize, 4) + 256, 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo &A = *explicitArgs[i];
    KernelArg &G = args[i];
    std::string what = formatv("argument {0} ({1}, {2}, {3} bytes)", i,
                               argLabel(K, i, specs), A.valueKind, A.size);
    if (A.valueKind == "global_buffer") {
      if (G.kind != KernelArg::Kind::Buffer)
        return usage(what + " needs a buffer, got a scalar");
      if (G.isNull)
        continue; // the kernarg slot stays 0
      uint64_t base = kBufferBase + i * kBufferStride;
      if (G.bytes.size() >= kBufferStride)
        return usage(what + ": buffer too large");
      std::memcpy(kernarg.data() + A.offset, &base, 8);
      Region r;
      r.base = base;
      r.size = G.bytes.size();
      r.data = G.bytes.data();
      r.label = G.label.empty() ? formatv("arg{0}", i).str() : G.label;
      X.regions.push_back(r);
    } else if (A.valueKind == "by_value") {
      if (G.kind != KernelArg::Kind::Scalar)
        return usage(what + " needs a scalar, got a buffer");
      if (G.bytes.size() != A.size)
        return usage(formatv("{0}: scalar of {1} bytes given", what,
                             G.bytes.size()));
      std::memcpy(kernarg.data() + A.offset, G.bytes.data(), A.size);
    } else {
      return usage(what + ": unsupported argument kind");
    }
  }
  for (const ArgInfo &A : K.args) {
    if (A.isExplicit())
      continue;
    auto put = [&](uint64_t v) {
      std::memcpy(kernarg.data() + A.offset, &v, std::min<uint32_t>(A.size, 8));
    };
    StringRef k = A.valueKind;
    if (k.consume_front("hidden_block_count_"))
      put(cfg.grid[k[0] - 'x']);
    else if (k.consume_front("hidden_group_size_"))
      put(cfg.block[k[0] - 'x']);
    else if (k.consume_front("hidden_remainder_"))
      put(0); // The grid is a whole number of workgroups.
    else if (k == "hidden_grid_dims")
      put(cfg.grid[2] > 1 || cfg.block[2] > 1   ? 3
          : cfg.grid[1] > 1 || cfg.block[1] > 1 ? 2
                                                : 1);
  }
  return kernarg;
}

/// The HSA kernel dispatch packet of the launch.
void fillDispatchPacket(uint8_t (&dispatch)[64], const KernelInfo &K,
                        const LaunchConfig &cfg) {
  uint16_t ws[3] = {(uint16_t)cfg.block[0], (uint16_t)cfg.block[1],
                    (uint16_t)cfg.block[2]};
  uint16_t setup = 3;
  std::memcpy(dispatch + 2, &setup, 2);
  std::memcpy(dispatch + 4, ws, 6);
  for (unsigned i = 0; i < 3; ++i) {
    uint32_t g = cfg.grid[i] * cfg.block[i];
    std::memcpy(dispatch + 12 + 4 * i, &g, 4);
  }
  uint32_t ps = K.privateSegmentSize, gs = K.groupSegmentSize + cfg.dynamicLds;
  std::memcpy(dispatch + 24, &ps, 4);
  std::memcpy(dispatch + 28, &gs, 4);
  uint64_t ko = kCodeBase + K.descriptorAddress, ka = kKernargBase;
  std::memcpy(dispatch + 32, &ko, 8);
  std::memcpy(dispatch + 40, &ka, 8);
}

/// Wave \p w of workgroup (gx, gy, gz) as the kernel descriptor asks
/// (AMDGPUUsage, "Initial Kernel Execution State"): registers cleared (the
/// first \p nv VGPRs and \p na AGPRs, those a kernel may read), work-item
/// ids in v0, the user SGPRs (pointers, preloaded kernargs), then the
/// workgroup ids.
void initWave(Wave &W, unsigned w, const KernelInfo &K, const LaunchConfig &cfg,
              uint64_t blockSize, unsigned nv, unsigned na,
              const std::vector<uint8_t> &kernarg, uint32_t gx, uint32_t gy,
              uint32_t gz) {
  std::memset(W.s, 0, sizeof(W.s));
  W.scc = 0;
  std::fill(W.v.begin(), W.v.begin() + nv * 64, 0);
  std::fill(W.a.begin(), W.a.begin() + na * 64, 0);
  W.done = W.atBarrier = false;
  W.vmq.clear();
  W.dmaQueued = false;
  W.id = w;
  W.firstThread = w * 64;
  W.pc = kCodeBase + K.entryAddress;
  uint64_t exec = 0;
  for (unsigned l = 0; l < 64; ++l) {
    uint64_t t = (uint64_t)w * 64 + l;
    if (t >= blockSize)
      continue;
    exec |= 1ull << l;
    uint32_t x = t % cfg.block[0], y = (t / cfg.block[0]) % cfg.block[1],
             z = t / ((uint64_t)cfg.block[0] * cfg.block[1]);
    W.v[l] = x | (y << 10) | (z << 20);
  }
  W.setExec(exec);
  unsigned s = 0;
  auto put64 = [&](uint64_t v) {
    W.s[s++] = (uint32_t)v;
    W.s[s++] = (uint32_t)(v >> 32);
  };
  uint16_t props = K.kernelCodeProperties;
  unsigned userSgprs = (K.pgmRsrc2 >> 1) & 31;
  using namespace amdhsa;
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER)
    s += 4;
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_DISPATCH_PTR)
    put64(kDispatchBase);
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_QUEUE_PTR)
    put64(kQueueBase);
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_KERNARG_SEGMENT_PTR)
    put64(kKernargBase);
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_DISPATCH_ID)
    put64(0);
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_FLAT_SCRATCH_INIT)
    put64(0);
  if (props & KERNEL_CODE_PROPERTY_ENABLE_SGPR_PRIVATE_SEGMENT_SIZE)
    W.s[s++] = K.privateSegmentSize;
  unsigned preLen = K.kernargPreload & 0x7f,
           preOff = (K.kernargPreload >> 7) & 0x1ff;
  for (unsigned i = 0; i < preLen && s < 100; ++i) {
    uint32_t v = 0;
    if ((preOff + i) * 4 + 4 <= kernarg.size())
      std::memcpy(&v, kernarg.data() + (preOff + i) * 4, 4);
    W.s[s++] = v;
  }
  s = std::max(s, userSgprs);
  if (K.pgmRsrc2 & (1u << 7))
    W.s[s++] = gx;
  if (K.pgmRsrc2 & (1u << 8))
    W.s[s++] = gy;
  if (K.pgmRsrc2 & (1u << 9))
    W.s[s++] = gz;
  if (K.pgmRsrc2 & (1u << 10))
    W.s[s++] = 0;
  if (K.pgmRsrc2 & 1u)
    W.s[s++] = 0; // private segment wave offset
}

/// What the trace sink sees of one executed instruction.
TraceEvent traceEvent(const Inst &I, const Exec &X, const Wave &W,
                      uint64_t execAtIssue, uint32_t gx, uint32_t gy,
                      uint32_t gz, uint64_t wgIndex) {
  TraceEvent ev;
  ev.mnemonic = I.name;
  ev.text = I.text;
  ev.cls = (InstClass)I.cls;
  ev.pc = I.pc - kCodeBase;
  ev.size = I.size;
  ev.exec = execAtIssue;
  ev.schedLatency = I.schedLatency;
  ev.schedThroughput = I.schedThroughput;
  ev.cbsz = I.cbsz;
  ev.blgp = I.blgp;
  ev.space = X.mem.space;
  ev.store = X.mem.store;
  ev.bytesPerAddress = X.mem.bytes;
  ev.addresses = ArrayRef<uint64_t>(X.mem.addr, X.mem.n);
  ev.workgroup = {gx, gy, gz};
  ev.workgroupIndex = wgIndex;
  ev.wave = W.id;
  return ev;
}

/// The launch's statistics from the per-class counts, and the MFMAs by
/// kind from the decoded instructions' counts (which start again at 0).
void collectStats(Stats &st, const uint64_t (&clsCount)[16], uint64_t laneOps,
                  std::deque<Inst> &insts) {
  st.salu = clsCount[(unsigned)Cls::SALU];
  st.smem = clsCount[(unsigned)Cls::SMEM];
  st.branch = clsCount[(unsigned)Cls::Branch];
  st.valu = clsCount[(unsigned)Cls::VALU];
  st.valuTrans = clsCount[(unsigned)Cls::Trans];
  st.mfma = clsCount[(unsigned)Cls::MFMA];
  st.lds = clsCount[(unsigned)Cls::LDS];
  st.global = clsCount[(unsigned)Cls::Global];
  st.scratch = clsCount[(unsigned)Cls::Scratch];
  st.barriers = clsCount[(unsigned)Cls::Barrier];
  st.waitcnts = clsCount[(unsigned)Cls::Waitcnt];
  st.nops = clsCount[(unsigned)Cls::Nop];
  st.other = clsCount[(unsigned)Cls::Other];
  for (unsigned i = 0; i < 16; ++i)
    st.waveInstructions += clsCount[i];
  st.laneOps = laneOps;
  for (Inst &I : insts) {
    if (I.cls == Cls::MFMA && I.count)
      st.mfmaByKind[I.name] += I.count;
    I.count = 0;
  }
}

} // namespace

Error Emulator::Impl::runWorkgroup(const CodeObject &co, Exec &X,
                                   std::vector<Wave> &waves, Counts &counts,
                                   TraceSink *sink, uint64_t limit,
                                   std::array<uint32_t, 3> id,
                                   uint64_t wgIndex) {
  const uint32_t gx = id[0], gy = id[1], gz = id[2];
  for (;;) {
    bool anyRunning = false;
    for (Wave &W : waves) {
      if (W.done || W.atBarrier)
        continue;
      anyRunning = true;
      while (!W.done && !W.atBarrier) {
        Inst *I = fetch(co, W.pc);
        if (!I)
          return err(formatv("wave {0} of workgroup ({1},{2},{3}) "
                             "jumped outside the code image: pc {4:x}",
                             W.id, gx, gy, gz, W.pc - kCodeBase));
        ++I->count;
        ++counts.cls[(unsigned)I->cls];
        unsigned cls = (unsigned)I->cls;
        if (cls >= (unsigned)Cls::VALU && cls <= (unsigned)Cls::Scratch)
          counts.laneOps += __builtin_popcountll(W.exec());
        W.pc += I->size;
        if (!sink) {
          I->fn(X, W, *I);
        } else {
          X.mem.n = 0;
          X.mem.space = MemSpace::None;
          uint64_t execAtIssue = W.exec();
          I->fn(X, W, *I);
          TraceEvent ev =
              traceEvent(*I, X, W, execAtIssue, gx, gy, gz, wgIndex);
          if (!X.failed)
            sink->onInst(ev);
        }
        if (X.failed)
          return err(formatv("wave {0} of workgroup ({1},{2},{3}): {4}", W.id,
                             gx, gy, gz, X.error));
        // vmcnt bookkeeping: every vector memory instruction is
        // outstanding until an s_waitcnt vmcnt retires it.
        if (cls == (unsigned)Cls::Global || cls == (unsigned)Cls::Scratch) {
          if (!W.dmaQueued)
            W.vmq.push_back(nullptr);
          W.dmaQueued = false;
        }
        if (W.done)
          retireVm(X, W, 0);
        if (limit && ++counts.total > limit)
          return err(formatv("instruction limit {0} reached", limit));
      }
    }
    bool anyBarrier = false;
    for (Wave &W : waves)
      anyBarrier |= W.atBarrier;
    // The barrier releases (or the workgroup ends): LDS-DMA writes
    // retired before it land now (Internal.h, DmaWrite).
    X.landDma();
    if (!anyBarrier)
      return Error::success();
    for (Wave &W : waves)
      W.atBarrier = false;
    (void)anyRunning;
  }
}

Error Emulator::launch(StringRef kernel, const LaunchConfig &cfg,
                       std::vector<KernelArg> &args) {
  auto kOr = co.findKernel(kernel);
  if (!kOr)
    return kOr.takeError();
  const KernelInfo &K = **kOr;
  lastStats = Stats();
  Stats &st = lastStats;
  auto t0 = std::chrono::steady_clock::now();
  if (Error e = checkGeometry(K, cfg))
    return e;
  const uint64_t blockSize =
      (uint64_t)cfg.block[0] * cfg.block[1] * cfg.block[2];
  const uint64_t ldsSize = (uint64_t)K.groupSegmentSize + cfg.dynamicLds;

  Exec X;
  X.stats = &st;
  X.codeBase = kCodeBase;
  X.ftz32 = ((K.pgmRsrc1 >> 16) & 3) != 3;
  auto kernargOr = buildKernarg(K, cfg, args, X);
  if (!kernargOr)
    return kernargOr.takeError();
  std::vector<uint8_t> &kernarg = *kernargOr;
  // Fixed regions: code image, kernarg segment, dispatch packet, queue.
  uint8_t dispatch[64] = {0};
  fillDispatchPacket(dispatch, K, cfg);
  std::vector<uint8_t> queue(256, 0);
  std::vector<uint8_t> image(co.image().begin(), co.image().end());
  X.regions.push_back({kCodeBase, image.size(), image.data(), false, "code"});
  X.regions.push_back(
      {kKernargBase, kernarg.size(), kernarg.data(), false, "kernarg"});
  X.regions.push_back({kDispatchBase, 64, dispatch, false, "dispatch"});
  X.regions.push_back({kQueueBase, queue.size(), queue.data(), false, "queue"});

  X.privateSize = K.privateSegmentSize;

  unsigned nWaves = (blockSize + 63) / 64;
  std::vector<Wave> waves(nWaves);
  unsigned nv = std::min(512u, std::max(K.vgprCount, 1u) + 8);
  unsigned na = std::min(256u, K.agprCount + 8);
  for (Wave &W : waves) {
    W.v.assign(512 * 64, 0);
    W.a.assign(256 * 64, 0);
    W.scratch.assign((size_t)K.privateSegmentSize * 64, 0);
  }
  Impl::Counts counts;
  const uint64_t limit = cfg.maxWaveInstructions;

  TraceSink *sink = cfg.trace;
  X.tracing = sink != nullptr;
  const uint64_t totalWgs =
      (uint64_t)cfg.grid[0] * cfg.grid[1] * cfg.grid[2];
  std::vector<uint64_t> only;
  if (cfg.workgroupIndices) {
    only = *cfg.workgroupIndices;
    llvm::sort(only);
    for (uint64_t i : only)
      if (i >= totalWgs)
        return usage(formatv("workgroup index {0} is outside the grid of {1} "
                             "workgroups",
                             i, totalWgs));
  }
  for (uint32_t gz = 0; gz < cfg.grid[2]; ++gz)
    for (uint32_t gy = 0; gy < cfg.grid[1]; ++gy)
      for (uint32_t gx = 0; gx < cfg.grid[0]; ++gx) {
        const uint64_t wgIndex =
            gx + (uint64_t)cfg.grid[0] * (gy + (uint64_t)cfg.grid[1] * gz);
        if (cfg.workgroupIndices &&
            !std::binary_search(only.begin(), only.end(), wgIndex))
          continue;
        X.lds.assign(ldsSize, 0);
        X.dmaAtBarrier.clear();
        X.wavesInGroup = nWaves;
        for (unsigned w = 0; w < nWaves; ++w)
          initWave(waves[w], w, K, cfg, blockSize, nv, na, kernarg, gx, gy, gz);
        ++st.workgroups;
        st.waves += nWaves;
        if (sink)
          sink->beginWorkgroup(wgIndex, {gx, gy, gz}, nWaves);
        // Round-robin between barriers.
        if (Error e = impl->runWorkgroup(co, X, waves, counts, sink, limit,
                                         {gx, gy, gz}, wgIndex))
          return e;
        if (sink)
          sink->endWorkgroup(wgIndex);
      }
  // Buffers were updated in place (regions point at the args' bytes).
  collectStats(st, counts.cls, counts.laneOps, impl->insts);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                   .count();
  return Error::success();
}
