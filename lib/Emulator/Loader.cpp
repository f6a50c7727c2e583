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
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/AMDHSAKernelDescriptor.h"
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
uint64_t getU(msgpack::DocNode &map, StringRef key, uint64_t dflt = 0) {
  auto &m = map.getMap();
  auto it = m.find(key);
  if (it == m.end())
    return dflt;
  msgpack::DocNode &n = it->second;
  if (n.getKind() == msgpack::Type::UInt)
    return n.getUInt();
  if (n.getKind() == msgpack::Type::Int)
    return (uint64_t)n.getInt();
  return dflt;
}
std::string getS(msgpack::DocNode &map, StringRef key) {
  auto &m = map.getMap();
  auto it = m.find(key);
  if (it == m.end() || it->second.getKind() != msgpack::Type::String)
    return "";
  return it->second.getString().str();
}
} // namespace

Expected<std::unique_ptr<CodeObject>>
CodeObject::load(ArrayRef<uint8_t> bytes) {
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
  object::ELF64LEFile &F = *fileOr;
  if (F.getHeader().e_machine != ELF::EM_AMDGPU)
    return err("ELF machine is not EM_AMDGPU");
  unsigned mach = F.getHeader().e_flags & ELF::EF_AMDGPU_MACH;
  if (mach != ELF::EF_AMDGPU_MACH_AMDGCN_GFX950)
    return err("code object is not for gfx950 (e_flags mach 0x" +
               utohexstr(mach) + ")");

  std::unique_ptr<CodeObject> co(new CodeObject());
  auto phdrs = F.program_headers();
  if (!phdrs)
    return err(toString(phdrs.takeError()));
  uint64_t top = 0;
  for (const auto &ph : *phdrs)
    if (ph.p_type == ELF::PT_LOAD)
      top = std::max<uint64_t>(top, ph.p_vaddr + ph.p_memsz);
  if (top > (1ull << 30))
    return err("code object image too large");
  co->imageBytes.assign(top, 0);
  std::string metaBlob;
  for (const auto &ph : *phdrs) {
    if (ph.p_type == ELF::PT_LOAD) {
      if (ph.p_offset + ph.p_filesz > bytes.size())
        return err("PT_LOAD segment beyond end of file");
      std::memcpy(co->imageBytes.data() + ph.p_vaddr,
                  bytes.data() + ph.p_offset, ph.p_filesz);
    } else if (ph.p_type == ELF::PT_NOTE) {
      Error e = Error::success();
      for (const auto &note : F.notes(ph, e))
        if (note.getName() == "AMDGPU" &&
            note.getType() == ELF::NT_AMDGPU_METADATA)
          metaBlob = toStringRef(note.getDesc(4)).str();
      if (e)
        return err("bad note segment: " + toString(std::move(e)));
    }
  }
  if (metaBlob.empty())
    return err("no NT_AMDGPU_METADATA note (code object v3+ required)");

  // Symbol table: name -> value.
  StringMap<uint64_t> syms;
  auto sections = F.sections();
  if (!sections)
    return err(toString(sections.takeError()));
  for (const auto &sec : *sections) {
    if (sec.sh_type != ELF::SHT_SYMTAB && sec.sh_type != ELF::SHT_DYNSYM)
      continue;
    auto symsOr = F.symbols(&sec);
    auto strtab = F.getStringTableForSymtab(sec);
    if (!symsOr || !strtab) {
      consumeError(symsOr.takeError());
      consumeError(strtab.takeError());
      continue;
    }
    for (const auto &s : *symsOr) {
      auto name = s.getName(*strtab);
      if (!name) {
        consumeError(name.takeError());
        continue;
      }
      if (!name->empty())
        syms[*name] = s.st_value;
    }
  }

  msgpack::Document doc;
  if (!doc.readFromBlob(metaBlob, /*Multi=*/false))
    return err("cannot parse the AMDGPU metadata (msgpack)");
  msgpack::DocNode &root = doc.getRoot();
  if (root.getKind() != msgpack::Type::Map)
    return err("AMDGPU metadata root is not a map");
  co->targetName = getS(root, "amdhsa.target");
  auto kit = root.getMap().find(StringRef("amdhsa.kernels"));
  if (kit == root.getMap().end() ||
      kit->second.getKind() != msgpack::Type::Array)
    return err("AMDGPU metadata has no amdhsa.kernels");
  for (msgpack::DocNode &kn : kit->second.getArray()) {
    if (kn.getKind() != msgpack::Type::Map)
      continue;
    KernelInfo K;
    K.name = getS(kn, ".name");
    K.symbol = getS(kn, ".symbol");
    K.kernargSegmentSize = getU(kn, ".kernarg_segment_size");
    K.kernargSegmentAlign = getU(kn, ".kernarg_segment_align", 8);
    K.groupSegmentSize = getU(kn, ".group_segment_fixed_size");
    K.privateSegmentSize = getU(kn, ".private_segment_fixed_size");
    K.vgprCount = getU(kn, ".vgpr_count");
    K.agprCount = getU(kn, ".agpr_count");
    K.sgprCount = getU(kn, ".sgpr_count");
    K.wavefrontSize = getU(kn, ".wavefront_size", 64);
    K.maxFlatWorkgroupSize = getU(kn, ".max_flat_workgroup_size", 1024);
    auto ait = kn.getMap().find(StringRef(".args"));
    if (ait != kn.getMap().end() &&
        ait->second.getKind() == msgpack::Type::Array)
      for (msgpack::DocNode &an : ait->second.getArray()) {
        if (an.getKind() != msgpack::Type::Map)
          continue;
        ArgInfo A;
        A.name = getS(an, ".name");
        A.valueKind = getS(an, ".value_kind");
        A.addressSpace = getS(an, ".address_space");
        A.offset = getU(an, ".offset");
        A.size = getU(an, ".size");
        K.args.push_back(A);
      }
    auto sit = syms.find(K.symbol);
    if (sit == syms.end())
      return err("kernel descriptor symbol '" + K.symbol + "' not found");
    K.descriptorAddress = sit->second;
    if (K.descriptorAddress + 64 > co->imageBytes.size())
      return err("kernel descriptor of '" + K.name + "' outside the image");
    amdhsa::kernel_descriptor_t kd;
    std::memcpy(&kd, co->imageBytes.data() + K.descriptorAddress, 64);
    K.entryAddress = K.descriptorAddress + kd.kernel_code_entry_byte_offset;
    K.pgmRsrc1 = kd.compute_pgm_rsrc1;
    K.pgmRsrc2 = kd.compute_pgm_rsrc2;
    K.pgmRsrc3 = kd.compute_pgm_rsrc3;
    K.kernelCodeProperties = kd.kernel_code_properties;
    K.kernargPreload = kd.kernarg_preload;
    if (K.wavefrontSize != 64 ||
        (K.kernelCodeProperties &
         amdhsa::KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32))
      return err("kernel '" + K.name + "' is not wave64");
    if (K.entryAddress >= co->imageBytes.size())
      return err("entry of kernel '" + K.name + "' outside the image");
    co->kernelInfos.push_back(std::move(K));
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
