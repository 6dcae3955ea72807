//===- ModelGraph.cpp - a model description as gdn IR ---------------------===//

#include "gdn/Frontend/ModelGraph.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gdn;

SmallVector<RankedTensorType>
mlir::gdn::modelCacheTypes(MLIRContext *context, const ModelConfig &config) {
  Type f32 = Float32Type::get(context);
  SmallVector<RankedTensorType> types;
  for (const CacheLayout &cache : cacheLayouts(config)) {
    // The batch, and for growing caches the tokens, vary between calls.
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    shape.append(cache.innerShape.begin(), cache.innerShape.end());
    if (cache.growsWithTokens)
      shape[1] = ShapedType::kDynamic;
    types.push_back(RankedTensorType::get(shape, f32));
  }
  return types;
}

/// Builds @name: (ids, [caches,] weights) -> (logits[, caches]).
static void buildForward(OpBuilder &b, const ModelConfig &config, Location loc,
                         StringRef name, bool withCaches,
                         const std::set<std::string> &bf16Weights) {
  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  auto shapes = expectedWeightShapes(config);
  SmallVector<Type> argTypes = {
      RankedTensorType::get({dyn, dyn}, b.getI64Type())};
  SmallVector<RankedTensorType> cacheTypes;
  if (withCaches)
    cacheTypes = modelCacheTypes(b.getContext(), config);
  llvm::append_range(argTypes, cacheTypes);
  std::map<std::string, unsigned> argIndex;
  for (const auto &[name, shape] : shapes) {
    argIndex[name] = argTypes.size();
    Type element = bf16Weights.count(name) ? Type(b.getBF16Type()) : f32;
    argTypes.push_back(RankedTensorType::get(shape, element));
  }
  auto hidden = RankedTensorType::get({dyn, dyn, config.dModel}, f32);
  auto logitsType = RankedTensorType::get({dyn, dyn, config.vocabSize}, f32);
  SmallVector<Type> resultTypes = {logitsType};
  llvm::append_range(resultTypes, cacheTypes);
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, resultTypes));
  Block *body = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  auto weight = [&](const std::string &name) {
    return body->getArgument(argIndex.at(name));
  };
  auto cache = [&](size_t layer, unsigned which) {
    return body->getArgument(1 + 2 * layer + which);
  };
  SmallVector<Value> newCaches;
  // x + y on [B, T, D], through linalg.add into a fresh tensor.
  auto add = [&](Value x, Value y) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    Value init = tensor::EmptyOp::create(b, loc, sizes, f32);
    return linalg::AddOp::create(b, loc, ValueRange{x, y}, ValueRange{init})
        .getResult(0);
  };
  FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.normEps));
  UnitAttr zeroCentered =
      config.zeroCenteredNorms ? b.getUnitAttr() : UnitAttr();
  auto norm = [&](Value x, const std::string &name) {
    auto op =
        RmsNormOp::create(b, loc, hidden, x, weight(name), eps, zeroCentered);
    return op.getY();
  };
  const std::string &model = config.weightPrefix;

  Value x = EmbedOp::create(b, loc, hidden, body->getArgument(0),
                            weight(model + "embed_tokens.weight"));
  for (size_t i = 0; i < config.layers.size(); ++i) {
    std::string layer = llvm::formatv("{0}layers.{1}.", model, i).str();
    Value normed = norm(x, layer + "input_layernorm.weight");
    if (config.layers[i] == LayerKind::QwenGDN) {
      const QwenGdnSettings &g = *config.qwenGdn;
      ProjectionLayout layout = g.groupedProjections
                                    ? ProjectionLayout::grouped
                                    : ProjectionLayout::split;
      SmallVector<Value> weights;
      for (StringRef name : QwenGatedDeltaNetOp::weightNames(layout))
        weights.push_back(weight(layer + "linear_attn." + name.str()));
      auto stateType = RankedTensorType::get(
          {dyn, g.numValueHeads, g.keyHeadDim, g.valueHeadDim}, f32);
      auto convType =
          RankedTensorType::get({dyn, g.convSize - 1, g.convChannels()}, f32);
      auto mixer = QwenGatedDeltaNetOp::create(
          b, loc, TypeRange{hidden, stateType, convType}, normed, weights,
          withCaches ? cache(i, 0) : Value(),
          withCaches ? cache(i, 1) : Value(),
          b.getI64IntegerAttr(g.numKeyHeads),
          b.getI64IntegerAttr(g.numValueHeads),
          b.getI64IntegerAttr(g.keyHeadDim),
          b.getI64IntegerAttr(g.valueHeadDim),
          ProjectionLayoutAttr::get(b.getContext(), layout), eps);
      x = add(x, mixer.getY());
      if (withCaches)
        newCaches.append({mixer.getFinalConvState(), mixer.getFinalState()});
    } else if (config.layers[i] == LayerKind::Attention) {
      const AttentionSettings &a = *config.attention;
      SmallVector<Value> weights;
      for (StringRef name : {"q_proj.weight", "k_proj.weight", "v_proj.weight",
                             "o_proj.weight", "q_norm.weight", "k_norm.weight"})
        weights.push_back(weight(layer + "self_attn." + name.str()));
      auto kvType =
          RankedTensorType::get({dyn, dyn, a.numKvHeads, a.headDim}, f32);
      Value pastKeys = withCaches ? cache(i, 0) : Value();
      Value pastValues = withCaches ? cache(i, 1) : Value();
      auto mixer = GatedAttentionOp::create(
          b, loc, TypeRange{hidden, kvType, kvType}, normed, weights, pastKeys,
          pastValues, b.getI64IntegerAttr(a.numHeads),
          b.getI64IntegerAttr(a.numKvHeads), b.getI64IntegerAttr(a.headDim),
          b.getI64IntegerAttr(a.rotaryDim),
          b.getF32FloatAttr(static_cast<float>(a.ropeTheta)), eps);
      x = add(x, mixer.getY());
      if (withCaches) {
        newCaches.push_back(
            concatAlong(b, loc, {pastKeys, mixer.getKeys()}, 1));
        newCaches.push_back(
            concatAlong(b, loc, {pastValues, mixer.getValues()}, 1));
      }
    } else if (config.layers[i] == LayerKind::MLA) {
      const MlaSettings &m = *config.mla;
      std::string p = layer + "self_attn.";
      SmallVector<Value> weights;
      SmallVector<std::string> names;
      if (m.qLoraRank == 0)
        names.push_back("q_proj.weight");
      else
        names.append(
            {"q_a_proj.weight", "q_a_layernorm.weight", "q_b_proj.weight"});
      names.append({"kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight",
                    "kv_b_proj.weight", "o_proj.weight"});
      for (const std::string &name : names)
        weights.push_back(weight(p + name));
      auto latentType = RankedTensorType::get({dyn, dyn, m.kvLoraRank}, f32);
      auto ropeType = RankedTensorType::get({dyn, dyn, m.qkRopeHeadDim}, f32);
      Value pastLatent = withCaches ? cache(i, 0) : Value();
      Value pastKRope = withCaches ? cache(i, 1) : Value();
      auto mixer = MlaOp::create(
          b, loc, TypeRange{hidden, latentType, ropeType}, normed, weights,
          pastLatent, pastKRope, b.getI64IntegerAttr(m.numHeads),
          b.getI64IntegerAttr(m.qLoraRank), b.getI64IntegerAttr(m.kvLoraRank),
          b.getI64IntegerAttr(m.qkNopeHeadDim),
          b.getI64IntegerAttr(m.qkRopeHeadDim), b.getI64IntegerAttr(m.vHeadDim),
          b.getF32FloatAttr(static_cast<float>(m.ropeTheta)), eps);
      x = add(x, mixer.getY());
      if (withCaches) {
        newCaches.push_back(
            concatAlong(b, loc, {pastLatent, mixer.getLatent()}, 1));
        newCaches.push_back(
            concatAlong(b, loc, {pastKRope, mixer.getKRope()}, 1));
      }
    } else {
      const GdnSettings &g = *config.gdn;
      std::string p = layer + "linear_attn.";
      SmallVector<Value> weights;
      for (StringRef w :
           {"W_query.weight", "W_key.weight", "W_value.weight",
            "out_proj.weight", "out_proj.bias", "beta.weight", "beta.bias",
            "alpha.weight", "alpha.bias", "gate.weight", "gate.bias",
            "log_alpha", "conv_k.weight", "conv_k.bias", "conv_v.weight",
            "conv_v.bias", "conv_q.weight", "conv_q.bias", "norm.weight"})
        weights.push_back(weight(p + w.str()));
      auto stateType =
          RankedTensorType::get({dyn, g.numHeads, g.headDim, g.headDim}, f32);
      auto convType = RankedTensorType::get(
          {dyn, g.convSize - 1, 3 * g.numHeads * g.headDim}, f32);
      // The layer's own RMSNorm keeps the design document's eps (1e-6);
      // norm_eps is for the block norms.
      auto mixer = GatedDeltaNetOp::create(
          b, loc, TypeRange{hidden, stateType, convType}, normed, weights,
          withCaches ? cache(i, 0) : Value(),
          withCaches ? cache(i, 1) : Value(), b.getI64IntegerAttr(g.numHeads),
          b.getF32FloatAttr(1.0e-6f));
      x = add(x, mixer.getY());
      if (withCaches)
        newCaches.append({mixer.getFinalConvState(), mixer.getFinalState()});
    }
    Value mlpIn = norm(x, layer + "post_attention_layernorm.weight");
    Value mlp = SwiGluMlpOp::create(b, loc, hidden, mlpIn,
                                    weight(layer + "mlp.gate_proj.weight"),
                                    weight(layer + "mlp.up_proj.weight"),
                                    weight(layer + "mlp.down_proj.weight"));
    x = add(x, mlp);
  }
  Value last = norm(x, model + "norm.weight");
  Value head = weight(config.tieEmbeddings ? model + "embed_tokens.weight"
                                           : "lm_head.weight");
  Value logits = LmHeadOp::create(b, loc, logitsType, last, head);
  SmallVector<Value> results = {logits};
  llvm::append_range(results, newCaches);
  func::ReturnOp::create(b, loc, results);
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::gdn::buildModelPrefill(MLIRContext *context, const ModelConfig &config,
                             Location loc,
                             const std::set<std::string> &bf16Weights) {
  OpBuilder b(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  buildForward(b, config, loc, "gdn_forward_prefill", /*withCaches=*/false,
               bf16Weights);
  buildForward(b, config, loc, "gdn_forward_step", /*withCaches=*/true,
               bf16Weights);
  return module;
}

void mlir::gdn::embedModelStrings(ModuleOp module, StringRef description,
                                  StringRef defaultWeights,
                                  const std::set<std::string> &bf16Weights,
                                  StringRef tokenizerPath) {
  MLIRContext *context = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto addString = [&](StringRef name, StringRef text) {
    std::string value = text.str();
    value.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(IntegerType::get(context, 8),
                                         value.size());
    LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                           LLVM::Linkage::External, name,
                           b.getStringAttr(value));
  };
  addString("_gdn_model_description", description);
  addString("_gdn_model_default_weights", defaultWeights);
  std::string names;
  for (const std::string &name : bf16Weights)
    names += name + "\n";
  addString("_gdn_model_bf16_weights", names);
  addString("_gdn_model_tokenizer", tokenizerPath);
}
