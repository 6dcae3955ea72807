//===- HuggingFaceConfig.cpp - config.json of Qwen GDN hybrids ------------===//
//
// Reads the text model of a Hugging Face checkpoint's config.json for the
// model types gdn compiles (docs/huggingface.md): qwen3_5_text, qwen3_5 (the
// vision-language wrapper, whose text model is its text_config) and dense
// qwen3_next. Fields that do not change the text model's computation
// (token ids, dtype, transformers_version, ...) are not read; every field
// that does is checked, and values gdn does not implement are refused with
// the field named.
//
//===----------------------------------------------------------------------===//

#include "HuggingFaceConfig.h"
#include "FieldReader.h"

#include <cmath>
#include <set>

using namespace mlir::gdn;

namespace {
/// Optional fields with the defaults transformers gives them.
class OptionalFields {
public:
  OptionalFields(FieldReader &reader) : reader(reader) {}

  llvm::Expected<int64_t> integer(StringRef field, int64_t minimum,
                                  int64_t maximum, int64_t otherwise) {
    if (!reader.has(field) || isNull(field))
      return otherwise;
    return reader.integer(field, minimum, maximum);
  }
  llvm::Expected<double> number(StringRef field, double minimum,
                                double maximum, double otherwise) {
    if (!reader.has(field) || isNull(field))
      return otherwise;
    return reader.number(field, minimum, maximum);
  }
  llvm::Expected<bool> boolean(StringRef field, bool otherwise) {
    if (!reader.has(field) || isNull(field))
      return otherwise;
    return reader.boolean(field);
  }
  /// A string that must be one of `options` when present.
  Error choice(StringRef field, llvm::ArrayRef<StringRef> options) {
    if (!reader.has(field) || isNull(field))
      return Error::success();
    llvm::Expected<std::string> value = reader.choice(field, options);
    return value ? Error::success() : value.takeError();
  }

private:
  bool isNull(StringRef field) {
    const json::Value *value = reader.raw(field);
    return value && value->kind() == json::Value::Null;
  }
  FieldReader &reader;
};

constexpr StringRef kModelTypes[] = {"qwen3_5_text", "qwen3_5", "qwen3_next"};
} // namespace

/// The text model's fields of `object` (the whole config, or qwen3_5's
/// text_config); `prefix` names them in errors.
static Error readTextModel(const json::Object &object, std::string prefix,
                           bool next, ModelConfig &config) {
  FieldReader reader(object, prefix);
  OptionalFields optional(reader);
  auto field = [&](StringRef name) { return reader.name(name); };
  if (Error e = assign(config.vocabSize,
                       reader.integer("vocab_size", 1, kMaxVocabulary)))
    return e;
  if (Error e = assign(config.dModel,
                       reader.integer("hidden_size", 1, kMaxDimension)))
    return e;
  if (Error e = assign(config.numLayers,
                       reader.integer("num_hidden_layers", 1, kMaxLayers)))
    return e;
  if (Error e = assign(config.mlpHiddenSize,
                       reader.integer("intermediate_size", 1, kMaxDimension)))
    return e;
  if (Error e = assign(config.normEps, optional.number("rms_norm_eps",
                                                       kMinNormEps,
                                                       kMaxNormEps, 1e-6)))
    return e;
  // The context the positions were trained for; a checkpoint's own limit.
  if (Error e = assign(config.maxContext,
                       optional.integer("max_position_embeddings", 1,
                                        int64_t(1) << 40, 32768)))
    return e;
  config.maxContext = std::min(config.maxContext, kMaxContext);
  if (Error e = optional.choice("hidden_act", {"silu"}))
    return e;
  bool attentionBias = false;
  if (Error e = assign(attentionBias,
                       optional.boolean("attention_bias", false)))
    return e;
  if (attentionBias)
    return fieldError(field("attention_bias"),
                      "attention biases are not supported (expected false)");

  // The layer pattern: an explicit list, or a full-attention layer every
  // full_attention_interval layers (the last of each group).
  if (const json::Value *types = reader.raw("layer_types");
      types && types->kind() != json::Value::Null) {
    const json::Array *list = types->getAsArray();
    if (!list || static_cast<int64_t>(list->size()) != config.numLayers)
      return fieldError(field("layer_types"),
                        "expected a list of " + llvm::Twine(config.numLayers) +
                            " entries \"linear_attention\"/\"full_attention\" "
                            "(num_hidden_layers), got " +
                            FieldReader::describe(*types));
    for (auto [index, entry] : llvm::enumerate(*list)) {
      std::optional<StringRef> kind = entry.getAsString();
      if (!kind || (*kind != "linear_attention" && *kind != "full_attention"))
        return fieldError(field("layer_types") + "[" + llvm::Twine(index) +
                              "]",
                          "expected \"linear_attention\" or "
                          "\"full_attention\", got " +
                              FieldReader::describe(entry));
      config.layers.push_back(*kind == "linear_attention" ? LayerKind::QwenGDN
                                                          : LayerKind::Attention);
    }
  } else {
    int64_t interval = 0;
    if (Error e = assign(interval,
                         optional.integer("full_attention_interval", 1,
                                          kMaxLayers, 4)))
      return e;
    for (int64_t i = 0; i < config.numLayers; ++i)
      config.layers.push_back((i + 1) % interval == 0 ? LayerKind::Attention
                                                      : LayerKind::QwenGDN);
  }

  if (next) {
    // Qwen3-Next's MLP is a mixture of experts on layer i unless i is in
    // mlp_only_layers, num_experts is 0 or (i + 1) is not a multiple of
    // decoder_sparse_step; transformers' default is 512 experts everywhere.
    int64_t experts = 0, step = 0;
    if (Error e = assign(experts, optional.integer("num_experts", 0,
                                                   int64_t(1) << 20, 512)))
      return e;
    if (Error e = assign(step, optional.integer("decoder_sparse_step", 1,
                                                kMaxLayers, 1)))
      return e;
    std::set<int64_t> dense;
    if (const json::Value *only = reader.raw("mlp_only_layers");
        only && only->kind() != json::Value::Null) {
      const json::Array *list = only->getAsArray();
      if (!list)
        return fieldError(field("mlp_only_layers"),
                          "expected a list of layer indices, got " +
                              FieldReader::describe(*only));
      for (const json::Value &entry : *list) {
        std::optional<int64_t> index = entry.getAsInteger();
        if (!index)
          return fieldError(field("mlp_only_layers"),
                            "expected layer indices, got " +
                                FieldReader::describe(entry));
        dense.insert(*index);
      }
    }
    for (int64_t i = 0; i < config.numLayers; ++i)
      if (experts > 0 && !dense.count(i) && (i + 1) % step == 0)
        return fieldError(
            field("num_experts"),
            "layer " + llvm::Twine(i) + " is a mixture of experts (" +
                llvm::Twine(experts) +
                " experts); only dense Qwen3-Next models are supported "
                "(num_experts 0, or every layer in mlp_only_layers)");
    for (StringRef ignored : {"num_experts_per_tok", "moe_intermediate_size",
                              "shared_expert_intermediate_size",
                              "norm_topk_prob", "router_aux_loss_coef",
                              "output_router_logits"})
      (void)reader.raw(ignored);
  }

  bool anyGdn = llvm::is_contained(config.layers, LayerKind::QwenGDN);
  bool anyAttention = llvm::is_contained(config.layers, LayerKind::Attention);
  if (anyGdn) {
    QwenGdnSettings g;
    g.groupedProjections = next;
    if (Error e = assign(g.numKeyHeads, reader.integer("linear_num_key_heads",
                                                       1, kMaxHeads)))
      return e;
    if (Error e = assign(g.numValueHeads,
                         reader.integer("linear_num_value_heads", 1,
                                        kMaxHeads)))
      return e;
    if (Error e = assign(g.keyHeadDim, reader.integer("linear_key_head_dim",
                                                      1, kMaxHeadDim)))
      return e;
    if (Error e = assign(g.valueHeadDim,
                         reader.integer("linear_value_head_dim", 1,
                                        kMaxHeadDim)))
      return e;
    if (Error e = assign(g.convSize, reader.integer("linear_conv_kernel_dim",
                                                    1, kMaxConvSize)))
      return e;
    if (g.numValueHeads % g.numKeyHeads != 0)
      return fieldError(field("linear_num_value_heads"),
                        "must be a multiple of linear_num_key_heads (" +
                            llvm::Twine(g.numKeyHeads) + "), got " +
                            llvm::Twine(g.numValueHeads));
    config.qwenGdn = g;
  }
  if (anyAttention) {
    AttentionSettings a;
    if (Error e = assign(a.numHeads, reader.integer("num_attention_heads", 1,
                                                    kMaxHeads)))
      return e;
    if (Error e = assign(a.numKvHeads,
                         optional.integer("num_key_value_heads", 1, kMaxHeads,
                                          a.numHeads)))
      return e;
    if (Error e = assign(a.headDim,
                         optional.integer("head_dim", 1, kMaxHeadDim,
                                          config.dModel / a.numHeads)))
      return e;
    if (a.numHeads % a.numKvHeads != 0)
      return fieldError(field("num_key_value_heads"),
                        "num_attention_heads (" + llvm::Twine(a.numHeads) +
                            ") must be a multiple of it, got " +
                            llvm::Twine(a.numKvHeads));
    // transformers 5 keeps rope_theta and partial_rotary_factor in
    // rope_parameters; older files have them at the top level.
    double theta = 10000.0, factor = 0.25;
    if (Error e = assign(theta, optional.number("rope_theta", kMinRopeTheta,
                                                kMaxRopeTheta, theta)))
      return e;
    if (Error e = assign(factor, optional.number("partial_rotary_factor", 0.0,
                                                 1.0, factor)))
      return e;
    if (const json::Value *rope = reader.raw("rope_parameters");
        rope && rope->kind() != json::Value::Null) {
      const json::Object *parameters = rope->getAsObject();
      if (!parameters)
        return fieldError(field("rope_parameters"), "expected an object");
      FieldReader ropeReader(*parameters, field("rope_parameters") + ".");
      OptionalFields ropeOptional(ropeReader);
      if (Error e = ropeOptional.choice("rope_type", {"default"}))
        return e;
      if (Error e = assign(theta, ropeOptional.number("rope_theta",
                                                      kMinRopeTheta,
                                                      kMaxRopeTheta, theta)))
        return e;
      if (Error e = assign(factor, ropeOptional.number("partial_rotary_factor",
                                                       0.0, 1.0, factor)))
        return e;
    }
    if (const json::Value *scaling = reader.raw("rope_scaling");
        scaling && scaling->kind() != json::Value::Null)
      return fieldError(field("rope_scaling"),
                        "RoPE scaling is not supported (expected null), got " +
                            FieldReader::describe(*scaling));
    a.ropeTheta = theta;
    a.rotaryDim = static_cast<int64_t>(a.headDim * factor);
    if (a.rotaryDim % 2 != 0)
      return fieldError(field("rope_parameters.partial_rotary_factor"),
                        "head_dim x partial_rotary_factor = " +
                            llvm::Twine(a.rotaryDim) +
                            " must be even (rotate-half RoPE)");
    config.attention = a;
  }
  return Error::success();
}

bool mlir::gdn::isHuggingFaceConfig(const json::Object &root) {
  return root.get("model_type") != nullptr;
}

llvm::Expected<ModelConfig>
mlir::gdn::parseHuggingFaceConfig(const json::Object &root) {
  FieldReader top(root, "");
  llvm::Expected<std::string> modelType =
      top.choice("model_type", kModelTypes);
  if (!modelType)
    return modelType.takeError();
  ModelConfig config;
  config.modelType = *modelType;
  config.zeroCenteredNorms = true;
  config.byteTokenizer = false;
  config.ignoredWeightPrefixes = {"mtp."};
  const json::Object *text = &root;
  std::string prefix;
  if (config.modelType == "qwen3_5") {
    const json::Value *nested = top.raw("text_config");
    text = nested ? nested->getAsObject() : nullptr;
    if (!text)
      return fieldError("text_config", "missing or not an object (the "
                                       "qwen3_5 wrapper's text model)");
    prefix = "text_config.";
    FieldReader inner(*text, prefix);
    if (inner.has("model_type")) {
      llvm::Expected<std::string> innerType =
          inner.choice("model_type", {"qwen3_5_text"});
      if (!innerType)
        return innerType.takeError();
    }
    config.weightPrefix = "model.language_model.";
    config.ignoredWeightPrefixes.push_back("model.visual.");
  }
  if (Error e = readTextModel(*text, prefix,
                              config.modelType == "qwen3_next", config))
    return std::move(e);

  // Tied embeddings: the wrapper's own field, or its text model's; the two
  // may not disagree.
  FieldReader textReader(*text, prefix);
  OptionalFields textOptional(textReader);
  bool tied = false;
  if (Error e = assign(tied, textOptional.boolean("tie_word_embeddings",
                                                  false)))
    return std::move(e);
  if (text != &root && top.has("tie_word_embeddings")) {
    OptionalFields topOptional(top);
    bool outer = false;
    if (Error e = assign(outer, topOptional.boolean("tie_word_embeddings",
                                                    tied)))
      return std::move(e);
    if (textReader.has("tie_word_embeddings") && outer != tied)
      return fieldError("tie_word_embeddings",
                        "is " + llvm::Twine(outer ? "true" : "false") +
                            " but text_config.tie_word_embeddings is " +
                            (tied ? "true" : "false"));
    tied = outer;
  }
  config.tieEmbeddings = tied;
  return config;
}
