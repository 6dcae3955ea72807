//===- Compiler.cpp - the library behind gdn-compile ----------------------===//

#include "gdn/Compiler/Compiler.h"
#include "gdn/Compiler/ExportedSymbols.h"
#include "gdn/Compiler/OutputFile.h"
#include "gdn/Compiler/StageTimer.h"


#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Writes text produced by `print` to the output path (OutputFile.h: the
/// file only appears when everything was written).
LogicalResult writeText(ModuleOp module, StringRef path,
                        function_ref<void(llvm::raw_ostream &)> print) {
  if (llvm::Error error = writeOutputStream(path, print))
    return module.emitError() << llvm::toString(std::move(error));
  return success();
}

LogicalResult runPipeline(ModuleOp module, StringRef stage, bool progress,
                          function_ref<void(OpPassManager &)> build) {
  StageTimer timer(progress, "lowering " + stage.str());
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return module.emitError() << "invalid pass manager options";
  build(pm);
  if (failed(pm.run(module)))
    return module.emitError() << "lowering failed in stage '" << stage << "'";
  return success();
}

llvm::Expected<const llvm::Target *> hostTarget(const llvm::Triple &triple) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for '" + triple.str() +
                                   "': " + error);
  return target;
}

FailureOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(ModuleOp module, StringRef cpuName) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  if (llvm::Error error = checkCPUName(cpuName))
    return module.emitError() << llvm::toString(std::move(error));
  const llvm::Target *target = cantFail(hostTarget(triple));
  std::string cpu = cpuName.str();
  std::string features;
  if (cpuName == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures featureSet;
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      featureSet.AddFeature(feature.first(), feature.second);
    features = featureSet.getString();
  }
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return module.emitError() << "cannot create a target machine for CPU '"
                              << cpu << "'";
  return machine;
}

LogicalResult emitObject(ModuleOp module, llvm::Module &llvmModule,
                         llvm::TargetMachine &machine, StringRef path) {
  // Object emission needs a seekable stream, so it always writes a file
  // (OutputFile.h copies it into a device or standard output).
  llvm::Error error = writeOutputFile(path, [&](StringRef file) -> llvm::Error {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec, llvm::sys::fs::OF_None);
    if (ec)
      return llvm::createStringError("cannot open '" + file +
                                     "': " + ec.message());
    llvm::legacy::PassManager codegen;
    if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                    llvm::CodeGenFileType::ObjectFile))
      return llvm::createStringError("the target cannot emit object files");
    codegen.run(llvmModule);
    os.flush();
    if (os.has_error()) {
      ec = os.error();
      os.clear_error();
      return llvm::createStringError("cannot write object file '" + path +
                                     "': " + ec.message());
    }
    return llvm::Error::success();
  });
  if (error)
    return module.emitError() << llvm::toString(std::move(error));
  return success();
}

/// LLVM Support and what it needs, linked statically, its symbols hidden:
/// a compiled model runs on machines without LLVM.
SmallVector<std::string> llvmSupportLibraries(const CompileOptions &options) {
  return {options.llvmLibDir + "/libLLVMSupport.a",
          options.llvmLibDir + "/libLLVMDemangle.a",
          "-Wl,--exclude-libs,libGdnModelDescription.a:libLLVMSupport.a:"
          "libLLVMDemangle.a"};
}

/// Runs the linker driver with `args`, writing `output` (OutputFile.h).
LogicalResult runLinker(ModuleOp module, const CompileOptions &options,
                        ArrayRef<std::string> args, StringRef output) {
  auto linker = llvm::sys::findProgramByName(options.linker);
  if (!linker)
    return module.emitError() << "cannot find the linker driver '"
                              << options.linker << "'";
  llvm::Error error = writeOutputFile(output, [&](StringRef file) -> llvm::Error {
    SmallVector<StringRef> argv = {*linker};
    argv.append(args.begin(), args.end());
    argv.append(options.runtimeLinkFlags.begin(),
                options.runtimeLinkFlags.end());
    argv.append({"-o", file});
    std::string message;
    int status = llvm::sys::ExecuteAndWait(*linker, argv, std::nullopt, {}, 0,
                                           0, &message);
    if (status == 0)
      return llvm::Error::success();
    return llvm::createStringError(
        "linking '" + output + "' failed (" + options.linker +
        " exited with " + std::to_string(status) +
        (message.empty() ? "" : ": " + message) + ")");
  });
  if (error)
    return module.emitError() << llvm::toString(std::move(error));
  return success();
}

/// For a model: the C API of gdn_model.h (the target's runtime archive,
/// whole: nothing in the model's code refers to the API, but the library
/// must export it), then what it needs: the description and weights
/// validation on LLVM Support, linked statically and kept out of the
/// library's exports.
SmallVector<std::string> modelRuntimeLibraries(const CompileOptions &options) {
  SmallVector<std::string> args;
  if (!options.model)
    return args;
  const std::string &runtime = options.target == CompileTarget::CUDA
                                   ? options.modelCudaRuntimeLibrary
                                   : options.modelRuntimeLibrary;
  args.append({"-Wl,--whole-archive", runtime, "-Wl,--no-whole-archive",
               options.modelDescriptionLibrary});
  args.append(llvmSupportLibraries(options));
  return args;
}

/// The libraries the code of `object` needs, after it on the command line:
/// none of LLVM or MLIR at run time. CPU: libc, libstdc++, libm, libomp.
/// CUDA: the mgpu* runtime, linked in, so that on the GPU machine the
/// library needs only the driver's libcuda.so.1 (the stub here carries that
/// soname).
SmallVector<std::string> targetLibraries(const CompileOptions &options) {
  SmallVector<std::string> args = modelRuntimeLibraries(options);
  if (options.target == CompileTarget::CUDA) {
    args.append({options.cudaRuntimeLibrary,
                 "-L" + options.cudaRoot + "/lib64/stubs", "-lcuda"});
  } else {
    // memrefCopy (strided copies) and printMemref*, instead of MLIR's
    // runner utilities.
    args.append({options.cpuRuntimeLibrary, "-L" + options.llvmLibDir,
                 "-Wl,-rpath," + options.llvmLibDir, "-lomp", "-lm"});
  }
  // Last: the compiler-rt builtins the generated code may call
  // (__truncsfbf2 for bf16 vectors), linked in and kept out of the exports.
  if (!options.builtinsLibrary.empty())
    args.append({options.builtinsLibrary,
                 "-Wl,--exclude-libs,libgdn_builtins.a"});
  return args;
}

/// Links `object` into a shared library or an executable at `output`.
LogicalResult link(ModuleOp module, const CompileOptions &options,
                   StringRef object, StringRef output) {
  SmallVector<std::string> args = {object.str()};
  if (options.emit == EmitAction::SharedLibrary)
    args.push_back("-shared");
  args.append(targetLibraries(options));
  return runLinker(module, options, args, output);
}

/// Copies `from` to `to` (OutputFile.h).
LogicalResult copyFile(ModuleOp module, StringRef from, StringRef to) {
  llvm::Error error = writeOutputFile(to, [&](StringRef file) -> llvm::Error {
    if (std::error_code ec = llvm::sys::fs::copy_file(from, file))
      return llvm::createStringError("cannot copy '" + from + "' to '" + to +
                                     "': " + ec.message());
    return llvm::Error::success();
  });
  if (error)
    return module.emitError() << llvm::toString(std::move(error));
  return success();
}

/// A compiled model's directory: the shared library with the C API, the
/// executable over it (found beside it through $ORIGIN), and the header.
LogicalResult writeModelDirectory(ModuleOp module,
                                  const CompileOptions &options,
                                  StringRef object) {
  StringRef dir = options.outputPath;
  std::error_code ec = llvm::sys::fs::create_directories(dir);
  if (!ec && !llvm::sys::fs::is_directory(dir))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec)
    return module.emitError() << "cannot create the output directory '"
                              << dir << "': " << ec.message();
  auto inDir = [&](StringRef name) {
    SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };
  std::string library = inDir(kModelLibraryName);
  SmallVector<std::string> args = {object.str(), "-shared",
                                   std::string("-Wl,-soname,") +
                                       kModelLibraryName};
  args.append(targetLibraries(options));
  if (failed(runLinker(module, options, args, library)))
    return failure();
  // The executable parses its options with LLVM Support, linked in too.
  SmallVector<std::string> mainArgs = {options.modelMainLibrary, library,
                                       "-Wl,-rpath,$ORIGIN"};
  // The library's libcuda.so.1 resolves against the toolkit's stub here.
  if (options.target == CompileTarget::CUDA)
    mainArgs.append({"-L" + options.cudaRoot + "/lib64/stubs", "-lcuda"});
  mainArgs.append(options.modelTokenizerLibraries.begin(),
                  options.modelTokenizerLibraries.end());
  mainArgs.append(llvmSupportLibraries(options));
  if (failed(runLinker(module, options, mainArgs,
                       inDir(kModelExecutableName))))
    return failure();
  return copyFile(module, options.modelHeader, inDir(kModelHeaderName));
}
} // namespace

llvm::Error mlir::gdn::checkCPUName(StringRef cpu) {
  if (cpu == "native")
    return llvm::Error::success();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  llvm::Expected<const llvm::Target *> target = hostTarget(triple);
  if (!target)
    return target.takeError();
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      (*target)->createMCSubtargetInfo(triple, "", ""));
  if (info && info->isCPUStringValid(cpu))
    return llvm::Error::success();
  std::string names;
  if (info)
    for (const llvm::SubtargetSubTypeKV &kv :
         info->getAllProcessorDescriptions())
      names += (names.empty() ? "" : ", ") + std::string(kv.Key);
  return llvm::createStringError("--cpu: '" + cpu + "' is not a CPU of " +
                                 triple.str() + "; valid names: native" +
                                 (names.empty() ? "" : ", ") + names);
}

/// The module as text, as gdn-opt prints it, so that the two tools' outputs
/// compare equal.
static void printMLIR(ModuleOp module, llvm::raw_ostream &os) {
  module.print(os);
  os << '\n';
}

/// LLVM IR, object and linking, shared by both targets: `module` is in the
/// LLVM dialect. A library or object exports `exported` alone
/// (ExportedSymbols.h).
static LogicalResult emitFromLLVMDialect(ModuleOp module,
                                         const CompileOptions &options,
                                         const llvm::StringSet<> &exported) {
  llvm::LLVMContext llvmContext;
  std::optional<StageTimer> timer;
  timer.emplace(options.progress, "translation to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return module.emitError() << "translation to LLVM IR failed";
  if (options.emit != EmitAction::Executable || options.model)
    hideUnexportedSymbols(*llvmModule, exported);
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(module, options.cpu);
  if (failed(machine))
    return failure();
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  timer.emplace(options.progress, "LLVM optimization (-O3)");
  auto optimize = makeOptimizingTransformer(3, 0, machine->get());
  if (llvm::Error error = optimize(llvmModule.get()))
    return module.emitError() << "LLVM optimization failed: "
                              << llvm::toString(std::move(error));
  if (options.emit == EmitAction::LLVMIR)
    return writeText(module, options.outputPath, [&](llvm::raw_ostream &os) {
      llvmModule->print(os, nullptr);
    });
  timer.emplace(options.progress, "machine code");
  if (options.emit == EmitAction::Object)
    return emitObject(module, *llvmModule, **machine, options.outputPath);

  SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("gdn", "o", objectPath))
    return module.emitError() << "cannot create a temporary object file: "
                              << ec.message();
  llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(objectPath); });
  if (failed(emitObject(module, *llvmModule, **machine, objectPath)))
    return failure();
  timer.emplace(options.progress, "linking");
  if (options.model && options.emit == EmitAction::Executable)
    return writeModelDirectory(module, options, objectPath);
  return link(module, options, objectPath, options.outputPath);
}

/// A model's libraries are linked from the runtime archives and header of
/// the build or install tree gdn-compile runs from.
static LogicalResult checkModelRuntimeFiles(ModuleOp module,
                                            const CompileOptions &options) {
  if (!options.model)
    return success();
  StringRef runtime = options.target == CompileTarget::CUDA
                          ? StringRef(options.modelCudaRuntimeLibrary)
                          : StringRef(options.modelRuntimeLibrary);
  SmallVector<StringRef> files = {runtime, options.modelDescriptionLibrary,
                                  options.modelMainLibrary,
                                  options.modelHeader};
  files.append(options.modelTokenizerLibraries.begin(),
               options.modelTokenizerLibraries.end());
  for (StringRef file : files)
    if (!llvm::sys::fs::exists(file))
      return module.emitError()
             << "the model runtime file '" << file
             << "' does not exist (is gdn-compile in a complete build or "
                "install tree"
             << (options.target == CompileTarget::CUDA
                     ? ", built with the CUDA toolkit?)"
                     : "?)");
  return success();
}

/// An executable runs func.func @main(), which must take and return
/// nothing. It is renamed and called from a C main that returns exit
/// status 0.
static LogicalResult prepareMain(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal() || main.getNumArguments() != 0 ||
      main.getNumResults() != 0)
    return module.emitError()
           << "--emit=exe needs a function 'func.func @main()' without "
              "arguments or results to run";
  SymbolTable symbols(module);
  if (failed(symbols.rename(main, "__gdn_main")))
    return module.emitError() << "cannot rename @main";
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = main.getLoc();
  auto entry = func::FuncOp::create(b, loc, "main",
                                    b.getFunctionType({}, {b.getI32Type()}));
  b.setInsertionPointToStart(entry.addEntryBlock());
  func::CallOp::create(b, loc, main, ValueRange());
  func::ReturnOp::create(
      b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 32)});
  return success();
}

/// A model compiled to an object, a library or its directory: what the
/// model runtime links.
static bool binaryModelOutput(const CompileOptions &options) {
  return options.emit == EmitAction::Object ||
         options.emit == EmitAction::SharedLibrary ||
         options.emit == EmitAction::Executable;
}

static LogicalResult compileForCUDA(ModuleOp module,
                                    const CompileOptions &options,
                                    const llvm::StringSet<> &exported) {
  auto printModule = [&](llvm::raw_ostream &os) { printMLIR(module, os); };
  bool executable = options.emit == EmitAction::Executable;
  if (executable && !options.model && failed(prepareMain(module)))
    return failure();
  if (options.emit >= EmitAction::SharedLibrary) {
    if (!llvm::sys::fs::exists(options.cudaRuntimeLibrary))
      return module.emitError() << "the CUDA runtime library '"
                                << options.cudaRuntimeLibrary
                                << "' does not exist (was gdn built with the "
                                   "CUDA toolkit?)";
    if (failed(checkModelRuntimeFiles(module, options)))
      return failure();
  }
  // ptxas and fatbinary come from the toolkit; MLIR looks for them under
  // CUDA_ROOT.
  if (!llvm::sys::Process::GetEnv("CUDA_ROOT"))
    ::setenv("CUDA_ROOT", options.cudaRoot.c_str(), 0);
  CUDAPipelineOptions pipeline;
  pipeline.copyOptionValuesFrom(options.cudaPipeline);
  if (llvm::Error error = verifyCUDAPipelineOptions(pipeline))
    return module.emitError() << llvm::toString(std::move(error));
  // @main makes and prints its tensors on the host, where kernels must
  // reach them. A model's step runs on the device from end to end; its
  // runtime passes device buffers through the packed C interface.
  pipeline.managedHostBuffers = executable && !options.model;
  pipeline.cInterfaces = options.emit == EmitAction::SharedLibrary ||
                         (options.model && binaryModelOutput(options));
  if (failed(runPipeline(module, "gdn-to-gpu", options.progress, [&](OpPassManager &pm) {
        buildGdnToGPUPipeline(pm, pipeline);
      })))
    return failure();
  if (options.emit == EmitAction::MLIRLinalg)
    return writeText(module, options.outputPath, printModule);
  if (failed(runPipeline(module, "gpu-to-llvm", options.progress, [&](OpPassManager &pm) {
        buildGdnGPUToLLVMPipeline(pm, pipeline);
      })))
    return failure();
  if (options.emit == EmitAction::MLIRLLVM)
    return writeText(module, options.outputPath, printModule);
  return emitFromLLVMDialect(module, options, exported);
}

LogicalResult mlir::gdn::compileModule(ModuleOp module,
                                       const CompileOptions &options) {
  auto printModule = [&](llvm::raw_ostream &os) { printMLIR(module, os); };
  if (options.emit == EmitAction::MLIR)
    return writeText(module, options.outputPath, printModule);
  llvm::StringSet<> exported = exportedSymbols(module);
  if (options.target == CompileTarget::CUDA)
    return compileForCUDA(module, options, exported);

  CPUPipelineOptions pipeline;
  pipeline.copyOptionValuesFrom(options.cpuPipeline);
  if (llvm::Error error = verifyCPUPipelineOptions(pipeline))
    return module.emitError() << llvm::toString(std::move(error));
  // Shared libraries, and the model directory's library, export C
  // interfaces with results as out-parameters; so does a model's object,
  // which is what that library is linked from (for static linking).
  bool exportsCInterfaces = options.emit == EmitAction::SharedLibrary ||
                            (options.model && binaryModelOutput(options));
  pipeline.resultsAsOutParams = exportsCInterfaces;
  pipeline.cInterfaces = exportsCInterfaces;

  if (failed(runPipeline(module, "gdn-to-linalg", options.progress, [&](OpPassManager &pm) {
        buildGdnToLinalgPipeline(pm, pipeline);
      })))
    return failure();
  if (options.emit == EmitAction::MLIRLinalg)
    return writeText(module, options.outputPath, printModule);

  if (options.model) {
    if (options.emit >= EmitAction::SharedLibrary &&
        failed(checkModelRuntimeFiles(module, options)))
      return failure();
  } else if (options.emit == EmitAction::Executable &&
             failed(prepareMain(module))) {
    return failure();
  }
  if (options.emit >= EmitAction::SharedLibrary &&
      !llvm::sys::fs::exists(options.cpuRuntimeLibrary))
    return module.emitError()
           << "the CPU runtime library '" << options.cpuRuntimeLibrary
           << "' does not exist (is gdn-compile in a complete build or "
              "install tree?)";
  if (failed(runPipeline(module, "linalg-to-llvm", options.progress, [&](OpPassManager &pm) {
        buildGdnLinalgToLLVMCPUPipeline(pm, pipeline);
      })))
    return failure();
  if (options.emit == EmitAction::MLIRLLVM)
    return writeText(module, options.outputPath, printModule);
  return emitFromLLVMDialect(module, options, exported);
}
