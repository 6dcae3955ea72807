//===- GenerateMain.cpp - the executable of a compiled model --------------===//
//
// DIR/gdn-model, written by `gdn-compile model.json -o DIR`: loads the
// weights, prefills a prompt (text for a byte tokenizer, or token ids) for
// a batch of sequences, decodes N tokens (greedy, or sampled at a
// temperature with a seed), and prints the tokens, prefill and decode
// tokens/s and the cache bytes per sequence; or, with --perplexity FILE,
// evaluates the model's loss on a text (Perplexity.h). Uses gdn_model.h, and
// for the text of a Hugging Face checkpoint's models its tokenizer
// (gdn_tokenizer.h, linked in).
//
//===----------------------------------------------------------------------===//

#include "Perplexity.h"

#include "gdn/Runtime/gdn_model.h"
#include "gdn/Runtime/gdn_tokenizer.h"
#include "gdn/Version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
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
    idsOption("ids",
              cl::desc("Comma-separated prompt token ids (instead of "
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
    topK("top-k",
         cl::desc("Sample among the k most likely tokens only (0: all)"),
         cl::init(0), cl::cat(category));
static cl::opt<double>
    topP("top-p",
         cl::desc("Sample among the most likely tokens whose probabilities "
                  "add up to p (1: all)"),
         cl::init(1.0), cl::cat(category));
static cl::opt<bool> ignoreEos(
    "ignore-eos",
    cl::desc("Keep generating after the tokenizer's end-of-text token"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> noStream(
    "no-stream",
    cl::desc("Print the generated text only with the summary, not as it is "
             "produced"),
    cl::init(false), cl::cat(category));
static cl::opt<int64_t>
    batchSize("batch",
              cl::desc("Sequences decoded together (each starts from the "
                       "prompt)"),
              cl::init(1), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress on stderr"),
                           cl::init(false), cl::cat(category));
static cl::opt<std::string> perplexityFile(
    "perplexity",
    cl::desc("Instead of generating, evaluate the model on a text file: the "
             "mean negative log-likelihood of its tokens, in windows of "
             "--window tokens, each from empty caches"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::opt<int64_t> windowSize(
    "window",
    cl::desc("Tokens per window of --perplexity, at most the model's "
             "max_context (default: 512 or max_context if smaller); windows "
             "of one length are prefilled --batch at a time"),
    cl::init(512), cl::cat(category));
static cl::opt<bool> checkNumerics(
    "check-numerics",
    cl::desc("Fail on the first NaN or Inf in a layer's caches or in the "
             "logits, naming the layer and position (slower)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> noDecodeGraphs(
    "no-decode-graphs",
    cl::desc("On a GPU, launch every kernel of a decode step from the host "
             "instead of replaying the step as one CUDA graph"),
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

/// Picks one token per sequence from logits [batch, vocab]: the most
/// likely (temperature 0), or a sample at the temperature among the top-k
/// tokens and the smallest set whose probabilities reach top-p.
class Sampler {
public:
  Sampler(double temperature, int64_t topK, double topP, uint64_t seed)
      : temperature(temperature), topK(topK), topP(topP), engine(seed) {}

  int64_t sample(const float *logits, int64_t vocab) {
    const float *best = std::max_element(logits, logits + vocab);
    if (temperature == 0)
      return best - logits;
    candidates.resize(vocab);
    for (int64_t i = 0; i < vocab; ++i)
      candidates[i] = {std::exp((double(logits[i]) - *best) / temperature), i};
    int64_t keep = topK > 0 ? std::min(topK, vocab) : vocab;
    if (keep < vocab || topP < 1.0)
      std::partial_sort(candidates.begin(), candidates.begin() + keep,
                        candidates.end(), std::greater<>());
    if (topP < 1.0) {
      double total = 0, kept = 0;
      for (int64_t i = 0; i < keep; ++i)
        total += candidates[i].first;
      int64_t n = 0;
      while (n < keep && kept < topP * total)
        kept += candidates[n++].first;
      keep = std::max<int64_t>(n, 1);
    }
    weights.resize(keep);
    for (int64_t i = 0; i < keep; ++i)
      weights[i] = candidates[i].first;
    std::discrete_distribution<int64_t> pick(weights.begin(), weights.end());
    return candidates[pick(engine)].second;
  }

private:
  double temperature;
  int64_t topK;
  double topP;
  std::mt19937_64 engine;
  std::vector<std::pair<double, int64_t>> candidates;
  std::vector<double> weights;
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

/// What starts at `text[i]`: the length of a well-formed UTF-8 sequence, 0
/// for a byte that starts none, or kIncomplete for the start of one that
/// `text` ends before.
constexpr size_t kIncomplete = ~size_t(0);
size_t utf8SequenceAt(llvm::StringRef text, size_t i) {
  auto *bytes = reinterpret_cast<const llvm::UTF8 *>(text.data());
  unsigned length = llvm::getNumBytesForUTF8(bytes[i]);
  if (length == 1)
    return bytes[i] < 0x80 ? 1 : 0;
  if (length > 4)
    return 0;
  if (i + length > text.size()) {
    for (size_t j = i + 1; j < text.size(); ++j)
      if ((bytes[j] & 0xc0) != 0x80)
        return 0;
    return kIncomplete;
  }
  return llvm::isLegalUTF8Sequence(bytes + i, bytes + i + length) ? length : 0;
}

/// Generated bytes as one printable line: escapes for control characters
/// and for bytes that are not UTF-8 (the rest as is).
std::string printableText(llvm::StringRef text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = text[i];
    size_t length = utf8SequenceAt(text, i);
    bool character = length != 0 && length != kIncomplete;
    if (character && length > 1) {
      out += text.substr(i, length).str();
      i += length;
      continue;
    }
    if (c == '\n')
      out += "\\n";
    else if (c == '\\' || c == '"')
      out += std::string("\\") + char(c);
    else if (!character || c < 0x20 || c == 0x7f)
      out += "\\x" + llvm::utohexstr(c, /*LowerCase=*/true, 2);
    else
      out += char(c);
    ++i;
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

  /// The bytes of one token (a character may span tokens).
  std::string tokenBytes(int64_t id) {
    int64_t size = gdn_tokenizer_decode_bytes(tokenizer, &id, 1, nullptr, 0);
    std::string bytes(std::max<int64_t>(size, 0), '\0');
    if (size > 0)
      gdn_tokenizer_decode_bytes(tokenizer, &id, 1, bytes.data(), size);
    return bytes;
  }

  /// The end-of-text tokens the tokenizer has.
  std::vector<int64_t> stopTokens() {
    std::vector<int64_t> ids;
    for (const char *token : {"<|endoftext|>", "<|im_end|>"}) {
      int64_t id = gdn_tokenizer_token_id(tokenizer, token);
      if (id >= 0)
        ids.push_back(id);
    }
    return ids;
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

/// Writes the bytes of generated tokens to stdout as they come, holding
/// back an incomplete UTF-8 character until its last byte arrives. Bytes
/// that are not UTF-8, and control characters other than newline and tab,
/// are shown as U+FFFD: the output stays valid UTF-8, and a model's output
/// may not drive the terminal.
class TextStream {
public:
  void append(llvm::StringRef bytes) {
    pending.append(bytes.data(), bytes.size());
    std::string out;
    size_t i = 0;
    while (i < pending.size()) {
      size_t length = utf8SequenceAt(pending, i);
      if (length == kIncomplete)
        break;
      unsigned char c = pending[i];
      bool control =
          length == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f);
      if (length == 0 || control) {
        out += kReplacement;
        ++i;
        continue;
      }
      out += pending.substr(i, length);
      i += length;
    }
    pending.erase(0, i);
    llvm::outs() << out;
    llvm::outs().flush();
  }
  /// Ends the text: what is left is an incomplete character.
  void finish() {
    if (!pending.empty())
      llvm::outs() << kReplacement;
    llvm::outs() << "\n";
    pending.clear();
  }

private:
  static constexpr const char *kReplacement = "\xef\xbf\xbd";
  std::string pending;
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
/// What the caches that grow with the tokens hold, for the cache line: a
/// Hugging Face checkpoint's (its config.json names a model_type) are
/// attention keys and values, gdn's own descriptions' MLA latents.
const char *growingCacheName() {
  llvm::Expected<llvm::json::Value> description =
      llvm::json::parse(gdn_model_description());
  if (!description) {
    llvm::consumeError(description.takeError());
    return "attention";
  }
  const llvm::json::Object *root = description->getAsObject();
  return root && root->get("model_type") ? "attention" : "MLA";
}
/// The bytes of a regular file (a device or a FIFO could be endless).
bool readTextFile(const std::string &path, std::string &text,
                  std::string &message) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status)) {
    message = path + ": " + ec.message();
    return false;
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    message = path + ": not a regular file";
    return false;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    message = path + ": " + buffer.getError().message();
    return false;
  }
  text = (*buffer)->getBuffer().str();
  return true;
}

/// --perplexity: evaluates the model on the tokens of a file and prints the
/// loss.
int runPerplexity(gdn_model *model, const std::vector<int64_t> &ids,
                  llvm::StringRef unit) {
  int64_t maxContext = gdn_model_max_context(model);
  // The default fits any model; a window given explicitly must.
  int64_t window = windowSize.getNumOccurrences()
                       ? windowSize.getValue()
                       : std::min<int64_t>(windowSize, maxContext);
  if (window < 2 || window > maxContext)
    return error("--window must be 2.." + llvm::Twine(maxContext) +
                 " (the model's max_context), got " + llvm::Twine(window));
  if (ids.size() < 2)
    return error(perplexityFile + ": " + llvm::Twine(ids.size()) + " " + unit +
                 "s; at least 2 are needed to predict one");
  Progress progress(ids.size());
  gdn::PerplexityResult result;
  std::string message;
  if (!gdn::evaluatePerplexity(
          model, ids, window, batchSize,
          [&](int64_t done, int64_t) { progress.update(done); }, result,
          message))
    return error(message);
  double loss = result.meanNll();
  llvm::outs() << "device:     " << gdn_model_device() << "\n";
  llvm::outs() << "evaluated:  " << perplexityFile << ": " << ids.size() << " "
               << unit << "s in " << result.windows << " windows of up to "
               << window << ", " << result.predicted << " predicted\n";
  llvm::outs() << "loss:       " << llvm::format("%.6f", loss) << " nats/"
               << unit << " (" << llvm::format("%.4f", loss / std::log(2.0))
               << " bits/" << unit << "), perplexity "
               << llvm::format("%.4f", std::exp(loss)) << "\n";
  llvm::outs() << "speed:      "
               << llvm::format("%.0f", ids.size() / result.seconds)
               << " tokens/s (" << llvm::format("%.1f", result.seconds)
               << " s)\n";
  gdn_model_free(model);
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { mlir::gdn::printVersion(os, "gdn-model"); });
  cl::ParseCommandLineOptions(
      argc, argv,
      "gdn-model: generate tokens with a model compiled by gdn-compile\n");
  if (numTokens < 0)
    return error("-n must be >= 0, got " + llvm::Twine(numTokens));
  if (temperature < 0 || !std::isfinite(temperature))
    return error("--temperature must be a finite number >= 0");
  if (topK < 0)
    return error("--top-k must be >= 0 (0: all tokens), got " +
                 llvm::Twine(topK));
  if (!(topP > 0 && topP <= 1))
    return error("--top-p must be in (0, 1], got " +
                 llvm::formatv("{0}", double(topP)).str());
  if (batchSize < 1 || batchSize > GDN_MODEL_MAX_BATCH)
    return error("--batch must be 1.." + llvm::Twine(GDN_MODEL_MAX_BATCH) +
                 ", got " + llvm::Twine(batchSize));

  auto loadStart = Clock::now();
  gdn_model *model =
      gdn_model_load(weightsOption.empty() ? nullptr : weightsOption.c_str());
  if (!model)
    return error(gdn_model_last_error());
  double loadSeconds = secondsSince(loadStart);
  if (noDecodeGraphs)
    gdn_model_set_decode_graphs(model, 0);
  if (checkNumerics)
    gdn_model_set_check_numerics(model, 1);
  int64_t vocab = gdn_model_vocab_size(model);

  if (!perplexityFile.empty()) {
    if (!prompt.empty() || !idsOption.empty())
      return error("--perplexity evaluates a file: give no prompt or --ids");
    std::string contents, message;
    if (!readTextFile(perplexityFile, contents, message))
      return error(message);
    std::vector<int64_t> fileIds;
    if (gdn_model_byte_tokenizer(model)) {
      for (unsigned char c : contents)
        fileIds.push_back(c);
      return runPerplexity(model, fileIds, "byte");
    }
    std::string path = tokenizerOption.empty() ? gdn_model_tokenizer_path()
                                               : tokenizerOption.getValue();
    if (path.empty())
      return error("--perplexity: this model has no text tokenizer; give a "
                   "tokenizer.json with --tokenizer");
    TextTokenizer tokenizer;
    if (!tokenizer.load(path, message) ||
        !tokenizer.encode(contents, fileIds, message))
      return error(message);
    return runPerplexity(model, fileIds, "token");
  }

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
    llvm::errs() << "gdn-model: warning: no generated text: " << tokenizerError
                 << "\n";
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

  // Generation samples from each sequence's last position only.
  gdn_model_set_last_logits_only(model, 1);
  auto prefillStart = Clock::now();
  if (gdn_model_prefill(model, ids.data(), batch, promptLength))
    return error(gdn_model_last_error());
  double prefillSeconds = secondsSince(prefillStart);

  Sampler sampler(temperature, topK, topP, seed);
  std::vector<std::vector<int64_t>> generated(batch);
  std::vector<int64_t> next(batch);
  // A sequence ends at the tokenizer's end-of-text token; the batch stops
  // when all have.
  std::vector<int64_t> stops =
      text.loaded() && !ignoreEos ? text.stopTokens() : std::vector<int64_t>();
  std::vector<bool> stopped(batch, false);
  int64_t running = batch;
  // The text of the first sequence, as it is produced.
  bool stream = !noStream && (text.loaded() || gdn_model_byte_tokenizer(model));
  TextStream streamed;
  Progress progress(numTokens);
  auto decodeStart = Clock::now();
  int64_t steps = 0, decoded = 0;
  for (int64_t step = 0; step < numTokens && running > 0; ++step) {
    // The last position of each sequence predicts its next token.
    const float *logits = gdn_model_last_logits(model, nullptr);
    if (!logits)
      return error(gdn_model_last_error());
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = logits + b * vocab;
      next[b] = sampler.sample(row, vocab);
      if (stopped[b])
        continue;
      generated[b].push_back(next[b]);
      if (llvm::is_contained(stops, next[b])) {
        stopped[b] = true;
        --running;
        continue;
      }
      if (b == 0 && stream)
        streamed.append(text.loaded() ? text.tokenBytes(next[b])
                                      : std::string(1, char(next[b])));
    }
    steps = step + 1;
    // The last token needs no logits of its own.
    if (step + 1 < numTokens && running > 0) {
      if (gdn_model_decode(model, next.data()))
        return error(gdn_model_last_error());
      ++decoded;
    }
    progress.update(step + 1);
  }
  double decodeSeconds = secondsSince(decodeStart);
  if (stream)
    streamed.finish();

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
               << " tokens/s (" << llvm::format("%.1f", prefillSeconds * 1e3)
               << " ms)\n";
  if (decoded > 0)
    llvm::outs() << "decode:  "
                 << llvm::format("%.0f", batch * decoded / decodeSeconds)
                 << " tokens/s ("
                 << llvm::format("%.2f", decodeSeconds * 1e3 / decoded)
                 << " ms per step)\n";
  if (steps < numTokens)
    llvm::outs() << "stopped: every sequence reached an end-of-text token "
                    "after "
                 << steps << " of " << numTokens << " tokens\n";
  int64_t gdnBytes, mlaBytes;
  int64_t cacheBytes = gdn_model_cache_bytes(model, &gdnBytes, &mlaBytes);
  llvm::outs() << "cache:   " << cacheBytes << " bytes per sequence (GDN "
               << gdnBytes << ", " << growingCacheName() << " " << mlaBytes
               << ") at " << gdn_model_position(model) << " tokens\n";
  gdn_model_free(model);
  return 0;
}
