//===- BpeTokenizer.cpp - encode and decode -------------------------------===//
//
// The loading half of BpeTokenizer is in TokenizerJson.cpp.
//
//===----------------------------------------------------------------------===//

#include "BpeTokenizer.h"

#include "Normalizer.h"
#include "Utf8.h"

namespace gdn::tokenizer {

llvm::Expected<std::vector<int64_t>>
BpeTokenizer::encode(llvm::StringRef text) const {
  // Every later step (PCRE2 without its own check, NFC, the added-token
  // rules) relies on well-formed text.
  if (std::optional<size_t> offset = findInvalidUtf8(text))
    return llvm::createStringError(
        "the text is not valid UTF-8: byte 0x%02X at offset %zu does not "
        "start a well-formed sequence",
        static_cast<uint8_t>(text[*offset]), *offset);
  std::vector<int64_t> ids;
  BpeModel::Scratch scratch;
  auto onText = [&](llvm::StringRef segment) {
    return encodeSegment(segment, ids, scratch);
  };
  auto onToken = [&](uint32_t id) {
    ids.push_back(id);
    return llvm::Error::success();
  };
  if (llvm::Error error = rawAddedTokens.split(text, onText, onToken))
    return std::move(error);
  return ids;
}

/// One stretch of text between added tokens: each is normalised on its
/// own, and the regex never looks across an added token.
llvm::Error BpeTokenizer::encodeSegment(llvm::StringRef segment,
                                        std::vector<int64_t> &ids,
                                        BpeModel::Scratch &scratch) const {
  std::string normalized;
  if (nfc) {
    if (llvm::Error error = normalizeNfc(segment, normalized))
      return error;
    segment = normalized;
  }
  if (normalizedAddedTokens.empty())
    return encodeNormalized(segment, ids, scratch);
  return normalizedAddedTokens.split(
      segment,
      [&](llvm::StringRef text) {
        return encodeNormalized(text, ids, scratch);
      },
      [&](uint32_t id) {
        ids.push_back(id);
        return llvm::Error::success();
      });
}

llvm::Error BpeTokenizer::encodeNormalized(llvm::StringRef text,
                                           std::vector<int64_t> &ids,
                                           BpeModel::Scratch &scratch) const {
  if (!splitter) {
    model.encode(text, ids, scratch);
    return llvm::Error::success();
  }
  return splitter->split(text, [&](llvm::StringRef piece) {
    model.encode(piece, ids, scratch);
    return llvm::Error::success();
  });
}

llvm::Expected<std::string>
BpeTokenizer::decodeBytes(llvm::ArrayRef<int64_t> ids) const {
  std::string bytes;
  for (auto [index, id] : llvm::enumerate(ids)) {
    // Hugging Face skips ids it does not know; here that is an error, since
    // the ids come from a model built for this tokenizer, and an id outside
    // its vocabulary means the two do not belong together.
    auto token = id >= 0 && id <= INT32_MAX
                     ? tokenBytes.find(static_cast<uint32_t>(id))
                     : tokenBytes.end();
    if (token == tokenBytes.end())
      return llvm::createStringError(
          "ids[%zu] = %lld is not in the vocabulary (vocabulary size %lld)",
          index, static_cast<long long>(id),
          static_cast<long long>(vocabularySize));
    bytes += token->second;
  }
  return bytes;
}

llvm::Expected<std::string>
BpeTokenizer::decode(llvm::ArrayRef<int64_t> ids) const {
  llvm::Expected<std::string> bytes = decodeBytes(ids);
  if (!bytes)
    return bytes.takeError();
  // The repair runs once over the whole sequence: a character split across
  // tokens is whole again.
  std::string text;
  text.reserve(bytes->size());
  appendRepairedUtf8(*bytes, text);
  return text;
}

std::optional<int64_t> BpeTokenizer::tokenId(llvm::StringRef token) const {
  auto it = tokenIds.find(token);
  if (it == tokenIds.end())
    return std::nullopt;
  return it->second;
}

} // namespace gdn::tokenizer
