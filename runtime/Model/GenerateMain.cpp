//===- GenerateMain.cpp - the executable of a compiled model --------------===//
//
// DIR/gdn-model, written by `gdn-compile model.json -o DIR`: loads the
// weights, prefills a prompt (text for a byte tokenizer, or token ids) for
// a batch of sequences, decodes N tokens (greedy, or sampled at a
// temperature with a seed), and prints the tokens, prefill and decode
// tokens/s and the cache bytes per sequence. Uses gdn_model.h, and for the
// text of a Hugging Face checkpoint's models its tokenizer
// (gdn_tokenizer.h, linked in).
//
//===----------------------------------------------------------------------===//

#include "gdn/Runtime/gdn_model.h"
#include "gdn/Runtime/gdn_tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace cl = llvm::cl;

static cl::OptionCategory category("gdn-model options");
static cl::opt<std::string> prompt(cl::Positional, cl::desc("[prompt text]"),
                                   cl::init(""), cl::cat(category));
static cl::opt<std::string>
    idsOption("ids", cl::desc("Comma-separated prompt token ids (instead of "
                              "text)"),
              cl::value_desc("i,j,..."), cl::init(""), cl::cat(category));
static cl::opt<std::string>
    weightsOption("weights",
                  cl::desc("Safetensors weights (default: the file given "
                           "at compile time)"),
                  cl::value_desc("path"), cl::init(""), cl::cat(category));
static cl::opt<std::string> tokenizerOption(
    "tokenizer",
    cl::desc("tokenizer.json for text prompts (default: the checkpoint's, "
             "found at compile time)"),
    cl::value_desc("path"), cl::init(""), cl::cat(category));
static cl::opt<int64_t> numTokens("n", cl::desc("Tokens to generate"),
                                  cl::init(32), cl::cat(category));
static cl::alias numTokensLong("tokens", cl::aliasopt(numTokens),
                               cl::desc("Alias for -n"), cl::cat(category));
static cl::opt<double>
    temperature("temperature",
                cl::desc("Sampling temperature; 0 picks the most likely "
                         "token (greedy)"),
                cl::init(0.0), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the sampler"),
                              cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    batchSize("batch",
              cl::desc("Sequences decoded together (each starts from the "
                       "prompt)"),
              cl::init(1), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress on stderr"),
                           cl::init(false), cl::cat(category));
static cl::opt<bool> checkNumerics(
    "check-numerics",
    cl::desc("Fail on the first NaN or Inf in a layer's caches or in the "
             "logits, naming the layer and position (slower)"),
    cl::init(false), cl::cat(category));

namespace {
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int error(const llvm::Twine &message) {
  llvm::errs() << "gdn-model: error: " << message << "\n";
  return 1;
}

/// Picks one token per sequence from logits [batch, vocab].
class Sampler {
public:
  Sampler(double temperature, uint64_t seed)
      : temperature(temperature), engine(seed) {}

  int64_t sample(const float *logits, int64_t vocab) {
    const float *best = std::max_element(logits, logits + vocab);
    if (temperature == 0)
      return best - logits;
    std::vector<double> weights(vocab);
    for (int64_t i = 0; i < vocab; ++i)
      weights[i] = std::exp((double(logits[i]) - *best) / temperature);
    std::discrete_distribution<int64_t> pick(weights.begin(), weights.end());
    return pick(engine);
  }

private:
  double temperature;
  std::mt19937_64 engine;
};

/// Bytes as printable text: escapes for control and non-ASCII bytes.
std::string printable(const std::vector<int64_t> &ids) {
  std::string text;
  for (int64_t id : ids) {
    char c = static_cast<char>(id);
    if (c == '\n')
      text += "\\n";
    else if (c == '\\' || c == '"')
      text += std::string("\\") + c;
    else if (id >= 0x20 && id < 0x7f)
      text += c;
    else
      text += "\\x" + llvm::utohexstr(id, /*LowerCase=*/true, 2);
  }
  return text;
}

/// UTF-8 text as one printable line: escapes for control characters (the
/// rest of UTF-8 as is).
std::string printableText(llvm::StringRef text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\\' || c == '"')
      out += std::string("\\") + char(c);
    else if (c < 0x20 || c == 0x7f)
      out += "\\x" + llvm::utohexstr(c, /*LowerCase=*/true, 2);
    else
      out += char(c);
  }
  return out;
}

/// The tokenizer of a checkpoint's model, loaded on demand.
class TextTokenizer {
public:
  ~TextTokenizer() { gdn_tokenizer_free(tokenizer); }

  /// Loads `path`; false (with the message in `error`) on failure.
  bool load(const std::string &path, std::string &error) {
    tokenizer = gdn_tokenizer_load(path.c_str());
    if (!tokenizer)
      error = gdn_tokenizer_last_error();
    return tokenizer != nullptr;
  }
  bool loaded() const { return tokenizer != nullptr; }

  bool encode(llvm::StringRef text, std::vector<int64_t> &ids,
              std::string &error) {
    int64_t count =
        gdn_tokenizer_encode(tokenizer, text.data(), text.size(), nullptr, 0);
    if (count >= 0) {
      ids.resize(count);
      count = gdn_tokenizer_encode(tokenizer, text.data(), text.size(),
                                   ids.data(), count);
    }
    if (count < 0)
      error = gdn_tokenizer_last_error();
    return count >= 0;
  }

  std::string decode(const std::vector<int64_t> &ids) {
    int64_t size =
        gdn_tokenizer_decode(tokenizer, ids.data(), ids.size(), nullptr, 0);
    if (size < 0)
      return "<" + std::string(gdn_tokenizer_last_error()) + ">";
    std::string text(size, '\0');
    gdn_tokenizer_decode(tokenizer, ids.data(), ids.size(), text.data(), size);
    return text;
  }

private:
  gdn_tokenizer *tokenizer = nullptr;
};

std::string joined(const std::vector<int64_t> &ids) {
  std::string text;
  for (auto [i, id] : llvm::enumerate(ids))
    text += (i ? " " : "") + std::to_string(id);
  return text;
}

/// Progress on stderr at most once a second, for runs longer than that.
class Progress {
public:
  explicit Progress(int64_t total) : total(total) {}
  void update(int64_t done) {
    if (quiet || secondsSince(last) < 1.0)
      return;
    last = Clock::now();
    llvm::errs() << "  " << done << "/" << total << " tokens, "
                 << llvm::format("%.0f", done / secondsSince(start))
                 << " tokens/s\n";
  }

private:
  int64_t total;
  Clock::time_point start = Clock::now(), last = Clock::now();
};
} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gdn-model: generate tokens with a model compiled by gdn-compile\n");
  if (numTokens < 0)
    return error("-n must be >= 0, got " + llvm::Twine(numTokens));
  if (temperature < 0 || !std::isfinite(temperature))
    return error("--temperature must be a finite number >= 0");
  if (batchSize < 1 || batchSize > GDN_MODEL_MAX_BATCH)
    return error("--batch must be 1.." + llvm::Twine(GDN_MODEL_MAX_BATCH) +
                 ", got " + llvm::Twine(batchSize));

  auto loadStart = Clock::now();
  gdn_model *model = gdn_model_load(
      weightsOption.empty() ? nullptr : weightsOption.c_str());
  if (!model)
    return error(gdn_model_last_error());
  double loadSeconds = secondsSince(loadStart);
  if (checkNumerics)
    gdn_model_set_check_numerics(model, 1);
  int64_t vocab = gdn_model_vocab_size(model);

  std::vector<int64_t> promptIds;
  // A checkpoint's tokenizer reads text prompts and shows the generated
  // text; with --ids it is optional.
  TextTokenizer text;
  std::string tokenizerPath = tokenizerOption.empty()
                                  ? gdn_model_tokenizer_path()
                                  : tokenizerOption.getValue();
  std::string tokenizerError;
  if (!gdn_model_byte_tokenizer(model) && !tokenizerPath.empty())
    text.load(tokenizerPath, tokenizerError);
  if (!idsOption.empty()) {
    if (!prompt.empty())
      return error("give a prompt text or --ids, not both");
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(idsOption).split(parts, ',');
    for (llvm::StringRef part : parts) {
      int64_t id;
      if (part.trim().getAsInteger(10, id))
        return error("--ids: '" + part + "' is not an integer");
      promptIds.push_back(id);
    }
  } else if (gdn_model_byte_tokenizer(model)) {
    for (unsigned char c : std::string(prompt))
      promptIds.push_back(c);
  } else {
    if (tokenizerPath.empty())
      return error("this model has no text tokenizer (a description with "
                   "\"tokenizer\": \"ids\", or a checkpoint without "
                   "tokenizer.json): give the prompt with --ids, or a "
                   "tokenizer.json with --tokenizer");
    if (!text.loaded())
      return error(tokenizerError);
    std::string message;
    if (!text.encode(prompt, promptIds, message))
      return error(message);
  }
  if (!tokenizerError.empty() && !quiet)
    llvm::errs() << "gdn-model: warning: no generated text: "
                 << tokenizerError << "\n";
  if (promptIds.empty())
    return error("the prompt is empty");

  int64_t batch = batchSize, promptLength = promptIds.size();
  // The whole run must fit the context, checked before any work: the last
  // token sampled is not decoded.
  int64_t maxContext = gdn_model_max_context(model);
  if (promptLength > maxContext ||
      (numTokens > 0 && numTokens - 1 > maxContext - promptLength))
    return error("max_context: the prompt's " + llvm::Twine(promptLength) +
                 " tokens and -n " + llvm::Twine(numTokens) +
                 " (all but the last one decoded) exceed the model's " +
                 llvm::Twine(maxContext) + " tokens");
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < batch; ++b)
    ids.insert(ids.end(), promptIds.begin(), promptIds.end());

  auto prefillStart = Clock::now();
  if (gdn_model_prefill(model, ids.data(), batch, promptLength))
    return error(gdn_model_last_error());
  double prefillSeconds = secondsSince(prefillStart);

  Sampler sampler(temperature, seed);
  std::vector<std::vector<int64_t>> generated(batch);
  std::vector<int64_t> next(batch);
  Progress progress(numTokens);
  auto decodeStart = Clock::now();
  for (int64_t step = 0; step < numTokens; ++step) {
    int64_t tokens;
    const float *logits = gdn_model_logits(model, nullptr, &tokens);
    for (int64_t b = 0; b < batch; ++b) {
      // The last position of each sequence predicts its next token.
      const float *row = logits + ((b + 1) * tokens - 1) * vocab;
      next[b] = sampler.sample(row, vocab);
      generated[b].push_back(next[b]);
    }
    // The last token needs no logits of its own.
    if (step + 1 < numTokens && gdn_model_decode(model, next.data()))
      return error(gdn_model_last_error());
    progress.update(step + 1);
  }
  double decodeSeconds = secondsSince(decodeStart);

  llvm::outs() << "device:           " << gdn_model_device() << "\n";
  llvm::outs() << "weights loaded in "
               << llvm::format("%.1f", loadSeconds * 1e3) << " ms\n";
  llvm::outs() << "prompt tokens:    " << promptLength
               << (batch > 1 ? " (x " + std::to_string(batch) + " sequences)"
                             : "")
               << "\n";
  for (int64_t b = 0; b < std::min<int64_t>(batch, 4); ++b) {
    std::string label = batch > 1 ? "[" + std::to_string(b) + "] " : "";
    llvm::outs() << "generated tokens: " << label << joined(generated[b])
                 << "\n";
    if (gdn_model_byte_tokenizer(model))
      llvm::outs() << "generated text:   " << label << "\""
                   << printable(generated[b]) << "\"\n";
    else if (text.loaded())
      llvm::outs() << "generated text:   " << label << "\""
                   << printableText(text.decode(generated[b])) << "\"\n";
  }
  llvm::outs() << "prefill: "
               << llvm::format("%.0f", batch * promptLength / prefillSeconds)
               << " tokens/s ("
               << llvm::format("%.1f", prefillSeconds * 1e3) << " ms)\n";
  if (numTokens > 1)
    llvm::outs() << "decode:  "
                 << llvm::format("%.0f",
                                 batch * (numTokens - 1) / decodeSeconds)
                 << " tokens/s ("
                 << llvm::format("%.2f",
                                 decodeSeconds * 1e3 / (numTokens - 1))
                 << " ms per step)\n";
  int64_t gdnBytes, mlaBytes;
  int64_t cacheBytes = gdn_model_cache_bytes(model, &gdnBytes, &mlaBytes);
  llvm::outs() << "cache:   " << cacheBytes << " bytes per sequence (GDN "
               << gdnBytes << ", MLA " << mlaBytes << ") at "
               << gdn_model_position(model) << " tokens\n";
  gdn_model_free(model);
  return 0;
}
