//===- TokenizerJson.cpp - reading Hugging Face tokenizer.json ------------===//
//
// Reads what decides the ids of a byte-level BPE tokenizer and refuses
// everything else that would change them, so that a file this reader
// accepts encodes as Hugging Face tokenizers encodes it. Each message
// starts with the file and the JSON field it is about.
//
// Fields that do not change ids are not read: truncation and padding
// (transformers resets them on every call), the offsets options of
// ByteLevel, and the post-processor's and decoder's options.
//
//===----------------------------------------------------------------------===//

#include "BpeTokenizer.h"

#include "ByteLevel.h"
#include "Normalizer.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

namespace gdn::tokenizer {

namespace json = llvm::json;

/// `text` in double quotes, JSON-escaped, cut to a readable length.
static std::string quoted(llvm::StringRef text) {
  constexpr size_t longest = 60;
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == longest) {
      // Cut at a character boundary so the message stays UTF-8.
      while (i < text.size() && (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80)
        out.push_back(text[i++]);
      out += "...";
      break;
    }
    auto c = static_cast<uint8_t>(text[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7F) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

/// What a JSON value is, for "must be X, not Y" messages.
static llvm::StringRef kindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "a JSON value";
}

/// Why `value` (missing if null) is not the array it should be.
static std::string notAnArray(const json::Value *value) {
  if (!value)
    return "missing";
  return ("must be an array, not " + kindName(*value)).str();
}

/// The token id `value` holds, or why it holds none.
static std::optional<uint32_t> tokenIdOf(const json::Value &value,
                                         std::string &problem) {
  // Range first, as a double: getAsInteger's own conversion is undefined
  // for numbers just above INT64_MAX.
  std::optional<double> number = value.getAsNumber();
  if (!number) {
    problem = ("must be a token id (an integer), not " + kindName(value)).str();
    return std::nullopt;
  }
  if (!(*number >= 0 && *number <= INT32_MAX) ||
      *number != std::floor(*number)) {
    problem = "must be an integer from 0 to 2147483647";
    return std::nullopt;
  }
  return static_cast<uint32_t>(*number);
}

static bool isNull(const json::Value *value) {
  return !value || value->kind() == json::Value::Null;
}

/// The deepest nesting of arrays and objects accepted; tokenizer.json
/// needs 4 (model.merges[i][j]).
static constexpr int deepestNesting = 64;

/// Checks that `text` nests no deeper than deepestNesting, before
/// llvm::json::parse, which recurses once per level and would overflow the
/// stack on a file of 10^5 '['. Strings are skipped; syntax is left to the
/// parser.
static bool nestsTooDeep(llvm::StringRef text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
    case '"':
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '[':
    case '{':
      if (++depth > deepestNesting)
        return true;
      break;
    case ']':
    case '}':
      --depth;
      break;
    default:
      break;
    }
  }
  return false;
}

/// The reader of one file; BpeTokenizer's friend, so it fills the
/// tokenizer's tables directly.
class TokenizerJsonReader {
public:
  explicit TokenizerJsonReader(llvm::StringRef name) : name(name.str()) {}

  llvm::Expected<std::unique_ptr<BpeTokenizer>> read(llvm::StringRef text);

private:
  struct AddedToken {
    std::string content;
    uint32_t id = 0;
    AddedTokenRule rule;
    bool normalized = false;
  };

  llvm::Error fail(const llvm::Twine &field, const llvm::Twine &message) {
    return llvm::createStringError(
        (name + ": " + field + ": " + message).str());
  }
  llvm::Error unsupported(const llvm::Twine &field, llvm::StringRef value,
                          llvm::StringRef supported) {
    return fail(field, quoted(value) +
                           " is not supported (supported: " + supported + ")");
  }

  // Typed field access: a missing optional field gives `fallback`.
  llvm::Expected<const json::Object *> object(const json::Value *value,
                                              const llvm::Twine &field);
  llvm::Expected<llvm::StringRef> string(const json::Object &object,
                                         llvm::StringRef key,
                                         const llvm::Twine &field);
  llvm::Expected<bool> boolean(const json::Object &object, llvm::StringRef key,
                               const llvm::Twine &field,
                               std::optional<bool> fallback);

  llvm::Error readNormalizer(const json::Value *value,
                             const std::string &field);
  llvm::Error readPreTokenizer(const json::Value *value);
  llvm::Error readSplit(const json::Object &split, const std::string &field);
  llvm::Error useGpt2Split(const std::string &field);
  llvm::Error readByteLevel(const json::Object &byteLevel,
                            const std::string &field, bool &useRegex);
  llvm::Error readProcessorOrDecoder(const json::Value *value,
                                     llvm::StringRef field, bool nullAllowed);
  llvm::Error readModel(const json::Value *value);
  llvm::Error readVocab(const json::Object &vocab);
  llvm::Error duplicateId(const json::Object &vocab, uint32_t id);
  llvm::Error readMerges(const json::Array &merges);
  llvm::Error readAddedTokens(const json::Value *value);
  llvm::Error readAddedToken(const json::Value &value, size_t index,
                             AddedToken &token);

  /// The bytes that `token` decodes to.
  std::string bytesOf(llvm::StringRef token) const;

  /// model.vocab: tokenIds until the added tokens join it, which they do
  /// last.
  const llvm::StringMap<uint32_t> &vocab() const { return tokenizer->tokenIds; }

  std::string name;
  std::unique_ptr<BpeTokenizer> tokenizer;
};

llvm::Expected<const json::Object *>
TokenizerJsonReader::object(const json::Value *value,
                            const llvm::Twine &field) {
  if (!value)
    return fail(field, "missing");
  if (const json::Object *object = value->getAsObject())
    return object;
  return fail(field, "must be an object, not " + kindName(*value));
}

llvm::Expected<llvm::StringRef>
TokenizerJsonReader::string(const json::Object &object, llvm::StringRef key,
                            const llvm::Twine &field) {
  const json::Value *value = object.get(key);
  if (!value)
    return fail(field, "missing");
  if (std::optional<llvm::StringRef> text = value->getAsString())
    return *text;
  return fail(field, "must be a string, not " + kindName(*value));
}

llvm::Expected<bool>
TokenizerJsonReader::boolean(const json::Object &object, llvm::StringRef key,
                             const llvm::Twine &field,
                             std::optional<bool> fallback) {
  const json::Value *value = object.get(key);
  if (!value) {
    if (fallback)
      return *fallback;
    return fail(field, "missing");
  }
  if (std::optional<bool> flag = value->getAsBoolean())
    return *flag;
  return fail(field, "must be true or false, not " + kindName(*value));
}

std::string TokenizerJsonReader::bytesOf(llvm::StringRef token) const {
  std::string bytes;
  if (!fromByteLevel(token, bytes))
    bytes = token.str();
  return bytes;
}

llvm::Error TokenizerJsonReader::readNormalizer(const json::Value *value,
                                                const std::string &field) {
  if (isNull(value))
    return llvm::Error::success();
  llvm::Expected<const json::Object *> normalizer = object(value, field);
  if (!normalizer)
    return normalizer.takeError();
  llvm::Expected<llvm::StringRef> type =
      string(**normalizer, "type", field + ".type");
  if (!type)
    return type.takeError();
  if (*type == "NFC") {
    tokenizer->nfc = true;
    return llvm::Error::success();
  }
  if (*type != "Sequence")
    return unsupported(field + ".type", *type,
                       "\"NFC\", a \"Sequence\" of those, or null");
  const json::Value *members = (*normalizer)->get("normalizers");
  const json::Array *list = members ? members->getAsArray() : nullptr;
  if (!list)
    return fail(field + ".normalizers", notAnArray(members));
  for (auto [index, member] : llvm::enumerate(*list)) {
    std::string memberField =
        field + ".normalizers[" + std::to_string(index) + "]";
    if (isNull(&member))
      return fail(memberField, "must be an object, not null");
    if (llvm::Error error = readNormalizer(&member, memberField))
      return error;
  }
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::readSplit(const json::Object &split,
                                           const std::string &field) {
  llvm::Expected<const json::Object *> pattern =
      object(split.get("pattern"), field + ".pattern");
  if (!pattern)
    return pattern.takeError();
  if ((*pattern)->get("String"))
    return fail(field + ".pattern",
                "a String (literal) pattern is not supported (supported: "
                "{\"Regex\": ...})");
  llvm::Expected<llvm::StringRef> regex =
      string(**pattern, "Regex", field + ".pattern.Regex");
  if (!regex)
    return regex.takeError();
  llvm::Expected<llvm::StringRef> behavior =
      string(split, "behavior", field + ".behavior");
  if (!behavior)
    return behavior.takeError();
  if (*behavior != "Isolated")
    return unsupported(field + ".behavior", *behavior, "\"Isolated\"");
  llvm::Expected<bool> invert =
      boolean(split, "invert", field + ".invert", std::nullopt);
  if (!invert)
    return invert.takeError();
  if (*invert)
    return fail(field + ".invert", "true is not supported (supported: false)");
  llvm::Expected<RegexSplitter> splitter = RegexSplitter::compile(*regex);
  if (!splitter)
    return fail(field + ".pattern.Regex", llvm::toString(splitter.takeError()));
  tokenizer->splitter = std::move(*splitter);
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::useGpt2Split(const std::string &field) {
  llvm::Expected<RegexSplitter> splitter =
      RegexSplitter::compile(gpt2SplitPattern);
  if (!splitter)
    return fail(field + ".use_regex", llvm::toString(splitter.takeError()));
  tokenizer->splitter = std::move(*splitter);
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::readByteLevel(const json::Object &byteLevel,
                                               const std::string &field,
                                               bool &useRegex) {
  llvm::Expected<bool> prefixSpace = boolean(
      byteLevel, "add_prefix_space", field + ".add_prefix_space", std::nullopt);
  if (!prefixSpace)
    return prefixSpace.takeError();
  if (*prefixSpace)
    return fail(field + ".add_prefix_space",
                "true is not supported (supported: false)");
  // Hugging Face's default for a missing use_regex is true.
  llvm::Expected<bool> regex =
      boolean(byteLevel, "use_regex", field + ".use_regex", true);
  if (!regex)
    return regex.takeError();
  useRegex = *regex;
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::readPreTokenizer(const json::Value *value) {
  static constexpr char supported[] =
      "a \"Sequence\" of \"Split\" (Regex, Isolated) and \"ByteLevel\" "
      "(use_regex: false), or a lone \"ByteLevel\"";
  auto unsupportedHere = [&](const llvm::Twine &field, llvm::StringRef what) {
    return fail(field,
                what + " is not supported (supported: " + supported + ")");
  };
  if (isNull(value))
    return unsupportedHere("pre_tokenizer", "null");
  llvm::Expected<const json::Object *> preTokenizer =
      object(value, "pre_tokenizer");
  if (!preTokenizer)
    return preTokenizer.takeError();
  llvm::Expected<llvm::StringRef> type =
      string(**preTokenizer, "type", "pre_tokenizer.type");
  if (!type)
    return type.takeError();
  bool useRegex = true;
  if (*type == "ByteLevel") {
    if (llvm::Error error =
            readByteLevel(**preTokenizer, "pre_tokenizer", useRegex))
      return error;
    return useRegex ? useGpt2Split("pre_tokenizer") : llvm::Error::success();
  }
  if (*type != "Sequence")
    return unsupportedHere("pre_tokenizer.type", quoted(*type));

  const json::Value *members = (*preTokenizer)->get("pretokenizers");
  const json::Array *list = members ? members->getAsArray() : nullptr;
  if (!list)
    return fail("pre_tokenizer.pretokenizers", notAnArray(members));
  if (list->empty() || list->size() > 2)
    return unsupportedHere("pre_tokenizer.pretokenizers",
                           "a sequence of " + std::to_string(list->size()) +
                               " steps");
  // [Split, ByteLevel] or [ByteLevel]: check the types first, so that the
  // message is about the step that is wrong.
  llvm::SmallVector<const json::Object *, 2> steps;
  for (auto [index, member] : llvm::enumerate(*list)) {
    std::string field =
        "pre_tokenizer.pretokenizers[" + std::to_string(index) + "]";
    llvm::Expected<const json::Object *> step = object(&member, field);
    if (!step)
      return step.takeError();
    llvm::Expected<llvm::StringRef> stepType =
        string(**step, "type", field + ".type");
    if (!stepType)
      return stepType.takeError();
    llvm::StringRef expected =
        index + 1 == list->size() ? "ByteLevel" : "Split";
    if (*stepType != expected)
      return unsupportedHere(field + ".type", quoted(*stepType) + " here");
    steps.push_back(*step);
  }
  std::string byteLevelField =
      "pre_tokenizer.pretokenizers[" + std::to_string(steps.size() - 1) + "]";
  if (steps.size() == 2)
    if (llvm::Error error =
            readSplit(*steps[0], "pre_tokenizer.pretokenizers[0]"))
      return error;
  if (llvm::Error error =
          readByteLevel(*steps.back(), byteLevelField, useRegex))
    return error;
  if (!useRegex)
    return llvm::Error::success();
  // ByteLevel's own split after the Split would cut the pieces again.
  if (steps.size() == 2)
    return fail(byteLevelField + ".use_regex",
                "true after a Split is not supported (supported: false)");
  return useGpt2Split(byteLevelField);
}

llvm::Error TokenizerJsonReader::readProcessorOrDecoder(
    const json::Value *value, llvm::StringRef field, bool nullAllowed) {
  std::string supported =
      nullAllowed ? "\"ByteLevel\" or null" : "\"ByteLevel\"";
  if (isNull(value)) {
    if (nullAllowed)
      return llvm::Error::success();
    return fail(field, "null is not supported (supported: " + supported + ")");
  }
  llvm::Expected<const json::Object *> step = object(value, field);
  if (!step)
    return step.takeError();
  llvm::Expected<llvm::StringRef> type =
      string(**step, "type", field + ".type");
  if (!type)
    return type.takeError();
  if (*type != "ByteLevel")
    return unsupported(field + ".type", *type, supported);
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::duplicateId(const json::Object &entries,
                                             uint32_t id) {
  // tokenizers keeps one of two keys with the same id, unpredictably; a
  // decode could then not know which to give.
  llvm::SmallVector<llvm::StringRef, 2> keys;
  for (const auto &entry : entries) {
    std::string problem;
    if (tokenIdOf(entry.second, problem) == id)
      keys.push_back(entry.first);
  }
  llvm::sort(keys);
  return fail("model.vocab", quoted(keys[0]) + " and " + quoted(keys[1]) +
                                 " both have id " + llvm::Twine(id));
}

llvm::Error TokenizerJsonReader::readVocab(const json::Object &entries) {
  llvm::StringMap<uint32_t> &vocab = tokenizer->tokenIds;
  vocab = llvm::StringMap<uint32_t>(entries.size());
  tokenizer->tokenBytes.reserve(entries.size());
  for (const auto &entry : entries) {
    llvm::StringRef key = entry.first;
    std::string problem;
    std::optional<uint32_t> id = tokenIdOf(entry.second, problem);
    if (!id)
      return fail("model.vocab[" + quoted(key) + "]", problem);
    auto [bytes, inserted] = tokenizer->tokenBytes.try_emplace(*id);
    if (!inserted)
      return duplicateId(entries, *id);
    bytes->second = bytesOf(key);
    vocab[key] = *id;
    tokenizer->vocabularySize =
        std::max<int64_t>(tokenizer->vocabularySize, int64_t(*id) + 1);
  }
  for (unsigned byte = 0; byte < 256; ++byte) {
    auto it = vocab.find(
        toByteLevel(llvm::StringRef(reinterpret_cast<const char *>(&byte), 1)));
    if (it != vocab.end())
      tokenizer->model.setByteToken(static_cast<uint8_t>(byte), it->second);
  }
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::readMerges(const json::Array &merges) {
  // Every entry is a string "a b" (files before tokenizers 0.20) or every
  // entry is a pair ["a", "b"]; tokenizers refuses a mix.
  std::optional<bool> pairs;
  uint32_t rank = 0;
  for (auto [index, entry] : llvm::enumerate(merges)) {
    std::string field = "model.merges[" + std::to_string(index) + "]";
    llvm::StringRef left, right;
    std::string shown;
    bool isPair = entry.kind() == json::Value::Array;
    if (!isPair && entry.kind() != json::Value::String)
      return fail(field, "must be a string \"a b\" or a pair [\"a\", \"b\"], "
                         "not " +
                             kindName(entry));
    if (!pairs)
      pairs = isPair;
    if (isPair != *pairs)
      return fail(field, llvm::Twine("is ") + (isPair ? "a pair" : "a string") +
                             " but model.merges[0] is " +
                             (isPair ? "a string" : "a pair") +
                             ": the merges must all be strings or all pairs");
    if (isPair) {
      const json::Array &pair = *entry.getAsArray();
      std::optional<llvm::StringRef> first =
          pair.size() == 2 ? pair[0].getAsString() : std::nullopt;
      std::optional<llvm::StringRef> second =
          pair.size() == 2 ? pair[1].getAsString() : std::nullopt;
      if (!first || !second)
        return fail(field, "must be a pair of two strings");
      left = *first;
      right = *second;
      shown = "[" + quoted(left) + ", " + quoted(right) + "]";
    } else {
      llvm::StringRef line = *entry.getAsString();
      if (line.starts_with("#version"))
        continue;
      shown = quoted(line);
      std::tie(left, right) = line.split(' ');
      if (line.count(' ') != 1)
        return fail(field, shown + " must be two tokens separated by one "
                                   "space");
    }
    auto find = [&](llvm::StringRef token) -> std::optional<uint32_t> {
      auto it = vocab().find(token);
      if (it == vocab().end())
        return std::nullopt;
      return it->second;
    };
    std::optional<uint32_t> leftId = find(left), rightId = find(right);
    for (auto [token, id] :
         {std::pair(left, leftId), std::pair(right, rightId)})
      if (!id)
        return fail(field, shown + " names " + quoted(token) +
                               ", which is not in model.vocab");
    llvm::SmallString<64> merged(left);
    merged += right;
    std::optional<uint32_t> mergedId = find(merged);
    if (!mergedId)
      return fail(field, shown + " makes " + quoted(merged) +
                             ", which is not in model.vocab");
    tokenizer->model.addMerge(*leftId, *rightId, rank++, *mergedId);
  }
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::readModel(const json::Value *value) {
  llvm::Expected<const json::Object *> modelOrError = object(value, "model");
  if (!modelOrError)
    return modelOrError.takeError();
  const json::Object &model = **modelOrError;
  llvm::Expected<llvm::StringRef> type = string(model, "type", "model.type");
  if (!type)
    return type.takeError();
  if (*type != "BPE")
    return unsupported("model.type", *type, "\"BPE\"");

  if (const json::Value *dropout = model.get("dropout"); !isNull(dropout)) {
    std::optional<double> p = dropout->getAsNumber();
    if (!p || *p < 0 || *p > 1)
      return fail("model.dropout", "must be null or a number from 0 to 1");
    if (*p > 0)
      return fail("model.dropout",
                  "values above 0 are not supported (supported: null or 0): "
                  "dropout skips merges at random");
  }
  llvm::Expected<bool> byteFallback =
      boolean(model, "byte_fallback", "model.byte_fallback", false);
  if (!byteFallback)
    return byteFallback.takeError();
  if (*byteFallback)
    return fail("model.byte_fallback",
                "true is not supported (supported: false)");
  for (llvm::StringRef key :
       {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json::Value *affix = model.get(key);
    if (isNull(affix))
      continue;
    std::optional<llvm::StringRef> text = affix->getAsString();
    if (!text)
      return fail("model." + key,
                  "must be a string or null, not " + kindName(*affix));
    if (!text->empty())
      return unsupported("model." + key, *text, "null or \"\"");
  }
  llvm::Expected<bool> fuseUnknown =
      boolean(model, "fuse_unk", "model.fuse_unk", false);
  if (!fuseUnknown)
    return fuseUnknown.takeError();
  llvm::Expected<bool> ignoreMerges =
      boolean(model, "ignore_merges", "model.ignore_merges", false);
  if (!ignoreMerges)
    return ignoreMerges.takeError();

  llvm::Expected<const json::Object *> entries =
      object(model.get("vocab"), "model.vocab");
  if (!entries)
    return entries.takeError();
  if (llvm::Error error = readVocab(**entries))
    return error;
  if (*ignoreMerges)
    for (const auto &entry : vocab()) {
      std::string bytes;
      if (fromByteLevel(entry.first(), bytes))
        tokenizer->model.addWholePieceToken(bytes, entry.second);
    }

  if (const json::Value *unknown = model.get("unk_token"); !isNull(unknown)) {
    std::optional<llvm::StringRef> token = unknown->getAsString();
    if (!token)
      return fail("model.unk_token",
                  "must be a string or null, not " + kindName(*unknown));
    auto it = vocab().find(*token);
    if (it == vocab().end())
      return fail("model.unk_token", quoted(*token) + " is not in model.vocab");
    tokenizer->model.setUnknownToken(it->second, *fuseUnknown);
  }

  const json::Value *merges = model.get("merges");
  if (!merges)
    return fail("model.merges", "missing");
  const json::Array *list = merges->getAsArray();
  if (!list)
    return fail("model.merges", "must be an array, not " + kindName(*merges));
  return readMerges(*list);
}

llvm::Error TokenizerJsonReader::readAddedToken(const json::Value &value,
                                                size_t index,
                                                AddedToken &token) {
  std::string field = "added_tokens[" + std::to_string(index) + "]";
  llvm::Expected<const json::Object *> entry = object(&value, field);
  if (!entry)
    return entry.takeError();
  llvm::Expected<llvm::StringRef> content =
      string(**entry, "content", field + ".content");
  if (!content)
    return content.takeError();
  token.content = content->str();
  // The id must be there, but tokenizers assigns its own (see
  // readAddedTokens), and so does this reader.
  const json::Value *id = (*entry)->get("id");
  if (!id)
    return fail(field + ".id", "missing");
  std::string problem;
  if (!tokenIdOf(*id, problem))
    return fail(field + ".id", problem);
  struct Flag {
    const char *key;
    bool *value;
  };
  bool special = false;
  for (Flag flag :
       {Flag{"single_word", &token.rule.singleWord},
        Flag{"lstrip", &token.rule.lstrip}, Flag{"rstrip", &token.rule.rstrip},
        Flag{"special", &special}}) {
    llvm::Expected<bool> value =
        boolean(**entry, flag.key, field + "." + flag.key, false);
    if (!value)
      return value.takeError();
    *flag.value = *value;
  }
  llvm::Expected<bool> normalized =
      boolean(**entry, "normalized", field + ".normalized", !special);
  if (!normalized)
    return normalized.takeError();
  token.normalized = *normalized;
  return llvm::Error::success();
}

llvm::Error TokenizerJsonReader::readAddedTokens(const json::Value *value) {
  if (isNull(value))
    return llvm::Error::success();
  const json::Array *list = value->getAsArray();
  if (!list)
    return fail("added_tokens", "must be an array, not " + kindName(*value));
  // tokenizers does not trust the ids in the file: a token that is in the
  // vocabulary gets its vocabulary id, any other the next id after the
  // vocabulary's entries and the added tokens so far (added_vocabulary.rs
  // add_tokens). The ids in real files agree.
  const int64_t vocabEntries = static_cast<int64_t>(vocab().size());
  std::optional<int64_t> largestAdded;
  llvm::StringMap<size_t> indexOfContent;
  std::vector<AddedToken> tokens;
  for (auto [index, entry] : llvm::enumerate(*list)) {
    AddedToken token;
    if (llvm::Error error = readAddedToken(entry, index, token))
      return error;
    if (token.content.empty())
      continue; // tokenizers ignores empty tokens
    if (auto known = indexOfContent.find(token.content);
        known != indexOfContent.end()) {
      // The same content again: its flags replace the earlier ones.
      token.id = tokens[known->second].id;
      tokens[known->second] = token;
      continue;
    }
    int64_t id;
    if (auto inVocab = vocab().find(token.content); inVocab != vocab().end())
      id = inVocab->second;
    else if (!largestAdded)
      id = vocabEntries;
    else if (*largestAdded >= vocabEntries || vocabEntries == 0)
      id = *largestAdded + 1;
    else
      id = vocabEntries;
    if (id > INT32_MAX)
      return fail("added_tokens[" + std::to_string(index) + "]",
                  "its id would be above 2147483647");
    largestAdded = std::max(largestAdded.value_or(id), id);
    token.id = static_cast<uint32_t>(id);
    indexOfContent[token.content] = tokens.size();
    tokens.push_back(std::move(token));
  }

  for (AddedToken &token : tokens) {
    token.rule.id = token.id;
    std::string pattern = token.content;
    if (token.normalized && tokenizer->nfc)
      if (llvm::Error error = normalizeNfc(token.content, pattern))
        return error;
    (token.normalized ? tokenizer->normalizedAddedTokens
                      : tokenizer->rawAddedTokens)
        .add(pattern, token.rule);
    // Decoding goes through the byte-level table like any token, from the
    // normalised content for normalized tokens (tokenizers does the same).
    tokenizer->tokenBytes[token.id] = bytesOf(pattern);
    tokenizer->tokenIds[token.content] = token.id;
    tokenizer->vocabularySize =
        std::max<int64_t>(tokenizer->vocabularySize, int64_t(token.id) + 1);
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<BpeTokenizer>>
TokenizerJsonReader::read(llvm::StringRef text) {
  if (nestsTooDeep(text))
    return llvm::createStringError(
        name + ": not valid JSON: arrays and objects nest deeper than " +
        llvm::Twine(deepestNesting) + " levels");
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return llvm::createStringError(
        name + ": not valid JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return llvm::createStringError(name + ": must hold a JSON object, not " +
                                   kindName(*parsed));
  tokenizer.reset(new BpeTokenizer());

  if (const json::Value *version = root->get("version")) {
    std::optional<llvm::StringRef> number = version->getAsString();
    if (!number)
      return fail("version", "must be a string, not " + kindName(*version));
    if (*number != "1.0")
      return unsupported("version", *number, "\"1.0\"");
  }
  if (llvm::Error error = readModel(root->get("model")))
    return std::move(error);
  // Before the added tokens: normalized ones are matched in NFC.
  if (llvm::Error error = readNormalizer(root->get("normalizer"), "normalizer"))
    return std::move(error);
  if (llvm::Error error = readAddedTokens(root->get("added_tokens")))
    return std::move(error);
  if (llvm::Error error = readPreTokenizer(root->get("pre_tokenizer")))
    return std::move(error);
  if (llvm::Error error = readProcessorOrDecoder(
          root->get("post_processor"), "post_processor", /*nullAllowed=*/true))
    return std::move(error);
  if (llvm::Error error = readProcessorOrDecoder(
          root->get("decoder"), "decoder", /*nullAllowed=*/false))
    return std::move(error);
  return std::move(tokenizer);
}

llvm::Expected<std::unique_ptr<BpeTokenizer>>
BpeTokenizer::parse(llvm::StringRef json, llvm::StringRef name) {
  return TokenizerJsonReader(name).read(json);
}

llvm::Expected<std::unique_ptr<BpeTokenizer>>
BpeTokenizer::load(llvm::StringRef path) {
  // A model folder names its tokenizer tokenizer.json.
  llvm::SmallString<256> file(path);
  if (llvm::sys::fs::is_directory(file))
    llvm::sys::path::append(file, "tokenizer.json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> contents =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!contents)
    return llvm::createStringError("cannot read " + file + ": " +
                                   contents.getError().message());
  return parse((*contents)->getBuffer(), file);
}

} // namespace gdn::tokenizer
