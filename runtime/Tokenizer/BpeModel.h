//===- BpeModel.h - byte-pair merging of one piece --------------*- C++ -*-===//
//
// The BPE model of a byte-level tokenizer works on the raw bytes of one
// pre-tokenizer piece: every byte starts as the token of its byte-level
// character, then the adjacent pair with the best (lowest) merge rank is
// replaced by its merge, the leftmost first among equal ranks, until no
// adjacent pair has a merge. This is Hugging Face's word.rs merge_all (a
// heap keyed by rank and position, stale entries skipped), which gives the
// same tokens as GPT-2's reference loop.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_TOKENIZER_BPEMODEL_H
#define GDN_RUNTIME_TOKENIZER_BPEMODEL_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace gdn::tokenizer {

class BpeModel {
public:
  /// Memory one encode call reuses across its pieces.
  struct Scratch {
    struct Symbol {
      uint32_t id;
      int32_t prev;
      int32_t next;
      bool alive;
    };
    struct Candidate {
      uint32_t rank;
      int32_t position;
      uint32_t id;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    /// The tokens of short pieces seen so far, since text repeats its
    /// words: piece -> (first, count) in cachedIds. Per call, so that
    /// threads share nothing.
    llvm::StringMap<std::pair<uint32_t, uint32_t>> cache;
    std::vector<int64_t> cachedIds;
  };

  /// The token of the byte-level character of `byte`.
  void setByteToken(uint8_t byte, uint32_t id) { byteTokens[byte] = id; }
  /// Merging `left` and `right` gives `merged`; `rank` orders the merges
  /// (lower first). A pair given twice keeps the later merge, as Hugging
  /// Face does.
  void addMerge(uint32_t left, uint32_t right, uint32_t rank, uint32_t merged);
  /// Bytes without a token become `id` (model.unk_token), runs of them one
  /// `id` if `fuse`; without an unknown token they are dropped.
  void setUnknownToken(uint32_t id, bool fuse) {
    unknownToken = id;
    fuseUnknown = fuse;
  }
  /// model.ignore_merges: a piece that is a vocabulary token (`bytes`) is
  /// that token, whatever the merges would make of it.
  void addWholePieceToken(llvm::StringRef bytes, uint32_t id) {
    wholePieceTokens[bytes] = id;
  }

  /// Appends the tokens of `piece` to `ids`.
  void encode(llvm::StringRef piece, std::vector<int64_t> &ids,
              Scratch &scratch) const;

private:
  struct Merge {
    uint32_t rank;
    uint32_t merged;
  };
  const Merge *findMerge(uint32_t left, uint32_t right) const;
  void merge(llvm::StringRef piece, std::vector<int64_t> &ids,
             Scratch &scratch) const;

  std::array<std::optional<uint32_t>, 256> byteTokens;
  /// (left << 32 | right) -> merge.
  llvm::DenseMap<uint64_t, Merge> merges;
  std::optional<uint32_t> unknownToken;
  bool fuseUnknown = false;
  llvm::StringMap<uint32_t> wholePieceTokens;
};

} // namespace gdn::tokenizer

#endif // GDN_RUNTIME_TOKENIZER_BPEMODEL_H
