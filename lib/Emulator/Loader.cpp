//===- Loader.cpp - gfx950 code object loading ----------------------------===//
//
// Parses an AMDHSA code object (ELF, code object v5/v6): PT_LOAD segments
// into a flat image, the NT_AMDGPU_METADATA msgpack note, and the 64-byte
// kernel descriptors named by the metadata's `.symbol`.
//
//===----------------------------------------------------------------------===//

#include "uq/Emulator/Emulator.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackReader.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/AMDHSAKernelDescriptor.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace llvm;
using namespace uq::emu;

unsigned KernelInfo::numExplicitArgs() const {
  unsigned n = 0;
  for (const ArgInfo &a : args)
    n += a.isExplicit();
  return n;
}

static Error err(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

Expected<std::unique_ptr<CodeObject>> CodeObject::loadFile(StringRef path) {
  // A FIFO, a device such as /dev/zero or a multi-gigabyte file would make
  // the read below block or exhaust memory: only bounded regular files.
  sys::fs::file_status st;
  if (std::error_code ec = sys::fs::status(path, st))
    return err("cannot read code object '" + path + "': " + ec.message());
  if (st.type() != sys::fs::file_type::regular_file)
    return err("cannot read code object '" + path +
               "': not a regular file");
  if (st.getSize() > kMaxCodeObjectBytes)
    return err("cannot read code object '" + path + "': " +
               Twine(st.getSize()) + " bytes, more than the limit of " +
               Twine(kMaxCodeObjectBytes));
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return err("cannot read code object '" + path +
               "': " + buf.getError().message());
  ArrayRef<uint8_t> bytes((const uint8_t *)(*buf)->getBufferStart(),
                          (*buf)->getBufferSize());
  auto co = load(bytes);
  if (!co)
    return err(path + ": " + toString(co.takeError()));
  return co;
}

namespace {
/// The AMDGPU metadata as a plain tree. llvm::msgpack::Document is not
/// used: it orders map keys with an llvm_unreachable for array/map keys and
/// its accessors assert on the node kind, so a corrupted note crashed it.
/// msgpack::Reader only reads; every structural decision is checked here.
struct MpNode {
  msgpack::Type kind = msgpack::Type::Nil;
  uint64_t u = 0;
  int64_t i = 0;
  std::string str;
  std::vector<MpNode> items;                         ///< Array elements.
  std::vector<std::pair<MpNode, MpNode>> entries;    ///< Map entries.

  /// The value of string key `key` in a map, or null.
  const MpNode *get(StringRef key) const {
    for (const auto &[k, v] : entries)
      if (k.kind == msgpack::Type::String && k.str == key)
        return &v;
    return nullptr;
  }
};

const char *kindName(msgpack::Type t) {
  switch (t) {
  case msgpack::Type::Int:
    return "a negative integer";
  case msgpack::Type::UInt:
    return "an integer";
  case msgpack::Type::Nil:
    return "nil";
  case msgpack::Type::Boolean:
    return "a boolean";
  case msgpack::Type::Float:
    return "a float";
  case msgpack::Type::String:
    return "a string";
  case msgpack::Type::Binary:
    return "binary data";
  case msgpack::Type::Array:
    return "an array";
  case msgpack::Type::Map:
    return "a map";
  default:
    return "an extension";
  }
}

/// Reads one msgpack object (recursively) with a depth limit; each object
/// consumes at least one byte, so the blob size bounds the work.
Error readNode(msgpack::Reader &r, MpNode &out, unsigned depth) {
  if (depth > 32)
    return err("AMDGPU metadata nested more than 32 levels deep");
  msgpack::Object o;
  Expected<bool> ok = r.read(o);
  if (!ok)
    return err("malformed AMDGPU metadata (msgpack): " +
               toString(ok.takeError()));
  if (!*ok)
    return err("truncated AMDGPU metadata (msgpack)");
  out.kind = o.Kind;
  switch (o.Kind) {
  case msgpack::Type::UInt:
    out.u = o.UInt;
    break;
  case msgpack::Type::Int:
    out.i = o.Int;
    // msgpack writers may encode small non-negative values as signed.
    if (o.Int >= 0) {
      out.kind = msgpack::Type::UInt;
      out.u = (uint64_t)o.Int;
    }
    break;
  case msgpack::Type::String:
    out.str = o.Raw.str();
    break;
  case msgpack::Type::Array:
    for (size_t n = 0; n < o.Length; ++n) {
      out.items.emplace_back();
      if (Error e = readNode(r, out.items.back(), depth + 1))
        return e;
    }
    break;
  case msgpack::Type::Map:
    for (size_t n = 0; n < o.Length; ++n) {
      out.entries.emplace_back();
      if (Error e = readNode(r, out.entries.back().first, depth + 1))
        return e;
      // AMDGPU metadata maps are keyed by strings only.
      if (out.entries.back().first.kind != msgpack::Type::String)
        return err("malformed AMDGPU metadata: a map key is " +
                   Twine(kindName(out.entries.back().first.kind)) +
                   ", not a string");
      if (Error e = readNode(r, out.entries.back().second, depth + 1))
        return e;
    }
    break;
  default:
    break;
  }
  return Error::success();
}

/// Field accessors: a missing field gives the default, a field of the
/// wrong type or out of range is an error naming it.
Expected<uint64_t> getU(const MpNode &map, StringRef where, StringRef key,
                        uint64_t dflt, uint64_t max) {
  const MpNode *n = map.get(key);
  if (!n)
    return dflt;
  if (n->kind != msgpack::Type::UInt)
    return err("AMDGPU metadata: " + where + " " + key + " is " +
               kindName(n->kind) + ", not a non-negative integer");
  if (n->u > max)
    return err("AMDGPU metadata: " + where + " " + key + " = " +
               Twine(n->u) + " exceeds the limit " + Twine(max));
  return n->u;
}
Expected<std::string> getS(const MpNode &map, StringRef where, StringRef key,
                           bool required) {
  const MpNode *n = map.get(key);
  if (!n) {
    if (required)
      return err("AMDGPU metadata: " + where + " has no " + key);
    return std::string();
  }
  if (n->kind != msgpack::Type::String)
    return err("AMDGPU metadata: " + where + " " + key + " is " +
               kindName(n->kind) + ", not a string");
  return n->str;
}

/// `a + b <= limit` without wrapping.
bool fits(uint64_t a, uint64_t b, uint64_t limit) {
  return a <= limit && b <= limit - a;
}
/// The ELF header of a gfx950 code object: size limit, magic, class,
/// machine, and not a clang offload bundle.
Expected<object::ELF64LEFile> openElf(ArrayRef<uint8_t> bytes) {
  if (bytes.size() > kMaxCodeObjectBytes)
    return err("code object of " + Twine(bytes.size()) +
               " bytes exceeds the limit of " + Twine(kMaxCodeObjectBytes));
  StringRef data((const char *)bytes.data(), bytes.size());
  if (data.size() >= 24 && data.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
    return err("this is a clang offload bundle, not a code object; compile "
               "with --cuda-device-only --no-gpu-bundle-output");
  if (data.size() < 64 || !data.starts_with("\x7f" "ELF") || data[4] != 2 ||
      data[5] != 1)
    return err("not an ELF64 code object (bad ELF magic/class)");
  auto fileOr = object::ELF64LEFile::create(data);
  if (!fileOr)
    return err("not an ELF64 code object: " + toString(fileOr.takeError()));
  if (fileOr->getHeader().e_machine != ELF::EM_AMDGPU)
    return err("ELF machine is not EM_AMDGPU");
  unsigned mach = fileOr->getHeader().e_flags & ELF::EF_AMDGPU_MACH;
  if (mach != ELF::EF_AMDGPU_MACH_AMDGCN_GFX950)
    return err("code object is not for gfx950 (e_flags mach 0x" +
               utohexstr(mach, true) + ")");
  return std::move(*fileOr);
}

/// The image: every PT_LOAD segment at its address, each within the file
/// and the image limit; returns the NT_AMDGPU_METADATA note's blob.
Expected<std::string> loadSegments(const object::ELF64LEFile &F,
                                   ArrayRef<uint8_t> bytes,
                                   std::vector<uint8_t> &image) {
  auto phdrs = F.program_headers();
  if (!phdrs)
    return err(toString(phdrs.takeError()));
  uint64_t top = 0;
  for (const auto &ph : *phdrs) {
    if (ph.p_type != ELF::PT_LOAD)
      continue;
    if (!fits(ph.p_offset, ph.p_filesz, bytes.size()))
      return err("PT_LOAD segment (offset 0x" + utohexstr(ph.p_offset, true) +
                 ", size 0x" + utohexstr(ph.p_filesz, true) +
                 ") beyond the end of the file (" + Twine(bytes.size()) +
                 " bytes)");
    if (ph.p_filesz > ph.p_memsz)
      return err("PT_LOAD segment with p_filesz 0x" + utohexstr(ph.p_filesz, true) +
                 " > p_memsz 0x" + utohexstr(ph.p_memsz, true));
    if (!fits(ph.p_vaddr, ph.p_memsz, kMaxImageBytes))
      return err("PT_LOAD segment (vaddr 0x" + utohexstr(ph.p_vaddr, true) +
                 ", size 0x" + utohexstr(ph.p_memsz, true) +
                 ") beyond the image limit of " + Twine(kMaxImageBytes) +
                 " bytes");
    top = std::max<uint64_t>(top, ph.p_vaddr + ph.p_memsz);
  }
  image.assign(top, 0);
  std::string metaBlob;
  bool haveMeta = false;
  for (const auto &ph : *phdrs) {
    if (ph.p_type == ELF::PT_LOAD) {
      std::memcpy(image.data() + ph.p_vaddr, bytes.data() + ph.p_offset,
                  ph.p_filesz);
    } else if (ph.p_type == ELF::PT_NOTE) {
      if (!fits(ph.p_offset, ph.p_filesz, bytes.size()))
        return err("PT_NOTE segment beyond the end of the file");
      Error e = Error::success();
      for (const auto &note : F.notes(ph, e))
        if (note.getName() == "AMDGPU" &&
            note.getType() == ELF::NT_AMDGPU_METADATA) {
          metaBlob = toStringRef(note.getDesc(4)).str();
          haveMeta = true;
        }
      if (e)
        return err("bad note segment: " + toString(std::move(e)));
    }
  }
  if (!haveMeta)
    return err("no NT_AMDGPU_METADATA note (code object v3+ required)");
  return metaBlob;
}

/// Symbol table: name -> value. Malformed tables are errors, not skipped:
/// the descriptor symbols are looked up here.
Expected<StringMap<uint64_t>> readSymbols(const object::ELF64LEFile &F) {
  StringMap<uint64_t> syms;
  auto sections = F.sections();
  if (!sections)
    return err("bad section headers: " + toString(sections.takeError()));
  for (const auto &sec : *sections) {
    if (sec.sh_type != ELF::SHT_SYMTAB && sec.sh_type != ELF::SHT_DYNSYM)
      continue;
    auto symsOr = F.symbols(&sec);
    if (!symsOr)
      return err("bad symbol table: " + toString(symsOr.takeError()));
    auto strtab = F.getStringTableForSymtab(sec);
    if (!strtab)
      return err("bad symbol string table: " + toString(strtab.takeError()));
    for (const auto &s : *symsOr) {
      auto name = s.getName(*strtab);
      if (!name)
        return err("bad symbol name: " + toString(name.takeError()));
      if (!name->empty())
        syms[*name] = s.st_value;
    }
  }
  return syms;
}

/// A kernel's explicit and hidden arguments from its `.args` metadata.
Error readArgs(const MpNode &kn, const std::string &where, KernelInfo &K) {
  if (const MpNode *args = kn.get(".args")) {
    if (args->kind != msgpack::Type::Array)
      return err("AMDGPU metadata: " + where + " .args is " +
                 kindName(args->kind) + ", not an array");
    for (const MpNode &an : args->items) {
      std::string aw = where + " argument " + Twine(K.args.size()).str();
      if (an.kind != msgpack::Type::Map)
        return err("AMDGPU metadata: " + aw + " is " + kindName(an.kind) +
                   ", not a map");
      ArgInfo A;
      auto aname = getS(an, aw, ".name", false);
      auto kind = getS(an, aw, ".value_kind", true);
      auto space = getS(an, aw, ".address_space", false);
      auto off = getU(an, aw, ".offset", 0, kMaxKernargBytes);
      auto size = getU(an, aw, ".size", 0, kMaxKernargBytes);
      if (!aname || !kind || !space || !off || !size) {
        Error e = joinErrors(aname.takeError(), kind.takeError());
        e = joinErrors(std::move(e), space.takeError());
        e = joinErrors(std::move(e), off.takeError());
        return joinErrors(std::move(e), size.takeError());
      }
      if (!fits(*off, *size, kMaxKernargBytes))
        return err("AMDGPU metadata: " + aw + " (offset " + Twine(*off) +
                   ", size " + Twine(*size) +
                   ") ends beyond the kernarg limit of " +
                   Twine(kMaxKernargBytes) + " bytes");
      A.name = *aname;
      A.valueKind = *kind;
      A.addressSpace = *space;
      A.offset = (uint32_t)*off;
      A.size = (uint32_t)*size;
      if (A.valueKind == "global_buffer" && A.size != 8)
        return err("AMDGPU metadata: " + aw + " is a global_buffer of " +
                   Twine(A.size) + " bytes (pointers are 8)");
      K.args.push_back(A);
    }
  }
  return Error::success();
}

/// A kernel's descriptor (found by its symbol in \p image): the entry
/// address, which must land inside the image, and the program resources.
Error readDescriptor(const StringMap<uint64_t> &syms, ArrayRef<uint8_t> image,
                     KernelInfo &K) {
  auto sit = syms.find(K.symbol);
  if (sit == syms.end())
    return err("kernel descriptor symbol '" + K.symbol + "' not found");
  K.descriptorAddress = sit->second;
  if (!fits(K.descriptorAddress, 64, image.size()))
    return err("kernel descriptor of '" + K.name + "' (address 0x" +
               utohexstr(K.descriptorAddress, true) + ") outside the image");
  amdhsa::kernel_descriptor_t kd;
  std::memcpy(&kd, image.data() + K.descriptorAddress, 64);
  // Entry = descriptor + signed offset, which must land inside the image
  // (checked without wrapping: both terms are far below 2^63 here).
  int64_t entry = (int64_t)K.descriptorAddress;
  int64_t delta = kd.kernel_code_entry_byte_offset;
  if (delta < -entry || delta >= (int64_t)image.size() - entry ||
      ((entry + delta) & 3))
    return err("entry of kernel '" + K.name + "' (descriptor 0x" +
               utohexstr(K.descriptorAddress, true) + " + " + Twine(delta) +
               ") outside the image");
  K.entryAddress = (uint64_t)(entry + delta);
  K.pgmRsrc1 = kd.compute_pgm_rsrc1;
  K.pgmRsrc2 = kd.compute_pgm_rsrc2;
  K.pgmRsrc3 = kd.compute_pgm_rsrc3;
  K.kernelCodeProperties = kd.kernel_code_properties;
  K.kernargPreload = kd.kernarg_preload;
  if (K.kernelCodeProperties &
      amdhsa::KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32)
    return err("kernel '" + K.name + "' is not wave64");
  return Error::success();
}

/// One kernel's entry of the amdhsa.kernels metadata.
Expected<KernelInfo> readKernel(const MpNode &kn,
                                const StringMap<uint64_t> &syms,
                                ArrayRef<uint8_t> image) {
  if (kn.kind != msgpack::Type::Map)
    return err("AMDGPU metadata: a kernel entry is " +
               Twine(kindName(kn.kind)) + ", not a map");
  KernelInfo K;
  auto name = getS(kn, "kernel", ".name", true);
  if (!name)
    return name.takeError();
  K.name = *name;
  std::string where = "kernel '" + K.name + "'";
  auto symbol = getS(kn, where, ".symbol", true);
  if (!symbol)
    return symbol.takeError();
  K.symbol = *symbol;
  struct Field {
    const char *key;
    uint32_t *dst;
    uint64_t dflt, max;
  } fields[] = {
      {".kernarg_segment_size", &K.kernargSegmentSize, 0, kMaxKernargBytes},
      {".kernarg_segment_align", &K.kernargSegmentAlign, 8, 4096},
      {".group_segment_fixed_size", &K.groupSegmentSize, 0, kMaxLdsBytes},
      {".private_segment_fixed_size", &K.privateSegmentSize, 0,
       kMaxPrivateBytes},
      {".vgpr_count", &K.vgprCount, 0, 512},
      {".agpr_count", &K.agprCount, 0, 256},
      {".sgpr_count", &K.sgprCount, 0, 128},
      {".wavefront_size", &K.wavefrontSize, 64, 64},
      {".max_flat_workgroup_size", &K.maxFlatWorkgroupSize, 1024, 1024},
  };
  for (const Field &f : fields) {
    auto v = getU(kn, where, f.key, f.dflt, f.max);
    if (!v)
      return v.takeError();
    *f.dst = (uint32_t)*v;
  }
  if (K.wavefrontSize != 64)
    return err("kernel '" + K.name + "' is not wave64");
  if (K.maxFlatWorkgroupSize == 0)
    return err("AMDGPU metadata: " + where + " .max_flat_workgroup_size is 0");
  if (Error e = readArgs(kn, where, K))
    return std::move(e);
  if (Error e = readDescriptor(syms, image, K))
    return std::move(e);
  return K;
}

} // namespace

Expected<std::unique_ptr<CodeObject>>
CodeObject::load(ArrayRef<uint8_t> bytes) {
  auto fileOr = openElf(bytes);
  if (!fileOr)
    return fileOr.takeError();
  object::ELF64LEFile &F = *fileOr;
  std::unique_ptr<CodeObject> co(new CodeObject());
  auto metaBlob = loadSegments(F, bytes, co->imageBytes);
  if (!metaBlob)
    return metaBlob.takeError();
  auto syms = readSymbols(F);
  if (!syms)
    return syms.takeError();

  MpNode root;
  {
    msgpack::Reader reader(*metaBlob);
    if (Error e = readNode(reader, root, 0))
      return std::move(e);
  }
  if (root.kind != msgpack::Type::Map)
    return err("AMDGPU metadata root is " + Twine(kindName(root.kind)) +
               ", not a map");
  auto target = getS(root, "the root", "amdhsa.target", false);
  if (!target)
    return target.takeError();
  co->targetName = *target;
  const MpNode *kernels = root.get("amdhsa.kernels");
  if (!kernels || kernels->kind != msgpack::Type::Array)
    return err("AMDGPU metadata has no amdhsa.kernels array");
  for (const MpNode &kn : kernels->items) {
    auto K = readKernel(kn, *syms, co->imageBytes);
    if (!K)
      return K.takeError();
    co->kernelInfos.push_back(std::move(*K));
  }
  return co;
}

Expected<const KernelInfo *> CodeObject::findKernel(StringRef name) const {
  for (const KernelInfo &k : kernelInfos)
    if (k.name == name || k.symbol == name)
      return &k;
  std::string avail;
  for (const KernelInfo &k : kernelInfos)
    avail += (avail.empty() ? "" : ", ") + k.name;
  return err("no kernel named '" + name + "' in the code object (kernels: " +
             avail + ")");
}
