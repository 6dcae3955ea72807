//===- ModelConfig.cpp - the model description (JSON) ---------------------===//

#include "gdn/Frontend/ModelConfig.h"
#include "gdn/Frontend/StrictJSON.h"
#include "FieldReader.h"
#include "HuggingFaceConfig.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir::gdn;
using llvm::Error;
using llvm::StringRef;
namespace json = llvm::json;


llvm::Expected<ModelConfig> mlir::gdn::parseModelConfig(StringRef text) {
  llvm::Expected<json::Value> parsed = parseStrictJSON(text);
  if (!parsed)
    return fieldError("model description",
                      "not valid JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fieldError("model description", "expected a JSON object");
  if (isHuggingFaceConfig(*root))
    return parseHuggingFaceConfig(*root);

  ModelConfig config;
  FieldReader top(*root, "");
  if (Error e = assign(config.vocabSize, top.integer("vocab_size", 1, kMaxVocabulary)))
    return std::move(e);
  if (Error e = assign(config.dModel, top.integer("d_model", 1, kMaxDimension)))
    return std::move(e);
  if (Error e = assign(config.numLayers, top.integer("num_layers", 1, kMaxLayers)))
    return std::move(e);
  if (Error e = assign(config.mlpHiddenSize, top.integer("mlp_hidden_size", 1, kMaxDimension)))
    return std::move(e);
  if (Error e = assign(config.maxContext, top.integer("max_context", 1, kMaxContext)))
    return std::move(e);
  if (Error e = assign(config.normEps, top.number("norm_eps", kMinNormEps, kMaxNormEps)))
    return std::move(e);
  if (Error e = assign(config.tieEmbeddings, top.boolean("tie_embeddings")))
    return std::move(e);
  std::string tokenizer;
  if (Error e = assign(tokenizer, top.choice("tokenizer", {"bytes", "ids"})))
    return std::move(e);
  config.byteTokenizer = tokenizer == "bytes";
  if (config.byteTokenizer && config.vocabSize < 256)
    return fieldError("vocab_size", "the byte tokenizer needs at least 256 "
                                    "tokens, got " +
                                        llvm::Twine(config.vocabSize));

  // The layer kinds: an explicit list, or the design document's pattern.
  const json::Value *types = top.raw("layer_types");
  const json::Value *pattern = top.raw("layer_pattern");
  if ((types != nullptr) == (pattern != nullptr))
    return fieldError("layer_types", "give exactly one of layer_types and "
                                     "layer_pattern");
  if (types) {
    const json::Array *list = types->getAsArray();
    if (!list || static_cast<int64_t>(list->size()) != config.numLayers)
      return fieldError("layer_types",
                        "expected a list of " + llvm::Twine(config.numLayers) +
                            " entries \"gdn\"/\"mla\" (num_layers), got " +
                            FieldReader::describe(*types));
    for (auto [index, entry] : llvm::enumerate(*list)) {
      std::optional<StringRef> kind = entry.getAsString();
      if (!kind || (*kind != "gdn" && *kind != "mla"))
        return fieldError("layer_types[" + llvm::Twine(index) + "]",
                          "expected \"gdn\" or \"mla\", got " +
                              FieldReader::describe(entry));
      config.layers.push_back(*kind == "gdn" ? LayerKind::GDN
                                             : LayerKind::MLA);
    }
  } else {
    std::optional<StringRef> name = pattern->getAsString();
    if (!name || *name != "nenya")
      return fieldError("layer_pattern", "expected \"nenya\", got " +
                                             FieldReader::describe(*pattern));
    for (int64_t i = 0; i < config.numLayers; ++i)
      config.layers.push_back(i % 4 == 0 || i == config.numLayers - 1
                                  ? LayerKind::MLA
                                  : LayerKind::GDN);
  }
  bool anyGdn = llvm::is_contained(config.layers, LayerKind::GDN);
  bool anyMla = llvm::is_contained(config.layers, LayerKind::MLA);

  const json::Value *gdnValue = top.raw("gdn");
  if (anyGdn && !gdnValue)
    return fieldError("gdn", "missing (the model has GDN layers)");
  if (gdnValue) {
    const json::Object *object = gdnValue->getAsObject();
    if (!object)
      return fieldError("gdn", "expected an object");
    FieldReader reader(*object, "gdn.");
    GdnSettings settings;
    if (Error e = assign(settings.numHeads, reader.integer("num_heads", 1, kMaxHeads)))
      return std::move(e);
    if (Error e = assign(settings.headDim, reader.integer("head_dim", 1, kMaxHeadDim)))
      return std::move(e);
    if (Error e = assign(settings.convSize, reader.integer("conv_size", 1, kMaxConvSize)))
      return std::move(e);
    if (Error e = reader.rejectUnknown())
      return std::move(e);
    if (settings.numHeads * settings.headDim != config.dModel)
      return fieldError("gdn.head_dim",
                        "num_heads x head_dim must equal d_model (" +
                            llvm::Twine(config.dModel) + "), got " +
                            llvm::Twine(settings.numHeads) + " x " +
                            llvm::Twine(settings.headDim));
    config.gdn = settings;
  }

  const json::Value *mlaValue = top.raw("mla");
  if (anyMla && !mlaValue)
    return fieldError("mla", "missing (the model has MLA layers)");
  if (mlaValue) {
    const json::Object *object = mlaValue->getAsObject();
    if (!object)
      return fieldError("mla", "expected an object");
    FieldReader reader(*object, "mla.");
    MlaSettings settings;
    if (Error e = assign(settings.numHeads, reader.integer("num_heads", 1, kMaxHeads)))
      return std::move(e);
    if (Error e = assign(settings.qLoraRank, reader.integer("q_lora_rank", 0, kMaxDimension)))
      return std::move(e);
    if (Error e =
            assign(settings.kvLoraRank, reader.integer("kv_lora_rank", 1, kMaxDimension)))
      return std::move(e);
    if (Error e = assign(settings.qkNopeHeadDim,
                         reader.integer("qk_nope_head_dim", 1, kMaxHeadDim)))
      return std::move(e);
    if (Error e = assign(settings.qkRopeHeadDim,
                         reader.integer("qk_rope_head_dim", 2, kMaxHeadDim)))
      return std::move(e);
    if (Error e = assign(settings.vHeadDim, reader.integer("v_head_dim", 1, kMaxHeadDim)))
      return std::move(e);
    if (Error e = assign(settings.ropeTheta, reader.number("rope_theta", kMinRopeTheta, kMaxRopeTheta)))
      return std::move(e);
    if (Error e = reader.rejectUnknown())
      return std::move(e);
    if (settings.qkRopeHeadDim % 2 != 0)
      return fieldError("mla.qk_rope_head_dim",
                        "must be even (rotate-half RoPE), got " +
                            llvm::Twine(settings.qkRopeHeadDim));
    config.mla = settings;
  }
  if (Error e = top.rejectUnknown())
    return std::move(e);
  return config;
}

std::map<std::string, llvm::SmallVector<int64_t>>
mlir::gdn::expectedWeightShapes(const ModelConfig &config) {
  std::map<std::string, llvm::SmallVector<int64_t>> shapes;
  int64_t d = config.dModel, f = config.mlpHiddenSize;
  const std::string &model = config.weightPrefix;
  shapes[model + "embed_tokens.weight"] = {config.vocabSize, d};
  shapes[model + "norm.weight"] = {d};
  if (!config.tieEmbeddings)
    shapes["lm_head.weight"] = {config.vocabSize, d};
  for (auto [index, kind] : llvm::enumerate(config.layers)) {
    std::string layer = llvm::formatv("{0}layers.{1}.", model, index).str();
    shapes[layer + "input_layernorm.weight"] = {d};
    shapes[layer + "post_attention_layernorm.weight"] = {d};
    shapes[layer + "mlp.gate_proj.weight"] = {f, d};
    shapes[layer + "mlp.up_proj.weight"] = {f, d};
    shapes[layer + "mlp.down_proj.weight"] = {d, f};
    if (kind == LayerKind::QwenGDN) {
      const QwenGdnSettings &g = *config.qwenGdn;
      int64_t hv = g.numValueHeads, values = hv * g.valueHeadDim;
      int64_t keys = g.numKeyHeads * g.keyHeadDim;
      std::string p = layer + "linear_attn.";
      if (g.groupedProjections) {
        shapes[p + "in_proj_qkvz.weight"] = {2 * keys + 2 * values, d};
        shapes[p + "in_proj_ba.weight"] = {2 * hv, d};
      } else {
        shapes[p + "in_proj_qkv.weight"] = {2 * keys + values, d};
        shapes[p + "in_proj_z.weight"] = {values, d};
        shapes[p + "in_proj_b.weight"] = {hv, d};
        shapes[p + "in_proj_a.weight"] = {hv, d};
      }
      shapes[p + "conv1d.weight"] = {g.convChannels(), 1, g.convSize};
      shapes[p + "dt_bias"] = {hv};
      shapes[p + "A_log"] = {hv};
      shapes[p + "norm.weight"] = {g.valueHeadDim};
      shapes[p + "out_proj.weight"] = {d, values};
      continue;
    }
    if (kind == LayerKind::Attention) {
      const AttentionSettings &a = *config.attention;
      std::string p = layer + "self_attn.";
      shapes[p + "q_proj.weight"] = {2 * a.numHeads * a.headDim, d};
      shapes[p + "k_proj.weight"] = {a.numKvHeads * a.headDim, d};
      shapes[p + "v_proj.weight"] = {a.numKvHeads * a.headDim, d};
      shapes[p + "o_proj.weight"] = {d, a.numHeads * a.headDim};
      shapes[p + "q_norm.weight"] = {a.headDim};
      shapes[p + "k_norm.weight"] = {a.headDim};
      continue;
    }
    if (kind == LayerKind::GDN) {
      const GdnSettings &g = *config.gdn;
      int64_t out = g.numHeads * g.headDim, h = g.numHeads;
      std::string p = layer + "linear_attn.";
      for (StringRef w : {"W_query", "W_key", "W_value", "gate"})
        shapes[p + w.str() + ".weight"] = {out, d};
      shapes[p + "gate.bias"] = {out};
      shapes[p + "out_proj.weight"] = {out, out};
      shapes[p + "out_proj.bias"] = {out};
      for (StringRef w : {"beta", "alpha"}) {
        shapes[p + w.str() + ".weight"] = {h, d};
        shapes[p + w.str() + ".bias"] = {h};
      }
      shapes[p + "log_alpha"] = {h};
      for (StringRef c : {"conv_q", "conv_k", "conv_v"}) {
        shapes[p + c.str() + ".weight"] = {out, 1, g.convSize};
        shapes[p + c.str() + ".bias"] = {out};
      }
      shapes[p + "norm.weight"] = {g.headDim};
      continue;
    }
    const MlaSettings &m = *config.mla;
    int64_t n = m.numHeads, qk = m.qkNopeHeadDim + m.qkRopeHeadDim;
    std::string p = layer + "self_attn.";
    if (m.qLoraRank == 0) {
      shapes[p + "q_proj.weight"] = {n * qk, d};
    } else {
      shapes[p + "q_a_proj.weight"] = {m.qLoraRank, d};
      shapes[p + "q_a_layernorm.weight"] = {m.qLoraRank};
      shapes[p + "q_b_proj.weight"] = {n * qk, m.qLoraRank};
    }
    shapes[p + "kv_a_proj_with_mqa.weight"] = {m.kvLoraRank + m.qkRopeHeadDim,
                                               d};
    shapes[p + "kv_a_layernorm.weight"] = {m.kvLoraRank};
    shapes[p + "kv_b_proj.weight"] = {n * (m.qkNopeHeadDim + m.vHeadDim),
                                      m.kvLoraRank};
    shapes[p + "o_proj.weight"] = {d, n * m.vHeadDim};
  }
  return shapes;
}

std::vector<CacheLayout> mlir::gdn::cacheLayouts(const ModelConfig &config) {
  std::vector<CacheLayout> caches;
  for (LayerKind kind : config.layers) {
    switch (kind) {
    case LayerKind::GDN: {
      const GdnSettings &g = *config.gdn;
      caches.push_back(
          {false, {g.convSize - 1, 3 * g.numHeads * g.headDim}, "conv state"});
      caches.push_back(
          {false, {g.numHeads, g.headDim, g.headDim}, "delta-rule state"});
      break;
    }
    case LayerKind::MLA:
      caches.push_back({true, {0, config.mla->kvLoraRank}, "latent cache"});
      caches.push_back({true, {0, config.mla->qkRopeHeadDim}, "RoPE key cache"});
      break;
    case LayerKind::QwenGDN: {
      const QwenGdnSettings &g = *config.qwenGdn;
      caches.push_back(
          {false, {g.convSize - 1, g.convChannels()}, "conv state"});
      caches.push_back({false,
                        {g.numValueHeads, g.keyHeadDim, g.valueHeadDim},
                        "delta-rule state"});
      break;
    }
    case LayerKind::Attention: {
      const AttentionSettings &a = *config.attention;
      caches.push_back({true, {0, a.numKvHeads, a.headDim}, "key cache"});
      caches.push_back({true, {0, a.numKvHeads, a.headDim}, "value cache"});
      break;
    }
    }
  }
  return caches;
}

const char *mlir::gdn::layerKindName(LayerKind kind) {
  switch (kind) {
  case LayerKind::GDN:
    return "gdn";
  case LayerKind::MLA:
    return "mla";
  case LayerKind::QwenGDN:
    return "qwen_gdn";
  case LayerKind::Attention:
    return "attention";
  }
  return "?";
}
