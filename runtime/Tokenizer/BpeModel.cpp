//===- BpeModel.cpp - byte-pair merging of one piece ----------------------===//

#include "BpeModel.h"

#include <algorithm>

namespace gdn::tokenizer {

static uint64_t pairKey(uint32_t left, uint32_t right) {
  return uint64_t(left) << 32 | right;
}

void BpeModel::addMerge(uint32_t left, uint32_t right, uint32_t rank,
                        uint32_t merged) {
  merges[pairKey(left, right)] = {rank, merged};
}

const BpeModel::Merge *BpeModel::findMerge(uint32_t left,
                                           uint32_t right) const {
  auto it = merges.find(pairKey(left, right));
  return it == merges.end() ? nullptr : &it->second;
}

void BpeModel::encode(llvm::StringRef piece, std::vector<int64_t> &ids,
                      Scratch &scratch) const {
  if (piece.empty())
    return;
  if (!wholePieceTokens.empty()) {
    auto whole = wholePieceTokens.find(piece);
    if (whole != wholePieceTokens.end()) {
      ids.push_back(whole->second);
      return;
    }
  }
  // Long pieces (runs of white space or of one script) rarely repeat, and
  // the cache is bounded: it starts afresh when full.
  constexpr size_t longestCached = 32, mostCached = 1 << 16;
  if (piece.size() > longestCached) {
    merge(piece, ids, scratch);
    return;
  }
  auto [cached, inserted] = scratch.cache.try_emplace(piece);
  std::vector<int64_t> &cachedIds = scratch.cachedIds;
  if (!inserted) {
    auto [first, count] = cached->second;
    ids.insert(ids.end(), cachedIds.begin() + first,
               cachedIds.begin() + first + count);
    return;
  }
  size_t before = ids.size();
  merge(piece, ids, scratch);
  cached->second = {static_cast<uint32_t>(cachedIds.size()),
                    static_cast<uint32_t>(ids.size() - before)};
  cachedIds.insert(cachedIds.end(), ids.begin() + before, ids.end());
  if (scratch.cache.size() >= mostCached) {
    scratch.cache.clear();
    cachedIds.clear();
  }
}

void BpeModel::merge(llvm::StringRef piece, std::vector<int64_t> &ids,
                     Scratch &scratch) const {
  using Symbol = Scratch::Symbol;
  using Candidate = Scratch::Candidate;
  std::vector<Symbol> &symbols = scratch.symbols;
  symbols.clear();
  auto append = [&](uint32_t id) {
    int32_t position = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, position - 1, position + 1, true});
  };
  bool unknownPending = false;
  for (char c : piece) {
    if (std::optional<uint32_t> id = byteTokens[static_cast<uint8_t>(c)]) {
      if (unknownPending)
        append(*unknownToken);
      unknownPending = false;
      append(*id);
    } else if (unknownToken) {
      if (unknownPending && !fuseUnknown)
        append(*unknownToken);
      unknownPending = true;
    }
  }
  if (unknownPending)
    append(*unknownToken);
  if (symbols.empty())
    return;
  symbols.back().next = -1;

  // A min-heap on (rank, position): the best merge, leftmost on ties.
  std::vector<Candidate> &heap = scratch.heap;
  heap.clear();
  auto worse = [](const Candidate &a, const Candidate &b) {
    return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
  };
  auto propose = [&](int32_t position) {
    const Symbol &left = symbols[position];
    if (const Merge *merge = findMerge(left.id, symbols[left.next].id)) {
      heap.push_back({merge->rank, position, merge->merged});
      std::push_heap(heap.begin(), heap.end(), worse);
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
    propose(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), worse);
    Candidate top = heap.back();
    heap.pop_back();
    Symbol &left = symbols[top.position];
    if (!left.alive || left.next < 0)
      continue;
    // Skip entries made stale by an earlier merge of either symbol.
    const Merge *merge = findMerge(left.id, symbols[left.next].id);
    if (!merge || merge->merged != top.id)
      continue;
    Symbol &right = symbols[left.next];
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0)
      symbols[left.next].prev = top.position;
    if (left.prev >= 0)
      propose(left.prev);
    if (left.next >= 0)
      propose(top.position);
  }

  // The first symbol is never merged away (merges keep the left one).
  for (int32_t i = 0; i >= 0; i = symbols[i].next)
    ids.push_back(symbols[i].id);
}

} // namespace gdn::tokenizer
