//===- ModelGraph.cpp - a model description as gdn IR ---------------------===//

#include "gdn/Frontend/ModelGraph.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include <map>

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

/// The weight-name prefix of layer `index` ("model.layers.3.").
static std::string layerPrefix(const ModelConfig &config, size_t index) {
  return llvm::formatv("{0}layers.{1}.", config.weightPrefix, index).str();
}

namespace {
/// What one layer's IR needs from the function it is built in.
struct LayerContext {
  const ModelConfig &config;
  Location loc;
  /// The layer's weights by full name ("layers.3.mlp.up_proj.weight").
  std::function<Value(const std::string &)> weight;
  /// The layer's two caches, or none for the prefill from scratch. Caches
  /// that grow with the tokens come with room for the new tokens, which the
  /// layer writes in place.
  Value cache0, cache1;
  /// Where the layer writes its output and its two new fixed-size caches:
  /// buffers its caller owns, so that the layer function returns nothing it
  /// allocated.
  Value xDest, cacheDest0, cacheDest1;
};
} // namespace

/// Returns `x` after layer `index` (pre-norm mixer and SwiGLU MLP, each with
/// its residual add); with caches, appends the layer's two new caches to
/// `newCaches`.
static Value buildLayer(OpBuilder &b, const LayerContext &c, size_t index,
                        Value x, SmallVectorImpl<Value> &newCaches) {
  const ModelConfig &config = c.config;
  Location loc = c.loc;
  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  bool withCaches = static_cast<bool>(c.cache0);
  auto hidden = RankedTensorType::get({dyn, dyn, config.dModel}, f32);
  // x + y on [B, T, D], through linalg.add into `init` or a fresh tensor.
  auto add = [&](Value x, Value y, Value init = Value()) {
    if (!init)
      init = createEmptyLike(b, loc, x, f32);
    return linalg::AddOp::create(b, loc, ValueRange{x, y}, ValueRange{init})
        .getResult(0);
  };
  // Into the caller's destination where there is one.
  auto materialize = [&](Value value, Value dest) -> Value {
    if (!dest)
      return value;
    return bufferization::MaterializeInDestinationOp::create(b, loc, value,
                                                             dest)
        .getResult();
  };
  FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.normEps));
  UnitAttr zeroCentered =
      config.zeroCenteredNorms ? b.getUnitAttr() : UnitAttr();
  auto norm = [&](Value x, const std::string &name) {
    auto op =
        RmsNormOp::create(b, loc, hidden, x, c.weight(name), eps, zeroCentered);
    return op.getY();
  };
  const auto &weight = c.weight;

  std::string layer = layerPrefix(config, index);
  Value normed = norm(x, layer + "input_layernorm.weight");
  LayerKind kind = config.layers[index];
  if (kind == LayerKind::QwenGDN) {
    const QwenGdnSettings &g = *config.qwenGdn;
    ProjectionLayout layout = g.groupedProjections ? ProjectionLayout::grouped
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
        c.cache0, c.cache1, b.getI64IntegerAttr(g.numKeyHeads),
        b.getI64IntegerAttr(g.numValueHeads), b.getI64IntegerAttr(g.keyHeadDim),
        b.getI64IntegerAttr(g.valueHeadDim),
        ProjectionLayoutAttr::get(b.getContext(), layout), eps);
    x = add(x, mixer.getY());
    if (withCaches)
      newCaches.append({materialize(mixer.getFinalConvState(), c.cacheDest0),
                        materialize(mixer.getFinalState(), c.cacheDest1)});
  } else if (kind == LayerKind::Attention) {
    const AttentionSettings &a = *config.attention;
    SmallVector<Value> weights;
    for (StringRef name : {"q_proj.weight", "k_proj.weight", "v_proj.weight",
                           "o_proj.weight", "q_norm.weight", "k_norm.weight"})
      weights.push_back(weight(layer + "self_attn." + name.str()));
    auto kvType =
        RankedTensorType::get({dyn, dyn, a.numKvHeads, a.headDim}, f32);
    auto mixer = GatedAttentionOp::create(
        b, loc, TypeRange{hidden, kvType, kvType}, normed, weights, c.cache0,
        c.cache1, b.getI64IntegerAttr(a.numHeads),
        b.getI64IntegerAttr(a.numKvHeads), b.getI64IntegerAttr(a.headDim),
        b.getI64IntegerAttr(a.rotaryDim),
        b.getF32FloatAttr(static_cast<float>(a.ropeTheta)), eps,
        /*in_place_cache=*/UnitAttr(), /*attention_block=*/IntegerAttr());
    x = add(x, mixer.getY());
    if (withCaches) {
      mixer.setInPlaceCache(true);
      newCaches.append({mixer.getKeys(), mixer.getValues()});
    }
  } else if (kind == LayerKind::MLA) {
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
    auto mixer = MlaOp::create(
        b, loc, TypeRange{hidden, latentType, ropeType}, normed, weights,
        c.cache0, c.cache1, b.getI64IntegerAttr(m.numHeads),
        b.getI64IntegerAttr(m.qLoraRank), b.getI64IntegerAttr(m.kvLoraRank),
        b.getI64IntegerAttr(m.qkNopeHeadDim),
        b.getI64IntegerAttr(m.qkRopeHeadDim), b.getI64IntegerAttr(m.vHeadDim),
        b.getF32FloatAttr(static_cast<float>(m.ropeTheta)), eps,
        /*absorbed=*/UnitAttr(), /*in_place_cache=*/UnitAttr(),
        /*attention_block=*/IntegerAttr(), /*key_split=*/IntegerAttr());
    x = add(x, mixer.getY());
    if (withCaches) {
      mixer.setInPlaceCache(true);
      newCaches.append({mixer.getLatent(), mixer.getKRope()});
    }
  } else {
    const GdnSettings &g = *config.gdn;
    std::string p = layer + "linear_attn.";
    SmallVector<Value> weights;
    for (StringRef w :
         {"W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight",
          "out_proj.bias", "beta.weight", "beta.bias", "alpha.weight",
          "alpha.bias", "gate.weight", "gate.bias", "log_alpha",
          "conv_k.weight", "conv_k.bias", "conv_v.weight", "conv_v.bias",
          "conv_q.weight", "conv_q.bias", "norm.weight"})
      weights.push_back(weight(p + w.str()));
    auto stateType =
        RankedTensorType::get({dyn, g.numHeads, g.headDim, g.headDim}, f32);
    auto convType = RankedTensorType::get(
        {dyn, g.convSize - 1, 3 * g.numHeads * g.headDim}, f32);
    // The layer's own RMSNorm keeps the design document's eps (1e-6);
    // norm_eps is for the block norms.
    auto mixer = GatedDeltaNetOp::create(
        b, loc, TypeRange{hidden, stateType, convType}, normed, weights,
        c.cache0, c.cache1, b.getI64IntegerAttr(g.numHeads),
        b.getF32FloatAttr(1.0e-6f));
    x = add(x, mixer.getY());
    if (withCaches)
      newCaches.append({materialize(mixer.getFinalConvState(), c.cacheDest0),
                        materialize(mixer.getFinalState(), c.cacheDest1)});
  }
  Value mlpIn = norm(x, layer + "post_attention_layernorm.weight");
  Value mlp = SwiGluMlpOp::create(b, loc, hidden, mlpIn,
                                  weight(layer + "mlp.gate_proj.weight"),
                                  weight(layer + "mlp.up_proj.weight"),
                                  weight(layer + "mlp.down_proj.weight"));
  return add(x, mlp, c.xDest);
}

/// Marks argument `arg` of `func`, a cache that grows with the tokens, as
/// written in place: the caller's buffer, with room for the new tokens, and
/// with any distance between the sequences of the batch (a runtime keeps
/// room for more tokens than one step sees).
static void markInPlace(func::FuncOp func, unsigned arg) {
  auto type = cast<RankedTensorType>(func.getArgumentTypes()[arg]);
  int64_t rank = type.getRank();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t i = rank - 2; i >= 1; --i)
    strides[i] = strides[i + 1] * type.getDimSize(i + 1);
  strides[0] = ShapedType::kDynamic;
  MLIRContext *context = func.getContext();
  func.setArgAttr(arg,
                  bufferization::BufferizationDialect::kBufferLayoutAttrName,
                  StridedLayoutAttr::get(context, 0, strides));
  // Writable: gdn-read-only-arguments keeps the public step's marked ones
  // so, and private functions' arguments are writable anyway.
  func.setArgAttr(arg, "gdn.in_place", UnitAttr::get(context));
}

/// The weights of layer `index`, (name, type) in the sorted-name order of the
/// function arguments.
static SmallVector<std::pair<std::string, Type>>
layerWeights(const ModelConfig &config, size_t index,
             ArrayRef<std::pair<std::string, Type>> allWeights) {
  std::string prefix = layerPrefix(config, index);
  SmallVector<std::pair<std::string, Type>> weights;
  for (const auto &[name, type] : allWeights)
    if (StringRef(name).starts_with(prefix))
      weights.push_back({name, type});
  return weights;
}

/// Layers of the same kind whose weights have the same types share one
/// function: the key says what the function's code depends on. (A layer's
/// settings, heads and dimensions, are the model's, one set per kind.)
static std::string layerKey(const ModelConfig &config, size_t index,
                            ArrayRef<std::pair<std::string, Type>> weights) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << layerKindName(config.layers[index]);
  size_t prefixSize = layerPrefix(config, index).size();
  for (const auto &[name, type] : weights)
    os << " " << StringRef(name).drop_front(prefixSize) << ":" << type;
  return key;
}

/// Builds @name: (ids, [caches,] weights[, logit rows]) -> (logits[,
/// caches]); the step (with caches) returns the logits of the positions in
/// its logit rows. A cache
/// that grows with the tokens (MLA latents and RoPE keys, attention keys
/// and values) comes in with room for this call's tokens after the cached
/// ones, and the step writes them in place (markInPlace) rather than
/// returning it; the fixed-size ones (GDN states) come in and go out as
/// values. With
/// `layerFunctions`, each layer is a call of a private function
/// @<name>_layer<i>, shared by the layers that are identical up to their
/// weights (listed in its `gdn.layers`): the code generators then see every
/// distinct layer once, however deep the model is.
static void buildForward(OpBuilder &b, const ModelConfig &config, Location loc,
                         StringRef name, bool withCaches,
                         const std::set<std::string> &bf16Weights,
                         bool layerFunctions) {
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
  SmallVector<std::pair<std::string, Type>> allWeights;
  for (const auto &[name, shape] : shapes) {
    argIndex[name] = argTypes.size();
    Type element = bf16Weights.count(name) ? Type(b.getBF16Type()) : f32;
    argTypes.push_back(RankedTensorType::get(shape, element));
    allWeights.push_back({name, argTypes.back()});
  }
  // The step returns the logits of the new tokens at these positions
  // (i64 [L], 0..T-1): all of them, or only the last where the caller
  // samples from it, which spares a prompt's LM head (its largest
  // product) and norm for every other position.
  std::optional<unsigned> logitRowsArg;
  if (withCaches) {
    logitRowsArg = argTypes.size();
    argTypes.push_back(RankedTensorType::get({dyn}, b.getI64Type()));
  }
  auto hidden = RankedTensorType::get({dyn, dyn, config.dModel}, f32);
  auto logitsType = RankedTensorType::get({dyn, dyn, config.vocabSize}, f32);
  SmallVector<Type> resultTypes = {logitsType};
  // The growing caches are written in place, not returned: a result would
  // be a buffer of the identity layout, a copy of the whole cache.
  std::vector<CacheLayout> layouts = cacheLayouts(config);
  for (auto [type, layout] : llvm::zip(cacheTypes, layouts))
    if (!layout.growsWithTokens)
      resultTypes.push_back(type);
  OpBuilder::InsertionGuard guard(b);
  Block *moduleBody = b.getInsertionBlock();
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, resultTypes));
  Block *body = func.addEntryBlock();

  auto growing = [&](size_t layer) {
    return withCaches && layouts[2 * layer].growsWithTokens;
  };
  if (withCaches)
    for (size_t i = 0; i < layouts.size(); ++i)
      if (layouts[i].growsWithTokens)
        markInPlace(func, 1 + i);

  // One private function per distinct layer, before @name.
  std::map<std::string, func::FuncOp> functionOf;
  std::map<std::string, SmallVector<int64_t>> layersOf;
  auto layerFunction = [&](size_t index,
                           ArrayRef<std::pair<std::string, Type>> weights) {
    std::string key = layerKey(config, index, weights);
    layersOf[key].push_back(index);
    auto [it, inserted] = functionOf.try_emplace(key);
    if (!inserted)
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(moduleBody, Block::iterator(func));
    // (x, [caches,] weights, x destination[, cache destinations]).
    SmallVector<Type> layerArgs = {hidden};
    SmallVector<Type> layerCacheTypes;
    if (withCaches)
      layerCacheTypes = {cacheTypes[2 * index], cacheTypes[2 * index + 1]};
    llvm::append_range(layerArgs, layerCacheTypes);
    for (const auto &weight : weights)
      layerArgs.push_back(weight.second);
    layerArgs.push_back(hidden);
    if (!growing(index))
      llvm::append_range(layerArgs, layerCacheTypes);
    auto layerFunc = func::FuncOp::create(
        b, loc, llvm::formatv("{0}_layer{1}", name, index).str(),
        b.getFunctionType(layerArgs, {}));
    layerFunc.setPrivate();
    if (growing(index))
      for (unsigned arg : {1, 2})
        markInPlace(layerFunc, arg);
    Block *layerBody = layerFunc.addEntryBlock();
    b.setInsertionPointToStart(layerBody);
    auto arg = [&](size_t i) -> Value { return layerBody->getArgument(i); };
    unsigned firstWeight = 1 + layerCacheTypes.size();
    unsigned firstDest = firstWeight + weights.size();
    std::map<std::string, Value> weightArgs;
    for (auto [i, weight] : llvm::enumerate(weights))
      weightArgs[weight.first] = arg(firstWeight + i);
    LayerContext context{
        config,
        loc,
        [&](const std::string &name) { return weightArgs.at(name); },
        withCaches ? arg(1) : Value(),
        withCaches ? arg(2) : Value(),
        arg(firstDest),
        withCaches && !growing(index) ? arg(firstDest + 1) : Value(),
        withCaches && !growing(index) ? arg(firstDest + 2) : Value()};
    SmallVector<Value> layerCaches;
    Value y = buildLayer(b, context, index, arg(0), layerCaches);
    SmallVector<Value> results = {y};
    llvm::append_range(results, layerCaches);
    func::ReturnOp::create(b, loc, results);
    layerFunc.setType(
        b.getFunctionType(layerArgs, ValueRange(results).getTypes()));
    it->second = layerFunc;
    return layerFunc;
  };

  b.setInsertionPointToStart(body);
  auto weight = [&](const std::string &name) {
    return body->getArgument(argIndex.at(name));
  };
  FloatAttr eps = b.getF32FloatAttr(static_cast<float>(config.normEps));
  UnitAttr zeroCentered =
      config.zeroCenteredNorms ? b.getUnitAttr() : UnitAttr();
  const std::string &model = config.weightPrefix;

  Value x = EmbedOp::create(b, loc, hidden, body->getArgument(0),
                            weight(model + "embed_tokens.weight"));
  SmallVector<Value> newCaches;
  for (size_t i = 0; i < config.layers.size(); ++i) {
    SmallVector<Value> caches;
    if (withCaches)
      caches = {body->getArgument(1 + 2 * i), body->getArgument(2 + 2 * i)};
    if (!layerFunctions) {
      LayerContext context{config,
                           loc,
                           weight,
                           withCaches ? caches[0] : Value(),
                           withCaches ? caches[1] : Value(),
                           {},
                           {},
                           {}};
      x = buildLayer(b, context, i, x, newCaches);
      continue;
    }
    auto weights = layerWeights(config, i, allWeights);
    func::FuncOp layer = layerFunction(i, weights);
    SmallVector<Value> operands = {x};
    llvm::append_range(operands, caches);
    for (const auto &weight : weights)
      operands.push_back(body->getArgument(argIndex.at(weight.first)));
    // The destinations: x's shape and the fixed-size caches' own shapes
    // (caches that grow are written in place).
    operands.push_back(createEmptyLike(b, loc, x, f32));
    if (!growing(i))
      for (Value cache : caches)
        operands.push_back(createEmptyLike(b, loc, cache, f32));
    auto call = func::CallOp::create(b, loc, layer, operands);
    x = call.getResult(0);
    llvm::append_range(newCaches, call.getResults().drop_front());
  }
  for (auto &[key, function] : functionOf)
    function->setAttr("gdn.layers", b.getDenseI64ArrayAttr(layersOf[key]));

  if (logitRowsArg) {
    // x[b, rows[l], :] for the rows whose logits are returned.
    Value rows = body->getArgument(*logitRowsArg);
    Value hiddenRows = x;
    SmallVector<OpFoldResult> sizes = {tensor::getMixedSizes(b, loc, x)[0],
                                       tensor::getMixedSizes(b, loc, rows)[0],
                                       b.getIndexAttr(config.dModel)};
    AffineMap byRow =
        AffineMap::get(3, 0, {b.getAffineDimExpr(1)}, b.getContext());
    x = buildElementwise(
        b, loc, rows, createEmpty(b, loc, sizes, f32), byRow,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value row =
              arith::IndexCastOp::create(nb, nl, nb.getIndexType(), args[0]);
          Value sequence = linalg::IndexOp::create(nb, nl, 0);
          Value column = linalg::IndexOp::create(nb, nl, 2);
          return tensor::ExtractOp::create(nb, nl, hiddenRows,
                                           ValueRange{sequence, row, column})
              .getResult();
        });
    x = tensor::CastOp::create(b, loc, hidden, x);
  }
  Value last =
      RmsNormOp::create(b, loc, hidden, x, weight(model + "norm.weight"), eps,
                        zeroCentered)
          .getY();
  Value head = weight(config.tieEmbeddings ? model + "embed_tokens.weight"
                                           : "lm_head.weight");
  Value logits = LmHeadOp::create(b, loc, logitsType, last, head);
  SmallVector<Value> results = {logits};
  for (auto [cache, layout] : llvm::zip_equal(newCaches, layouts))
    if (!layout.growsWithTokens)
      results.push_back(cache);
  func::ReturnOp::create(b, loc, results);
}

FailureOr<OwningOpRef<ModuleOp>> mlir::gdn::buildModelPrefill(
    MLIRContext *context, const ModelConfig &config, Location loc,
    const std::set<std::string> &bf16Weights, const ModelFunctions &functions) {
  context->loadDialect<affine::AffineDialect,
                       bufferization::BufferizationDialect>();
  OpBuilder b(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  if (functions.withPrefill)
    buildForward(b, config, loc, "gdn_forward_prefill", /*withCaches=*/false,
                 bf16Weights, functions.layerFunctions);
  buildForward(b, config, loc, "gdn_forward_step", /*withCaches=*/true,
               bf16Weights, functions.layerFunctions);
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
    auto type =
        LLVM::LLVMArrayType::get(IntegerType::get(context, 8), value.size());
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
