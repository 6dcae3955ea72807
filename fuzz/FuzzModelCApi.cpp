//===- FuzzModelCApi.cpp - libFuzzer target: a compiled model's C API -----===//
//
// Reads the input as a program of gdn_model.h calls on a small compiled
// hybrid model (fuzz/c_api/model.json, compiled by gdn-compile at build
// time; its runtime is compiled into this target with the sanitizers): loads
// of the f32 or bf16 weights or of a copy with bytes overwritten, frees,
// prefills, extends and decodes with sizes from a list of edge values, ids
// in and out of the vocabulary, the accessors, and every call on NULL.
//
// Arrays hold exactly the ids a call may read, so AddressSanitizer stops on
// any read past them; a size the API must refuse comes with a one-element
// array. The target also predicts each call's outcome from the documented
// contract and traps where the runtime disagrees: a call that should fail
// and succeeds (or the reverse), or a failed call that moved the position,
// the batch or the logits.
//
//===----------------------------------------------------------------------===//

#include "gdn_model.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/// The weights written by the build (make_weights.py), f32 and bf16.
const char *const kWeights[] = {GDN_FUZZ_WEIGHTS_F32, GDN_FUZZ_WEIGHTS_BF16};

/// Calls that read more ids than this are valid but slow; they are skipped.
constexpr int64_t kMaxFuzzedIds = 512;

/// The input, consumed from the front; zeros once it runs out.
class Input {
public:
  Input(const uint8_t *data, size_t size) : data(data), size(size) {}
  bool empty() const { return size == 0; }
  uint8_t byte() {
    if (!size)
      return 0;
    --size;
    return *data++;
  }
  uint64_t word() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
      value = value << 8 | byte();
    return value;
  }

private:
  const uint8_t *data;
  size_t size;
};

/// A batch, token count or position: mostly values at the edges of what
/// the API accepts.
int64_t edgeValue(Input &in, int64_t context) {
  switch (in.byte() % 16) {
  case 0:
    return 0;
  case 1:
    return -1;
  case 2:
    return INT64_MAX;
  case 3:
    return INT64_MIN;
  case 4:
    return context;
  case 5:
    return context + 1;
  case 6:
    return GDN_MODEL_MAX_BATCH;
  case 7:
    return GDN_MODEL_MAX_BATCH + 1;
  case 8:
    return int64_t(1) << 32;
  case 9:
    return int64_t(1) << 62;
  case 10:
    return static_cast<int64_t>(in.word());
  default:
    return 1 + in.byte() % 8;
  }
}

/// A token id: mostly within the vocabulary.
int64_t tokenId(Input &in, int64_t vocab) {
  uint8_t b = in.byte();
  switch (b) {
  case 255:
    return vocab;
  case 254:
    return -1;
  case 253:
    return INT64_MIN;
  case 252:
    return INT64_MAX;
  default:
    return b % vocab;
  }
}

[[noreturn]] void contractBroken(const char *what) {
  fprintf(stderr, "C API contract broken: %s (last error: %s)\n", what,
          gdn_model_last_error());
  __builtin_trap();
}

/// One model handle and what the contract says about it.
struct Slot {
  gdn_model *model = nullptr;
  /// Loaded from the build's weights: outcomes are predicted exactly.
  /// (A corrupted copy that loads may give non-finite values.)
  bool exact = false;
  int64_t position = 0, batch = 0;
};

/// The ids of a call that reads `count` of them: exactly that many when the
/// call is valid (and small enough to run), else one.
std::unique_ptr<int64_t[]> makeIds(Input &in, int64_t count, int64_t vocab,
                                   bool &inVocabulary) {
  auto ids = std::make_unique<int64_t[]>(count);
  inVocabulary = true;
  for (int64_t i = 0; i < count; ++i) {
    ids[i] = tokenId(in, vocab);
    inVocabulary &= ids[i] >= 0 && ids[i] < vocab;
  }
  return ids;
}

/// The logits of `model` as the API describes them (ASan checks the
/// extent as they are read).
std::vector<float> logitsOf(const gdn_model *model) {
  int64_t batch = 0, tokens = 0;
  const float *logits = gdn_model_logits(model, &batch, &tokens);
  if (!logits)
    return {};
  return std::vector<float>(logits, logits + batch * tokens *
                                                 gdn_model_vocab_size(model));
}

/// Checks that a failed call left `slot` as it was: the position, the
/// batch, the logits' address, shape and values.
void expectUnchanged(const Slot &slot, const float *logitsBefore,
                     int64_t logitsBatch, int64_t logitsTokens,
                     const std::vector<float> &valuesBefore) {
  int64_t batch = -2, tokens = -2;
  const float *logits = gdn_model_logits(slot.model, &batch, &tokens);
  if (gdn_model_position(slot.model) != slot.position ||
      gdn_model_batch(slot.model) != slot.batch)
    contractBroken("a failed call moved the position or the batch");
  if (logits != logitsBefore || batch != logitsBatch || tokens != logitsTokens)
    contractBroken("a failed call changed the logits");
  std::vector<float> values = logitsOf(slot.model);
  // Bytes, not values: NaN logits of a corrupted model equal themselves.
  if (values.size() != valuesBefore.size() ||
      (!values.empty() && std::memcmp(values.data(), valuesBefore.data(),
                                      values.size() * sizeof(float)) != 0))
    contractBroken("a failed call changed the logits' values");
}

/// prefill (kind 0), extend (1) or decode (2) on `slot`.
void step(Slot &slot, Input &in, int kind) {
  int64_t vocab = gdn_model_vocab_size(slot.model);
  int64_t context = gdn_model_max_context(slot.model);
  int64_t batch = kind == 2 ? slot.batch : edgeValue(in, context);
  int64_t tokens = kind == 2 ? 1 : edgeValue(in, context);
  int64_t start = kind == 0 ? 0 : slot.position;
  bool sizesValid = batch >= 1 && batch <= GDN_MODEL_MAX_BATCH && tokens >= 1 &&
                    tokens <= context - start &&
                    (kind == 0 || (slot.batch > 0 && batch == slot.batch));
  if (sizesValid && batch * tokens > kMaxFuzzedIds)
    return;
  bool inVocabulary = true;
  std::unique_ptr<int64_t[]> ids =
      makeIds(in, sizesValid ? batch * tokens : 1, vocab, inVocabulary);
  if (in.byte() == 0xA5)
    ids.reset(); // ids NULL
  bool expectSuccess = sizesValid && inVocabulary && ids;

  int64_t logitsBatch = 0, logitsTokens = 0;
  const float *logitsBefore =
      gdn_model_logits(slot.model, &logitsBatch, &logitsTokens);
  std::vector<float> valuesBefore = logitsOf(slot.model);
  int status =
      kind == 0   ? gdn_model_prefill(slot.model, ids.get(), batch, tokens)
      : kind == 1 ? gdn_model_extend(slot.model, ids.get(), batch, tokens)
                  : gdn_model_decode(slot.model, ids.get());
  if (status != 0 && status != -1)
    contractBroken("a step returned neither 0 nor -1");
  if (status == -1) {
    // The numerics check may refuse a step of a corrupted model.
    if (expectSuccess && slot.exact)
      contractBroken("a valid step failed");
    expectUnchanged(slot, logitsBefore, logitsBatch, logitsTokens,
                    valuesBefore);
    return;
  }
  if (!expectSuccess)
    contractBroken("an invalid step succeeded");
  slot.position = start + tokens;
  slot.batch = batch;
  if (gdn_model_position(slot.model) != slot.position ||
      gdn_model_batch(slot.model) != slot.batch)
    contractBroken("the position or batch after a step");
  int64_t logitsB = 0, logitsT = 0;
  if (!gdn_model_logits(slot.model, &logitsB, &logitsT) || logitsB != batch ||
      logitsT != tokens)
    contractBroken("the logits' shape after a step");
  std::vector<float> all = logitsOf(slot.model);
  int64_t lastBatch = 0;
  const float *last = gdn_model_last_logits(slot.model, &lastBatch);
  if (!last || lastBatch != batch)
    contractBroken("the last logits' shape after a step");
  for (int64_t b = 0; b < batch; ++b)
    if (std::memcmp(last + b * vocab,
                    all.data() + ((b + 1) * tokens - 1) * vocab,
                    vocab * sizeof(float)) != 0)
      contractBroken("the last logits differ from the logits' last rows");
}

/// Writes the build's weights with `count` bytes overwritten to a file of
/// this process and loads it.
gdn_model *loadCorrupted(Input &in) {
  static std::vector<char> original = [] {
    std::vector<char> bytes;
    if (FILE *f = fopen(kWeights[0], "rb")) {
      char buffer[65536];
      size_t n;
      while ((n = fread(buffer, 1, sizeof buffer, f)) > 0)
        bytes.insert(bytes.end(), buffer, buffer + n);
      fclose(f);
    }
    return bytes;
  }();
  static const std::string path =
      "/tmp/gdn-fuzz-c_api-" + std::to_string(getpid()) + ".safetensors";
  std::vector<char> bytes = original;
  int edits = 1 + in.byte() % 8;
  for (int i = 0; i < edits && !bytes.empty(); ++i) {
    // Most edits land in the header (its first 8 bytes and the JSON).
    uint64_t where;
    if (in.byte() < 192) {
      uint64_t word = in.byte();
      where = word * 4 + in.byte() % 4;
    } else {
      where = in.word();
    }
    bytes[where % bytes.size()] = static_cast<char>(in.byte());
  }
  if (uint8_t cut = in.byte(); cut >= 240)
    bytes.resize(bytes.size() * (cut - 240) / 16);
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    contractBroken("cannot write the corrupted weights file");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  gdn_model *model = gdn_model_load(path.c_str());
  unlink(path.c_str());
  return model;
}

/// Every entry point on a NULL model fails without touching memory.
void callsOnNull(Input &in) {
  int64_t one[1] = {1};
  int64_t batch = 7, tokens = 7;
  int64_t b = edgeValue(in, 16), t = edgeValue(in, 16);
  if (gdn_model_vocab_size(nullptr) != -1 ||
      gdn_model_max_context(nullptr) != -1 ||
      gdn_model_byte_tokenizer(nullptr) != -1 ||
      gdn_model_position(nullptr) != -1 || gdn_model_batch(nullptr) != -1 ||
      gdn_model_cache_bytes(nullptr, &batch, &tokens) != -1 ||
      gdn_model_prefill(nullptr, one, b, t) != -1 ||
      gdn_model_extend(nullptr, one, b, t) != -1 ||
      gdn_model_decode(nullptr, one) != -1 ||
      gdn_model_set_check_numerics(nullptr, 1) != -1 ||
      gdn_model_logits(nullptr, &batch, &tokens) != nullptr)
    contractBroken("a call on a NULL model did not fail");
  gdn_model_free(nullptr);
}

void accessors(const Slot &slot, Input &in) {
  int64_t gdnBytes = -1, mlaBytes = -1;
  int64_t *gdnOut = in.byte() & 1 ? &gdnBytes : nullptr;
  int64_t *mlaOut = in.byte() & 1 ? &mlaBytes : nullptr;
  int64_t total = gdn_model_cache_bytes(slot.model, gdnOut, mlaOut);
  if (total < 0 || (gdnOut && mlaOut && total != gdnBytes + mlaBytes))
    contractBroken("cache_bytes");
  if (gdn_model_vocab_size(slot.model) <= 0 ||
      gdn_model_max_context(slot.model) <= 0 ||
      gdn_model_byte_tokenizer(slot.model) < 0 ||
      gdn_model_position(slot.model) != slot.position ||
      gdn_model_batch(slot.model) != slot.batch)
    contractBroken("an accessor");
  if (gdn_model_logits(slot.model, nullptr, nullptr) == nullptr &&
      slot.batch > 0)
    contractBroken("no logits after a step");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // The model's parallel loops on one thread: the steps are tiny, and more
  // threads only spin on the cores of other fuzzers and builds.
  setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in(data, size);
  Slot slots[2];
  // Loads cost the most (the header's JSON, every tensor validated); they
  // are 2 of 16 operations, so that most of the time goes to the steps.
  for (int op = 0; op < 32 && !in.empty(); ++op) {
    Slot &slot = slots[in.byte() % 2];
    switch (in.byte() % 16) {
    case 0: // load the build's weights, f32 or bf16
      gdn_model_free(slot.model);
      slot = Slot();
      slot.model = gdn_model_load(kWeights[in.byte() % 2]);
      if (!slot.model)
        contractBroken("the build's weights do not load");
      slot.exact = true;
      break;
    case 1: // load a corrupted copy
      gdn_model_free(slot.model);
      slot = Slot();
      slot.model = loadCorrupted(in);
      break;
    case 2:
      gdn_model_free(slot.model);
      slot = Slot();
      break;
    case 3:
      if (slot.model &&
          gdn_model_set_check_numerics(slot.model, in.byte() % 2) != 0)
        contractBroken("set_check_numerics");
      break;
    case 4:
    case 5:
      if (slot.model)
        accessors(slot, in);
      break;
    case 6:
      callsOnNull(in);
      break;
    default: // prefill, extend or decode
      if (slot.model)
        step(slot, in, in.byte() % 3);
    }
  }
  for (Slot &slot : slots)
    gdn_model_free(slot.model);
  return 0;
}
