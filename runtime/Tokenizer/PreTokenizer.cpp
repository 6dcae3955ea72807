//===- PreTokenizer.cpp - the regex split of Qwen tokenizers --------------===//
//
// PCRE2 is compiled with PCRE2_UTF | PCRE2_UCP, so that \p{..}, \s and
// caseless matching are Unicode-aware as in Oniguruma, and JIT-compiled
// when the platform allows it. Encode validates the text once, so matching
// runs with PCRE2_NO_UTF_CHECK (otherwise every call rescans the rest of
// the text).
//
//===----------------------------------------------------------------------===//

#include "PreTokenizer.h"

#include "UnicodeClasses.h"
#include "Utf8.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace gdn::tokenizer {

const char gpt2SplitPattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+)"
                                R"(| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct RegexSplitter::Code {
  explicit Code(pcre2_code *code) : code(code) {}
  Code(const Code &) = delete;
  Code &operator=(const Code &) = delete;
  ~Code() { pcre2_code_free(code); }
  pcre2_code *code;
};

static std::string pcre2Message(int errorCode) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(errorCode, buffer, sizeof(buffer)) < 0)
    return "PCRE2 error " + std::to_string(errorCode);
  return reinterpret_cast<const char *>(buffer);
}

/// The members of the White_Space class, for use inside brackets.
static std::string whiteSpaceClassItems() {
  std::string items;
  llvm::raw_string_ostream os(items);
  for (const CodePointRange &range : whiteSpaceRanges()) {
    os << llvm::format("\\x{%X}", range.first);
    if (range.last != range.first)
      os << llvm::format("-\\x{%X}", range.last);
  }
  return items;
}

llvm::Expected<std::string> rewriteWhiteSpaceEscapes(llvm::StringRef pattern) {
  const std::string items = whiteSpaceClassItems();
  std::string out;
  out.reserve(pattern.size() + 4 * items.size());
  bool inClass = false;
  size_t i = 0;
  // Copies pattern[i, end) and moves past it.
  auto copyTo = [&](size_t end) {
    end = std::min(end, pattern.size());
    out.append(pattern.data() + i, end - i);
    i = end;
  };
  while (i < pattern.size()) {
    char c = pattern[i];
    char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (c == '\\') {
      if (next == 's') {
        out += inClass ? items : "[" + items + "]";
        i += 2;
      } else if (next == 'S') {
        if (inClass)
          return llvm::createStringError(
              "\\S inside a character class (offset %zu) is not supported", i);
        out += "[^" + items + "]";
        i += 2;
      } else if (next == 'Q') {
        // \Q...\E is literal text: nothing in it is an escape.
        size_t end = pattern.find("\\E", i + 2);
        copyTo(end == llvm::StringRef::npos ? end : end + 2);
      } else if (next == 'c') {
        copyTo(i + 3); // \cX: X is a character, even '[' or '\'
      } else {
        copyTo(i + 2);
      }
      continue;
    }
    if (inClass) {
      if (c == '[' && next == ':') {
        // A POSIX class such as [:alpha:] inside brackets.
        size_t end = pattern.find(":]", i + 2);
        copyTo(end == llvm::StringRef::npos ? end : end + 2);
        continue;
      }
      inClass = c != ']';
      copyTo(i + 1);
      continue;
    }
    if (c == '[') {
      inClass = true;
      copyTo(i + 1);
      if (i < pattern.size() && pattern[i] == '^')
        copyTo(i + 1);
      if (i < pattern.size() && pattern[i] == ']')
        copyTo(i + 1); // a ']' first in a class is a member
      continue;
    }
    if (pattern.substr(i).starts_with("(?#")) {
      size_t end = pattern.find(')', i);
      copyTo(end == llvm::StringRef::npos ? end : end + 1);
      continue;
    }
    copyTo(i + 1);
  }
  return out;
}

llvm::Expected<RegexSplitter> RegexSplitter::compile(llvm::StringRef pattern) {
  llvm::Expected<std::string> rewritten = rewriteWhiteSpaceEscapes(pattern);
  if (!rewritten)
    return rewritten.takeError();
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  // PCRE2_NEVER_BACKSLASH_C: \C matches one byte, which could cut a
  // character and hand BPE half of it.
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(rewritten->data()), rewritten->size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &errorCode, &errorOffset,
      nullptr);
  if (!code) {
    std::string where = "offset " + std::to_string(errorOffset);
    if (*rewritten != pattern)
      where += " of the pattern with \\s spelled out: " + *rewritten;
    return llvm::createStringError("PCRE2 cannot compile it: %s (at %s)",
                                   pcre2Message(errorCode).c_str(),
                                   where.c_str());
  }
  // Without JIT support (some platforms) the interpreter gives the same
  // matches, only slower.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return RegexSplitter(std::make_shared<const Code>(code));
}

namespace {
/// What one split needs of its own, since PCRE2 forbids sharing it between
/// concurrent matches: match data, a match context for the limit, and a
/// JIT stack made on demand.
class MatchState {
public:
  explicit MatchState(const pcre2_code *code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)),
        context(pcre2_match_context_create(nullptr)) {}
  MatchState(const MatchState &) = delete;
  MatchState &operator=(const MatchState &) = delete;
  ~MatchState() {
    pcre2_jit_stack_free(jitStack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  /// Gives JIT code a stack larger than its 32 KiB default.
  bool growJitStack() {
    if (jitStack)
      return false;
    jitStack = pcre2_jit_stack_create(32 << 10, 64 << 20, nullptr);
    if (!jitStack)
      return false;
    pcre2_jit_stack_assign(context, nullptr, jitStack);
    return true;
  }
  pcre2_match_data *data;
  pcre2_match_context *context;
  pcre2_jit_stack *jitStack = nullptr;
};
} // namespace

llvm::Error RegexSplitter::split(
    llvm::StringRef text,
    llvm::function_ref<llvm::Error(llvm::StringRef)> onPiece) const {
  if (text.empty())
    return llvm::Error::success();
  MatchState match(code->code);
  if (!match.data || !match.context)
    return llvm::createStringError("out of memory for PCRE2 match data");
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pieceStart = 0; // where the next piece (match or gap) begins
  size_t searchFrom = 0;
  while (searchFrom < text.size()) {
    // PCRE2's default limit of 10^7 backtracking steps per match stops
    // Qwen's pattern on a run of 10^7 spaces (\s*[\r\n]+ gives back every
    // space), which is linear work. A limit that grows with the text left
    // lets such runs through and still ends a runaway pattern.
    pcre2_set_match_limit(
        match.context,
        std::max<size_t>(10'000'000, 8 * (text.size() - searchFrom)));
    int rc = pcre2_match(code->code, subject, text.size(), searchFrom,
                         PCRE2_NO_UTF_CHECK, match.data, match.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && match.growJitStack())
      continue;
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0)
      return llvm::createStringError(
          "the pre-tokenizer regex failed at byte %zu: %s", searchFrom,
          pcre2Message(rc).c_str());
    const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.data);
    size_t start = ovector[0], end = ovector[1];
    if (start > pieceStart)
      if (llvm::Error error = onPiece(text.slice(pieceStart, start)))
        return error;
    if (end > start) {
      if (llvm::Error error = onPiece(text.slice(start, end)))
        return error;
      pieceStart = searchFrom = end;
      continue;
    }
    // An empty match yields no piece but cuts the text, and the search
    // goes on one character later, as Oniguruma's find_iter does. (Qwen's
    // patterns never match empty.)
    pieceStart = start;
    if (start == text.size())
      break;
    uint32_t codePoint;
    searchFrom =
        start + std::max(1, decodeUtf8(text.drop_front(start), codePoint));
  }
  if (pieceStart < text.size())
    return onPiece(text.drop_front(pieceStart));
  return llvm::Error::success();
}

} // namespace gdn::tokenizer
