//===- Compiler.cpp - uq IR to gfx950 code objects ------------------------===//
//
// Stages (each printable with --emit):
//   linalg  convert-uq-to-linalg (the CPU meaning; not on the GPU path)
//   wave    convert-uq-to-wave: wave-level kernels (whole-wave vectors, uq
//           tile ops) and host launches with run-time sizes
//   layouts uq-assign-lane-layouts: a lane layout on every vector
//   lanes   uq-distribute-to-lanes + uq-lower-kernel-abi: per-lane gpu.func
//           kernels with amdgpu/rocdl ops ("kernel" is the same stage)
//   rocdl   the kernels lowered to the llvm/rocdl dialects
//   llvmir  the device module translated to LLVM IR and optimised (O3)
//   isa     gfx950 assembly from LLVM's AMDGPU backend
//   hsaco   the object linked by ld.lld into a code object, checked (no
//           undefined symbols, no scratch) and described as JSON
//
//===----------------------------------------------------------------------===//

#include "uq/Target/Compiler.h"

#include "uq/Codegen/KernelsAttr.h"
#include "uq/InitAll.h"
#include "uq/Pipelines/GPUPipeline.h"
#include "uq/Support/Diagnostics.h"
#include "uq/Support/Input.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace mlir;
using uq::DiagnosticCollector;
using uq::KernelDescription;

#ifndef UQ_LLVM_TOOLS_DIR
#define UQ_LLVM_TOOLS_DIR ""
#endif

std::optional<uq::EmitStage> uq::parseEmitStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<EmitStage>>(name)
      .Case("linalg", EmitStage::Linalg)
      .Case("wave", EmitStage::Wave)
      .Case("layouts", EmitStage::Layouts)
      .Case("lanes", EmitStage::Kernel)
      .Case("kernel", EmitStage::Kernel)
      .Case("rocdl", EmitStage::ROCDL)
      .Case("llvmir", EmitStage::LLVMIR)
      .Case("isa", EmitStage::ISA)
      .Case("hsaco", EmitStage::HSACO)
      .Default(std::nullopt);
}

std::optional<uq::InputStage> uq::parseInputStage(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<InputStage>>(name)
      .Case("auto", InputStage::Auto)
      .Case("uq", InputStage::Ops)
      .Case("wave", InputStage::Wave)
      .Cases("lanes", "kernel", InputStage::Kernel)
      .Case("rocdl", InputStage::ROCDL)
      .Default(std::nullopt);
}

namespace {

/// The stage a module is at: uq ops anywhere, or no gpu.module at all -> Ops
/// (so that a module without kernels gets the "no uq op" error); else its
/// kernels' contents (llvm.func -> ROCDL; lane ids or amdgpu/rocdl ops ->
/// Kernel; otherwise Wave).
uq::InputStage detectStage(ModuleOp module) {
  bool uqOps = false, llvmFuncs = false, laneCode = false, gpuModule = false;
  module.walk([&](Operation *op) {
    if (isa<gpu::GPUModuleOp>(op))
      gpuModule = true;
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if (ns == "uq" && !op->getParentOfType<gpu::GPUModuleOp>())
      uqOps = true;
    if (op->getParentOfType<gpu::GPUModuleOp>()) {
      if (isa<LLVM::LLVMFuncOp>(op))
        llvmFuncs = true;
      if (ns == "amdgpu" || ns == "rocdl" || isa<gpu::ThreadIdOp>(op))
        laneCode = true;
    }
  });
  if (uqOps || !gpuModule)
    return uq::InputStage::Ops;
  if (llvmFuncs)
    return uq::InputStage::ROCDL;
  if (laneCode)
    return uq::InputStage::Kernel;
  return uq::InputStage::Wave;
}

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

void initTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
  });
}

std::string printOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// Creates the gfx950 target machine.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(llvm::StringRef chip) {
  initTargets();
  llvm::Triple triple("amdgcn-amd-amdhsa");
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return makeError("no AMDGPU target in this LLVM: " + err);
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, chip, "", opts, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return makeError("cannot create a target machine for " + chip);
  return tm;
}

/// Runs LLVM's O3 module pipeline.
void optimize(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

llvm::Expected<std::string> emitCode(llvm::Module &module,
                                     llvm::TargetMachine &tm,
                                     llvm::CodeGenFileType type) {
  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return makeError("the AMDGPU backend cannot emit this file type");
  pm.run(module);
  return std::string(buf.str());
}

/// Links a relocatable object into a code object with ld.lld.
llvm::Expected<std::string> linkCodeObject(llvm::StringRef object) {
  llvm::SmallVector<llvm::StringRef, 2> paths;
  if (llvm::StringRef(UQ_LLVM_TOOLS_DIR).size())
    paths.push_back(UQ_LLVM_TOOLS_DIR);
  auto lld = llvm::sys::findProgramByName("ld.lld", paths);
  if (!lld)
    lld = llvm::sys::findProgramByName("ld.lld");
  if (!lld)
    return makeError("ld.lld not found (install lld-22; searched " +
                     llvm::Twine(UQ_LLVM_TOOLS_DIR) + " and PATH)");
  llvm::SmallString<128> objPath, outPath, errPath;
  int fd;
  if (auto ec = llvm::sys::fs::createTemporaryFile("uq", "o", fd, objPath))
    return makeError("cannot create a temporary file: " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
  }
  if (auto ec = llvm::sys::fs::createTemporaryFile("uq", "hsaco", outPath))
    return makeError("cannot create a temporary file: " + ec.message());
  if (auto ec = llvm::sys::fs::createTemporaryFile("uq", "err", errPath))
    return makeError("cannot create a temporary file: " + ec.message());
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objPath);
    llvm::sys::fs::remove(outPath);
    llvm::sys::fs::remove(errPath);
  });
  llvm::StringRef args[] = {*lld,    "-flavor", "gnu",  "-shared",
                            objPath, "-o",      outPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, errPath, errPath};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(*lld, args, std::nullopt, redirects, 0, 0,
                                     &msg);
  if (rc != 0) {
    auto err = llvm::MemoryBuffer::getFile(errPath);
    return makeError("ld.lld failed: " +
                     (err ? (*err)->getBuffer().str() : msg));
  }
  auto out = llvm::MemoryBuffer::getFile(outPath);
  if (!out)
    return makeError("cannot read the linked code object");
  return (*out)->getBuffer().str();
}

/// The AMDHSA metadata of one kernel, read from the code object's note.
struct KernelMetadata {
  llvm::json::Object fields;
  llvm::json::Array args;
};

/// Reads the `amdhsa.kernels` metadata note of a code object.
llvm::Expected<llvm::StringMap<KernelMetadata>>
readMetadata(llvm::StringRef codeObject) {
  auto bufferOr = llvm::object::ObjectFile::createELFObjectFile(
      llvm::MemoryBufferRef(codeObject, "hsaco"));
  if (!bufferOr)
    return bufferOr.takeError();
  auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(bufferOr->get());
  if (!elf)
    return makeError("the code object is not a 64-bit little-endian ELF");
  // No undefined symbols may remain (a misspelled intrinsic becomes one).
  std::string undefined;
  for (const llvm::object::ELFSymbolRef &sym : elf->symbols()) {
    auto flags = sym.getFlags();
    if (!flags)
      return flags.takeError();
    if (*flags & llvm::object::SymbolRef::SF_Undefined) {
      auto name = sym.getName();
      if (name && !name->empty())
        undefined += " " + name->str();
    }
  }
  if (!undefined.empty())
    return makeError("the code object has undefined symbols:" + undefined);

  llvm::StringMap<KernelMetadata> result;
  const auto &file = elf->getELFFile();
  auto phdrs = file.program_headers();
  if (!phdrs)
    return phdrs.takeError();
  for (const auto &phdr : *phdrs) {
    if (phdr.p_type != llvm::ELF::PT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : file.notes(phdr, err)) {
      if (note.getName() != "AMDGPU" ||
          note.getType() != llvm::ELF::NT_AMDGPU_METADATA)
        continue;
      llvm::msgpack::Document doc;
      llvm::ArrayRef<uint8_t> desc = note.getDesc(phdr.p_align);
      if (!doc.readFromBlob(
              llvm::StringRef(reinterpret_cast<const char *>(desc.data()),
                              desc.size()),
              false))
        return makeError("cannot read the AMDGPU metadata note");
      auto &root = doc.getRoot().getMap(true);
      auto &kernels = root["amdhsa.kernels"].getArray(true);
      for (auto &k : kernels) {
        auto &km = k.getMap(true);
        KernelMetadata md;
        std::string name = km[".name"].getString().str();
        auto num = [&](const char *key) -> int64_t {
          auto it = km.find(doc.getNode(key));
          if (it == km.end())
            return -1;
          return it->second.getKind() == llvm::msgpack::Type::Int
                     ? it->second.getInt()
                     : static_cast<int64_t>(it->second.getUInt());
        };
        for (const char *key :
             {".kernarg_segment_size", ".kernarg_segment_align",
              ".group_segment_fixed_size", ".private_segment_fixed_size",
              ".vgpr_count", ".agpr_count", ".sgpr_count", ".vgpr_spill_count",
              ".sgpr_spill_count", ".max_flat_workgroup_size",
              ".wavefront_size"})
          md.fields[llvm::StringRef(key).drop_front()] = num(key);
        if (auto it = km.find(doc.getNode(".args")); it != km.end()) {
          for (auto &a : it->second.getArray()) {
            auto &am = a.getMap();
            llvm::json::Object arg;
            arg["offset"] = am[".offset"].getUInt();
            arg["size"] = am[".size"].getUInt();
            arg["value_kind"] = am[".value_kind"].getString().str();
            if (auto an = am.find(doc.getNode(".address_space"));
                an != am.end())
              arg["address_space"] = an->second.getString().str();
            md.args.push_back(std::move(arg));
          }
        }
        result[name] = std::move(md);
      }
    }
    if (err)
      return std::move(err);
  }
  return result;
}

/// Waves per SIMD that the register use allows (gfx950: 512 unified
/// VGPR+AGPR per lane, allocated in blocks of 8, at most 8 waves). The
/// metadata's .vgpr_count already counts the AGPRs on gfx90a and later
/// (LLVM AMDGPUBaseInfo getTotalNumVGPRs: alignTo(arch VGPRs, 4) + AGPRs),
/// as uq::emu::wavesPerSimd takes it.
int64_t wavesPerSimd(int64_t vgprs, int64_t agprs) {
  int64_t total = ((std::max(vgprs, agprs) + 7) / 8) * 8;
  if (total <= 0)
    return 8;
  return std::min<int64_t>(8, 512 / total);
}

/// Combines the compiler's launch description with the code object's
/// metadata into the kernel JSON (see docs/uq-compile.md).
llvm::Expected<std::string>
describeKernels(llvm::ArrayRef<uq::KernelDescription> kernels,
                llvm::StringRef codeObject, llvm::StringRef chip) {
  auto metadata = readMetadata(codeObject);
  if (!metadata)
    return metadata.takeError();
  llvm::json::Array out;
  for (const uq::KernelDescription &desc : kernels) {
    const std::string &name = desc.name;
    auto mdIt = metadata->find(name);
    if (mdIt == metadata->end())
      return makeError("kernel " + name + " is missing from the code object");
    KernelMetadata &md = mdIt->second;
    if (md.fields["private_segment_fixed_size"].getAsInteger().value_or(0) != 0)
      return makeError(
          "kernel " + name + " uses scratch memory (private segment size " +
          std::to_string(
              *md.fields["private_segment_fixed_size"].getAsInteger()) +
          "); uq kernels must not");
    llvm::json::Object k = uq::toJson(desc);
    // Where each explicit argument lies in the kernarg segment.
    llvm::json::Array &args = *k.getArray("args");
    for (auto [i, a] : llvm::enumerate(args)) {
      if (i >= md.args.size())
        break;
      llvm::json::Object &arg = *a.getAsObject();
      const llvm::json::Object *m = md.args[i].getAsObject();
      arg["offset"] = *m->get("offset");
      arg["size"] = *m->get("size");
      arg["value_kind"] = *m->get("value_kind");
    }
    // Hidden arguments the runtime fills follow the explicit ones.
    llvm::json::Array hidden;
    for (size_t i = desc.args.size(); i < md.args.size(); ++i)
      hidden.push_back(md.args[i]);
    k["hidden_args"] = std::move(hidden);
    int64_t vgpr = md.fields["vgpr_count"].getAsInteger().value_or(0);
    int64_t agpr = md.fields["agpr_count"].getAsInteger().value_or(0);
    int64_t lds =
        md.fields["group_segment_fixed_size"].getAsInteger().value_or(0);
    for (auto &field : md.fields)
      k[field.first] = field.second;
    int64_t waves = wavesPerSimd(vgpr, agpr);
    // 160 KiB of LDS per CU, 4 SIMDs per CU, one wave per workgroup.
    int64_t ldsWavesPerCU = lds > 0 ? (160 * 1024) / lds : 32;
    llvm::json::Object occ;
    occ["waves_per_simd_by_registers"] = waves;
    occ["workgroups_per_cu_by_lds"] = ldsWavesPerCU;
    occ["waves_per_cu"] = std::min<int64_t>(4 * waves, ldsWavesPerCU);
    k["occupancy"] = std::move(occ);
    out.push_back(std::move(k));
  }
  llvm::json::Object root;
  root["chip"] = chip.str();
  root["code_object"] = "amdgcn-amd-amdhsa--" + chip.str();
  root["abi"] = "docs/uq-compile.md: one pointer (8 bytes) per buffer "
                "argument and the value of each scalar argument at its offset "
                "in the kernarg segment; a size written as a name is the "
                "value of that scalar argument; block = workgroup size in "
                "lanes; grid = workgroups per dimension";
  root["kernels"] = std::move(out);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return text;
}

/// Runs a textual pipeline on `module`. A pipeline anchored on
/// `builtin.module(...)` runs as written; anything else
/// (`func.func(canonicalize)`, `convert-uq-to-linalg`) is nested in
/// `builtin.module(...)` first.
llvm::Error runTextualPipeline(ModuleOp module, llvm::StringRef pipeline,
                               const DiagnosticCollector &diags) {
  std::string text = pipeline.trim().str();
  if (!llvm::StringRef(text).starts_with("builtin.module("))
    text = "builtin.module(" + text + ")";
  std::string err;
  llvm::raw_string_ostream errOs(err);
  FailureOr<OpPassManager> parsed = parsePassPipeline(text, errOs);
  if (failed(parsed))
    return makeError("bad pass pipeline '" + pipeline + "': " + err);
  PassManager pm(module->getContext());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  if (failed(pm.run(module)) || diags.hasError())
    return diags.error("the pass pipeline '" + pipeline.str() + "' failed");
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::string> uq::runPipeline(llvm::StringRef source,
                                            llvm::StringRef pipeline) {
  DialectRegistry registry;
  uq::registerAllDialects(registry);
  uq::registerAllPasses();
  MLIRContext ctx(registry);
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceChecked(source, "input", &ctx);
  if (!module)
    return diags.error("cannot parse the input");
  if (llvm::Error err = runTextualPipeline(*module, pipeline, diags))
    return std::move(err);
  return printOp(module->getOperation());
}

namespace {
/// compileSource on a parsed module; errors are diagnostics or plain
/// llvm::Errors that compileSource locates at the module.
/// Long on purpose: the stages in their order (wave-level kernels, lane
/// layouts and distribution, ROCDL, LLVM IR, ISA, the code object and its
/// JSON), each one call, with the early return of each --emit stage between
/// them; reading it top to bottom is reading the compiler's path.
llvm::Expected<uq::CompileResult>
compileModule(ModuleOp module, const uq::CompileOptions &options,
              DiagnosticCollector &diags, bool &mergeNeedsScratch) {
  using namespace uq;
  MLIRContext &ctx = *module->getContext();
  if (options.chip != "gfx950")
    return makeError("chip '" + options.chip +
                     "' is not supported: uq's kernels need gfx950's scaled "
                     "MFMA (v_mfma_scale_f32_16x16x128_f8f6f4)");
  CompileResult result;
  if (options.emit == EmitStage::Linalg) {
    if (llvm::Error err =
            runTextualPipeline(module, "convert-uq-to-linalg", diags))
      return std::move(err);
    result.output = printOp(module.getOperation());
    return result;
  }

  GPUPipelineOptions gpuOptions;
  gpuOptions.chip = options.chip;
  gpuOptions.partitionSize = options.partitionSize;
  gpuOptions.prefillWaves = options.prefillWaves;
  gpuOptions.prefillRows = options.prefillRows;
  gpuOptions.mergeChunk = options.mergeChunk == 0 ? 32 : options.mergeChunk;
  gpuOptions.prefillSharedV = options.prefillSharedV;
  gpuOptions.prefillMergeChunk = options.prefillMergeChunk;
  gpuOptions.maxPartitionTokens = options.maxPartitionTokens;
  gpuOptions.minPartitionTokens = options.minPartitionTokens;
  gpuOptions.decodeWorkgroups = options.decodeWorkgroups;
  InputStage from = options.from == InputStage::Auto ? detectStage(module)
                                                     : options.from;
  auto stageIndex = [](InputStage s) { return static_cast<int>(s); };
  auto emitIndex = [](EmitStage e) {
    switch (e) {
    case EmitStage::Wave:
      return 1;
    case EmitStage::Layouts:
    case EmitStage::Kernel:
      return 2;
    case EmitStage::ROCDL:
      return 3;
    default:
      return 4;
    }
  };
  if (stageIndex(from) > emitIndex(options.emit) ||
      (from == InputStage::Kernel && options.emit == EmitStage::Layouts))
    return makeError("the input is already past the stage to emit");
  if (from == InputStage::Ops) {
    PassManager pm(&ctx);
    buildWavePipeline(pm, gpuOptions);
    if (failed(pm.run(module)) || diags.hasError())
      return diags.error("tiling into wave-level kernels failed");
  }
  if (from == InputStage::Ops && !hasKernelDescriptions(module))
    return makeError("the input has no uq op with a gfx950 kernel "
                     "(uq.cache_write, uq.decode_attention, "
                     "uq.decode_attention_partial, uq.merge_partitions)");
  // The launch description is input like any other when another compiler
  // wrote it (--from=wave|lanes|rocdl): checked before anything uses it.
  FailureOr<std::vector<KernelDescription>> kernels =
      readKernelDescriptions(module);
  if (failed(kernels))
    return diags.error("the kernels' launch description is malformed");
  if (options.emit == EmitStage::Wave) {
    result.output = printOp(module.getOperation());
    return result;
  }
  if (stageIndex(from) <= stageIndex(InputStage::Wave)) {
    PassManager pm(&ctx);
    buildLanePipeline(pm, gpuOptions,
                      /*stopAfterLayouts=*/options.emit == EmitStage::Layouts);
    if (failed(pm.run(module)) || diags.hasError())
      return diags.error("distribution to lanes failed");
  }
  if (options.emit == EmitStage::Layouts || options.emit == EmitStage::Kernel) {
    result.output = printOp(module.getOperation());
    return result;
  }
  if (stageIndex(from) <= stageIndex(InputStage::Kernel)) {
    PassManager pm(&ctx);
    buildROCDLPipeline(pm, gpuOptions);
    if (failed(pm.run(module)) || diags.hasError())
      return diags.error("lowering to ROCDL failed");
  }
  gpu::GPUModuleOp gpuModule;
  module->walk([&](gpu::GPUModuleOp m) { gpuModule = m; });
  if (options.emit == EmitStage::ROCDL) {
    result.output = printOp(gpuModule);
    return result;
  }

  llvm::LLVMContext llvmCtx;
  // The occupancy hint (options.wavesPerSimd) is a request: LLVM warns on
  // stderr when a kernel cannot reach it without spilling and keeps the
  // occupancy it has (the JSON's `occupancy` reports it). That warning is
  // expected, so it is dropped; every other diagnostic is printed as LLVM
  // would.
  llvmCtx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *di, void *) {
        std::string msg;
        llvm::raw_string_ostream os(msg);
        llvm::DiagnosticPrinterRawOStream printer(os);
        di->print(printer);
        if (di->getSeverity() == llvm::DS_Warning &&
            llvm::StringRef(msg).contains("failed to meet occupancy target"))
          return;
        if (di->getSeverity() == llvm::DS_Remark ||
            di->getSeverity() == llvm::DS_Note)
          return;
        llvm::errs() << (di->getSeverity() == llvm::DS_Error ? "error: "
                                                             : "warning: ")
                     << msg << "\n";
      });
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(gpuModule, llvmCtx, "uq_kernels");
  if (!llvmModule)
    return diags.error("translation to LLVM IR failed");
  auto tm = createTargetMachine(options.chip);
  if (!tm)
    return tm.takeError();
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  llvmModule->setDataLayout((*tm)->createDataLayout());
  // Code object v5: what current ROCm runtimes load everywhere.
  llvmModule->addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                            500);
  // IEEE mode off in every kernel: min/max then need no canonicalizing
  // v_max_f32 x, x of their inputs (the signalling-NaN quieting IEEE mode
  // asks for), so the softmax's cross-lane maxnum folds with its DPP operand
  // into one v_max_f32_dpp. uq's kernels never see a signalling NaN that
  // matters: every NaN policy (docs/gpu-compiler.md) is about quiet results.
  // Source: "amdgpu-ieee" in LLVM's AMDGPUUsage.rst (function attributes)
  // and the IEEE_MODE bit of COMPUTE_PGM_RSRC1 in the CDNA4 ISA guide.
  // Occupancy (options.wavesPerSimd): "amdgpu-waves-per-eu" = "N" asks the
  // register allocator for at most 512 / N VGPRs (AMDGPUUsage.rst, function
  // attributes); e.g. the D = 128 decode kernel needs 134 VGPRs without it
  // (3 waves per SIMD) and fits 128 with it, without scratch.
  auto isKernel = [](const llvm::Function &fn) {
    return fn.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL;
  };
  for (llvm::Function &fn : *llvmModule)
    if (isKernel(fn)) {
      fn.addFnAttr("amdgpu-ieee", "false");
      if (options.wavesPerSimd > 0)
        fn.addFnAttr("amdgpu-waves-per-eu",
                     std::to_string(options.wavesPerSimd));
    }
  optimize(*llvmModule, **tm);
  if (options.emit == EmitStage::LLVMIR) {
    llvm::raw_string_ostream os(result.output);
    llvmModule->print(os, nullptr);
    return result;
  }
  // Code generation changes the module: each run works on a copy.
  auto codegen = [&](llvm::CodeGenFileType type) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*llvmModule);
    return emitCode(*copy, **tm, type);
  };
  auto object = codegen(llvm::CodeGenFileType::ObjectFile);
  if (!object)
    return object.takeError();
  auto hsaco = linkCodeObject(*object);
  if (!hsaco)
    return hsaco.takeError();
  if (options.wavesPerSimd > 0) {
    // Kernels that spilled to reach the occupancy lose the hint: uq kernels
    // never use scratch, and fewer waves beat spills.
    auto metadata = readMetadata(*hsaco);
    if (!metadata)
      return metadata.takeError();
    bool again = false;
    for (auto &[name, md] : *metadata)
      if (md.fields["private_segment_fixed_size"].getAsInteger().value_or(0) !=
          0)
        if (llvm::Function *fn = llvmModule->getFunction(name);
            fn && fn->hasFnAttribute("amdgpu-waves-per-eu")) {
          fn->removeFnAttr("amdgpu-waves-per-eu");
          again = true;
        }
    if (again) {
      object = codegen(llvm::CodeGenFileType::ObjectFile);
      if (!object)
        return object.takeError();
      hsaco = linkCodeObject(*object);
      if (!hsaco)
        return hsaco.takeError();
    }
  }
  if (options.mergeChunk == 0 && gpuOptions.mergeChunk > 16) {
    // The automatic merge chunk: a merge kernel that needs scratch at 32
    // partitions per step (LLVM spills SGPRs with some option sets, e.g.
    // rotated values and v_mean at D = 128) is compiled again at 16 by
    // compileSource; every other kernel keeps its code.
    auto metadata = readMetadata(*hsaco);
    if (!metadata)
      return metadata.takeError();
    for (const KernelDescription &k : *kernels)
      if (k.op == "merge_partitions")
        if (auto md = metadata->find(k.name);
            md != metadata->end() &&
            md->second.fields["private_segment_fixed_size"]
                    .getAsInteger()
                    .value_or(0) != 0) {
          mergeNeedsScratch = true;
          return makeError("kernel " + k.name + " needs scratch at merge "
                           "chunk " + std::to_string(gpuOptions.mergeChunk));
        }
  }
  if (options.emit == EmitStage::ISA) {
    auto isa = codegen(llvm::CodeGenFileType::AssemblyFile);
    if (!isa)
      return isa.takeError();
    result.output = std::move(*isa);
    return result;
  }
  auto json = describeKernels(*kernels, *hsaco, options.chip);
  if (!json)
    return json.takeError();
  result.output = std::move(*hsaco);
  result.kernelsJson = std::move(*json);
  return result;
}
} // namespace

llvm::Expected<uq::CompileResult>
uq::compileSource(llvm::StringRef source, llvm::StringRef bufferName,
                  const CompileOptions &options) {
  DialectRegistry registry;
  uq::registerAllDialects(registry);
  uq::registerAllPasses();
  MLIRContext ctx(registry);
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceChecked(source, bufferName, &ctx);
  if (!module)
    return diags.error("cannot parse the input");
  bool mergeNeedsScratch = false;
  llvm::Expected<CompileResult> result =
      compileModule(*module, options, diags, mergeNeedsScratch);
  if (!result && mergeNeedsScratch) {
    // Automatic merge chunk (CompileOptions::mergeChunk = 0): the whole
    // input again with 16 partitions per step of the merge loop.
    llvm::consumeError(result.takeError());
    CompileOptions retry = options;
    retry.mergeChunk = 16;
    module = parseSourceChecked(source, bufferName, &ctx);
    if (!module)
      return diags.error("cannot parse the input");
    result = compileModule(*module, retry, diags, mergeNeedsScratch);
  }
  if (!result)
    return diags.locate((*module)->getLoc(), result.takeError());
  return result;
}
