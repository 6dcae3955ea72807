//===- BpeTokenizer.h - byte-level BPE of tokenizer.json --------*- C++ -*-===//
//
// The tokenizer of Qwen2, Qwen3 and Qwen3.5 models, read from the
// tokenizer.json that Hugging Face tokenizers writes, giving the same ids
// as that library. Encode:
//   1. added tokens are found in the raw text (AddedTokens.h);
//   2. the text between them is normalised to NFC (Normalizer.h), then
//      added tokens marked "normalized" are found in it;
//   3. the rest is split by the pre-tokenizer regex (PreTokenizer.h);
//   4. each piece's bytes are merged by BPE (BpeModel.h).
// Decode maps ids back to bytes through the byte-level table
// (ByteLevel.h) and repairs what is not UTF-8 (Utf8.h).
//
// A loaded tokenizer is immutable: any number of threads may encode and
// decode with it at once.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_BPETOKENIZER_H
#define GDN_RUNTIME_TOKENIZER_BPETOKENIZER_H

#include "AddedTokens.h"
#include "BpeModel.h"
#include "PreTokenizer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gdn::tokenizer {

class BpeTokenizer {
public:
  /// Reads a tokenizer.json, or the one in the folder `path`. Malformed
  /// files and features this tokenizer does not implement are refused; the
  /// message names the file and the JSON field.
  static llvm::Expected<std::unique_ptr<BpeTokenizer>>
  load(llvm::StringRef path);

  /// The same from the file's contents; `name` stands for the file in
  /// messages.
  static llvm::Expected<std::unique_ptr<BpeTokenizer>>
  parse(llvm::StringRef json, llvm::StringRef name);

  /// The ids of `text`, which must be UTF-8 (the error gives the byte
  /// offset where it is not).
  llvm::Expected<std::vector<int64_t>> encode(llvm::StringRef text) const;

  /// The text of `ids`, with U+FFFD for each ill-formed byte sequence.
  llvm::Expected<std::string> decode(llvm::ArrayRef<int64_t> ids) const;

  /// The bytes of `ids`, as they are: for streaming output, where one
  /// character may span tokens and only complete characters are printed.
  llvm::Expected<std::string> decodeBytes(llvm::ArrayRef<int64_t> ids) const;

  /// The id of the token spelled `token` (an added token such as
  /// "<|endoftext|>", or a vocabulary key in byte-level spelling).
  std::optional<int64_t> tokenId(llvm::StringRef token) const;

  /// The largest id plus one (added tokens included).
  int64_t vocabSize() const { return vocabularySize; }

private:
  friend class TokenizerJsonReader;
  BpeTokenizer() = default;

  llvm::Error encodeSegment(llvm::StringRef segment, std::vector<int64_t> &ids,
                            BpeModel::Scratch &scratch) const;
  llvm::Error encodeNormalized(llvm::StringRef text, std::vector<int64_t> &ids,
                               BpeModel::Scratch &scratch) const;

  /// Added tokens matched in the raw text (normalized: false).
  AddedTokenMatcher rawAddedTokens;
  /// Added tokens matched after normalisation (normalized: true).
  AddedTokenMatcher normalizedAddedTokens;
  bool nfc = false;
  /// None: each normalised segment is one piece.
  std::optional<RegexSplitter> splitter;
  BpeModel model;
  /// id -> the bytes it decodes to.
  llvm::DenseMap<uint32_t, std::string> tokenBytes;
  /// Spelling -> id, added tokens over vocabulary keys.
  llvm::StringMap<uint32_t> tokenIds;
  int64_t vocabularySize = 0;
};

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_BPETOKENIZER_H
