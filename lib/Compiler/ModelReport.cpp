//===- ModelReport.cpp - gdn-compile --emit=report ------------------------===//

#include "gdn/Compiler/ModelReport.h"
#include "gdn/Frontend/ModelCosts.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <string>

using namespace mlir;
using namespace mlir::gdn;

std::vector<int64_t> mlir::gdn::defaultReportContexts() {
  return {1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20};
}

namespace {
/// The sums over the model's layers at one context length.
struct ContextCosts {
  int64_t tokens;
  std::vector<int64_t> cacheBytesByKind, flopsByKind;
  int64_t cacheBytes = 0, flops = 0;
  int64_t softmaxCacheBytes, softmaxFlops;
};
} // namespace

static ContextCosts costsAt(const ModelConfig &config,
                            llvm::ArrayRef<LayerKindCost> kinds,
                            int64_t tokens) {
  ContextCosts costs;
  costs.tokens = tokens;
  for (const LayerKindCost &kind : kinds) {
    int64_t bytes = kind.layers * kind.cacheElements(tokens) *
                    kCacheElementBytes;
    int64_t flops = kind.layers * kind.flopsPerToken(tokens);
    costs.cacheBytesByKind.push_back(bytes);
    costs.flopsByKind.push_back(flops);
    costs.cacheBytes += bytes;
    costs.flops += flops;
  }
  costs.softmaxCacheBytes = config.numLayers * tokens *
                            softmaxCacheElementsPerToken(config) *
                            kCacheElementBytes;
  costs.softmaxFlops =
      config.numLayers * tokens * softmaxFlopsPerContextToken(config);
  return costs;
}

static std::string tokensLabel(int64_t tokens) {
  if (tokens >= (1 << 20) && tokens % (1 << 20) == 0)
    return llvm::formatv("{0}M", tokens >> 20).str();
  if (tokens >= (1 << 10) && tokens % (1 << 10) == 0)
    return llvm::formatv("{0}k", tokens >> 10).str();
  return std::to_string(tokens);
}

/// `value` in the largest of `units` (each `base` times the one before)
/// that keeps it at least 1, with `decimals` digits; plain in the first.
static std::string scaled(int64_t value, double base,
                          llvm::ArrayRef<const char *> units,
                          unsigned decimals) {
  double scaledValue = static_cast<double>(value);
  unsigned unit = 0;
  while (scaledValue >= base && unit + 1 < units.size()) {
    scaledValue /= base;
    ++unit;
  }
  if (unit == 0)
    return units[0][0] ? llvm::formatv("{0} {1}", value, units[0]).str()
                       : std::to_string(value);
  return llvm::formatv("{0} {1}",
                       llvm::format("%.*f", int(decimals), scaledValue),
                       units[unit])
      .str();
}

static std::string humanBytes(int64_t bytes) {
  return scaled(bytes, 1024, {"B", "KiB", "MiB", "GiB", "TiB"}, 1);
}

static std::string humanFlops(int64_t flops) {
  return scaled(flops, 1000, {"", "k", "M", "G", "T", "P"}, 2);
}

static double ratio(int64_t baseline, int64_t value) {
  return value == 0 ? 0.0
                    : static_cast<double>(baseline) /
                          static_cast<double>(value);
}

/// The MLA layers' cache per token against the softmax baseline's, or
/// nothing when the model has no MLA layer.
static std::optional<double> mlaCompression(const ModelConfig &config,
                                            llvm::ArrayRef<LayerKindCost> kinds) {
  for (const LayerKindCost &kind : kinds)
    if (kind.kind == LayerKind::MLA)
      return ratio(softmaxCacheElementsPerToken(config),
                   kind.cacheElementsPerToken);
  return std::nullopt;
}

static void printText(const ModelConfig &config,
                      llvm::ArrayRef<LayerKindCost> kinds,
                      llvm::ArrayRef<ContextCosts> contexts,
                      llvm::raw_ostream &os) {
  os << "model: " << config.numLayers << " layers (";
  for (auto [i, kind] : llvm::enumerate(kinds))
    os << (i ? ", " : "") << kind.layers << " " << layerKindName(kind.kind);
  os << "), d_model " << config.dModel << "; caches f32 ("
     << kCacheElementBytes << " bytes per element)\n";
  os << "per layer and sequence (FLOPs of token mixing for one new token at "
        "context t, a multiply-add counted as 2):\n";
  for (const LayerKindCost &kind : kinds) {
    os << llvm::formatv("  {0,-10} cache ", layerKindName(kind.kind));
    if (kind.cacheElementsPerToken == 0)
      os << kind.fixedCacheElements << " elements (constant)";
    else if (kind.fixedCacheElements == 0)
      os << kind.cacheElementsPerToken << " elements per token";
    else
      os << kind.fixedCacheElements << " + " << kind.cacheElementsPerToken
         << " t elements";
    os << "; mixing ";
    if (kind.flopsPerContextToken == 0)
      os << kind.constantFlops << " FLOPs (constant)";
    else if (kind.constantFlops == 0)
      os << kind.flopsPerContextToken << " t FLOPs";
    else
      os << kind.constantFlops << " + " << kind.flopsPerContextToken
         << " t FLOPs";
    if (kind.kind == LayerKind::MLA)
      os << " (absorbed form)";
    os << "\n";
  }
  os << "  softmax    cache 2 d_model = " << softmaxCacheElementsPerToken(config)
     << " elements per token; mixing 4 d_model t = "
     << softmaxFlopsPerContextToken(config)
     << " t FLOPs (the baseline: every layer softmax attention)\n";
  if (std::optional<double> compression = mlaCompression(config, kinds))
    os << llvm::formatv("MLA compression: {0:f2}x (cache per token of an MLA "
                        "layer against softmax attention's 2 d_model)\n",
                        *compression);

  os << "\ncache bytes per sequence:\n";
  os << llvm::formatv("{0,8}", "context");
  for (const LayerKindCost &kind : kinds)
    os << llvm::formatv("{0,14}", layerKindName(kind.kind));
  os << llvm::formatv("{0,14}{1,14}{2,10}\n", "total", "softmax K/V",
                      "smaller");
  for (const ContextCosts &context : contexts) {
    os << llvm::formatv("{0,8}", tokensLabel(context.tokens));
    for (int64_t bytes : context.cacheBytesByKind)
      os << llvm::formatv("{0,14}", humanBytes(bytes));
    os << llvm::formatv(
        "{0,14}{1,14}{2,9:f1}x\n", humanBytes(context.cacheBytes),
        humanBytes(context.softmaxCacheBytes),
        ratio(context.softmaxCacheBytes, context.cacheBytes));
  }
  os << "\ntoken-mixing FLOPs per new token:\n";
  os << llvm::formatv("{0,8}", "context");
  for (const LayerKindCost &kind : kinds)
    os << llvm::formatv("{0,14}", layerKindName(kind.kind));
  os << llvm::formatv("{0,14}{1,14}{2,10}\n", "total", "softmax", "fewer");
  for (const ContextCosts &context : contexts) {
    os << llvm::formatv("{0,8}", tokensLabel(context.tokens));
    for (int64_t flops : context.flopsByKind)
      os << llvm::formatv("{0,14}", humanFlops(flops));
    os << llvm::formatv("{0,14}{1,14}{2,9:f1}x\n", humanFlops(context.flops),
                        humanFlops(context.softmaxFlops),
                        ratio(context.softmaxFlops, context.flops));
  }
}

static void printJSON(const ModelConfig &config,
                      llvm::ArrayRef<LayerKindCost> kinds,
                      llvm::ArrayRef<ContextCosts> contexts,
                      llvm::raw_ostream &os) {
  llvm::json::Array kindArray;
  for (const LayerKindCost &kind : kinds)
    kindArray.push_back(llvm::json::Object{
        {"kind", layerKindName(kind.kind)},
        {"layers", kind.layers},
        {"fixed_cache_elements", kind.fixedCacheElements},
        {"cache_elements_per_token", kind.cacheElementsPerToken},
        {"constant_flops", kind.constantFlops},
        {"flops_per_context_token", kind.flopsPerContextToken}});
  llvm::json::Array contextArray;
  for (const ContextCosts &context : contexts) {
    llvm::json::Object bytes, flops;
    for (auto [kind, b, f] : llvm::zip_equal(kinds, context.cacheBytesByKind,
                                             context.flopsByKind)) {
      bytes[layerKindName(kind.kind)] = b;
      flops[layerKindName(kind.kind)] = f;
    }
    contextArray.push_back(llvm::json::Object{
        {"tokens", context.tokens},
        {"cache_bytes", std::move(bytes)},
        {"cache_bytes_total", context.cacheBytes},
        {"softmax_cache_bytes", context.softmaxCacheBytes},
        {"flops_per_token", std::move(flops)},
        {"flops_per_token_total", context.flops},
        {"softmax_flops_per_token", context.softmaxFlops}});
  }
  llvm::json::Object report{
      {"num_layers", config.numLayers},
      {"d_model", config.dModel},
      {"cache_element_bytes", kCacheElementBytes},
      {"softmax_cache_elements_per_token",
       softmaxCacheElementsPerToken(config)},
      {"softmax_flops_per_context_token", softmaxFlopsPerContextToken(config)},
      {"layer_kinds", std::move(kindArray)},
      {"contexts", std::move(contextArray)}};
  if (std::optional<double> compression = mlaCompression(config, kinds))
    report["mla_compression"] = *compression;
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
}

void mlir::gdn::printModelReport(const ModelConfig &config,
                                 llvm::ArrayRef<int64_t> contexts,
                                 ReportFormat format, llvm::raw_ostream &os) {
  std::vector<LayerKindCost> kinds = layerKindCosts(config);
  std::vector<ContextCosts> costs;
  for (int64_t tokens : contexts)
    costs.push_back(costsAt(config, kinds, tokens));
  if (format == ReportFormat::JSON)
    printJSON(config, kinds, costs, os);
  else
    printText(config, kinds, costs, os);
}
