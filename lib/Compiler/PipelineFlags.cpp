//===- PipelineFlags.cpp - pipeline options as a tool's own flags ---------===//

#include "gdn/Compiler/PipelineFlags.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::gdn;
namespace cl = llvm::cl;

/// The value of every option of `options`, by name, from its printed form
/// "{name=value name=value}" (values here have no spaces).
static llvm::StringMap<std::string>
printedDefaults(const detail::PassOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  llvm::StringRef body = llvm::StringRef(text).trim("{}");
  llvm::StringMap<std::string> values;
  llvm::SmallVector<llvm::StringRef> pairs;
  body.split(pairs, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef pair : pairs) {
    auto [name, value] = pair.split('=');
    values[name] = value.str();
  }
  return values;
}

/// What --help shows as the value of a flag, from its default.
static llvm::StringRef valueKind(llvm::StringRef defaultValue) {
  if (defaultValue == "true" || defaultValue == "false")
    return "bool";
  int64_t number;
  if (!defaultValue.getAsInteger(10, number))
    return "int";
  return "string";
}

/// One flag per option of the pipeline, named `prefix` + the option's name;
/// the options that follow from --emit are left to compileModule.
template <typename Options>
void PipelineFlags::add(const Options &options, llvm::StringRef pipeline,
                        llvm::StringRef prefix,
                        llvm::cl::OptionCategory &category) {
  llvm::StringMap<std::string> defaults = printedDefaults(options);
  for (const cl::Option *option : options.listOptions()) {
    llvm::StringRef name = option->ArgStr;
    if (llvm::is_contained({llvm::StringRef(kResultsAsOutParamsOption),
                            llvm::StringRef(kCInterfacesOption),
                            llvm::StringRef(kManagedHostBuffersOption)},
                           name))
      continue;
    Flag entry;
    entry.pipeline = pipeline.str();
    entry.option = name.str();
    entry.defaultValue = defaults.lookup(name);
    entry.name = std::make_unique<std::string>((prefix + name).str());
    entry.help = std::make_unique<std::string>(
        (option->HelpStr + " (default: " + entry.defaultValue + ")").str());
    entry.flag = std::make_unique<cl::opt<std::string>>(
        llvm::StringRef(*entry.name), cl::cat(category), cl::desc(*entry.help),
        cl::value_desc(valueKind(entry.defaultValue)));
    // Flags of boolean options may stand alone, as in gdn-opt.
    entry.flag->setValueExpectedFlag(option->getValueExpectedFlag());
    flags.push_back(std::move(entry));
  }
}

PipelineFlags::PipelineFlags(llvm::cl::OptionCategory &category) {
  // Default-valued structs, read for names, help and defaults only.
  static const CPUPipelineOptions cpuDefaults;
  static const CUDAPipelineOptions cudaDefaults;
  add(cpuDefaults, "cpu", "", category);
  add(cudaDefaults, "cuda", "cuda-", category);
}

llvm::Error PipelineFlags::apply(CompileOptions &options) const {
  for (const Flag &entry : flags) {
    if (entry.flag->getNumOccurrences() == 0)
      continue;
    // A boolean flag may stand alone ("--flush-denormals"); other values,
    // empty ones included, are passed on as given.
    std::string text = entry.option;
    if (!entry.flag->getValue().empty() ||
        entry.flag->getValueExpectedFlag() != cl::ValueOptional)
      text += "=" + entry.flag->getValue();
    std::string message;
    llvm::raw_string_ostream errors(message);
    LogicalResult parsed =
        entry.pipeline == "cpu"
            ? options.cpuPipeline.parseFromString(text, errors)
            : options.cudaPipeline.parseFromString(text, errors);
    if (failed(parsed))
      return llvm::createStringError(
          "--" + entry.flag->ArgStr + ": '" + entry.flag->getValue() +
          "' is not a valid value" +
          (message.empty() ? "" : ": " + llvm::StringRef(message).trim()));
  }
  return llvm::Error::success();
}

void PipelineFlags::printJSON(llvm::raw_ostream &os) const {
  llvm::json::Array array;
  for (const Flag &entry : flags)
    array.push_back(
        llvm::json::Object{{"flag", ("--" + entry.flag->ArgStr).str()},
                           {"pipeline", entry.pipeline},
                           {"option", entry.option},
                           {"default", entry.defaultValue},
                           {"help", entry.flag->HelpStr.str()}});
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(array))) << "\n";
}
