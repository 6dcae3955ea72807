//===- StrictJSON.cpp - JSON parsing for untrusted files ------------------===//

#include "gdn/Frontend/StrictJSON.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

using namespace mlir::gdn;
using llvm::StringRef;

namespace {
/// One open array or object while scanning.
struct Scope {
  bool isObject;
  /// In an object: the next string is a key (after '{' or ',').
  bool expectsKey;
  llvm::StringSet<> keys;
};
} // namespace

/// Scans the structure of `text` without building values: an explicit stack
/// instead of recursion, so that depth costs no stack. Syntax errors are
/// left to llvm::json::parse.
static llvm::Error scan(StringRef text) {
  llvm::SmallVector<Scope, 8> scopes;
  int64_t line = 1;
  auto error = [&](const llvm::Twine &message) {
    return llvm::createStringError("line " + llvm::Twine(line) + ": " +
                                   message);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      break;
    case '{':
    case '[':
      if (scopes.size() >= static_cast<size_t>(kMaxJSONNesting))
        return error("arrays and objects nest deeper than " +
                     llvm::Twine(kMaxJSONNesting) + " levels");
      scopes.push_back({c == '{', c == '{', {}});
      break;
    case '}':
    case ']':
      if (!scopes.empty())
        scopes.pop_back();
      break;
    case ',':
      if (!scopes.empty() && scopes.back().isObject)
        scopes.back().expectsKey = true;
      break;
    case '"': {
      size_t start = ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
        ++i;
      }
      if (!scopes.empty() && scopes.back().expectsKey) {
        StringRef key = text.slice(start, std::min(i, text.size()));
        if (!scopes.back().keys.insert(key).second)
          return error("duplicate key \"" + key + "\"");
        scopes.back().expectsKey = false;
      }
      break;
    }
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9': {
      // A number: its integer part may not start with a 0 followed by a
      // digit.
      size_t digits = c == '-' ? i + 1 : i;
      if (digits + 1 < text.size() && text[digits] == '0' &&
          llvm::isDigit(text[digits + 1]))
        return error("a number with a leading zero (" +
                     text.substr(i, 8).take_until([](char x) {
                       return x == ',' || x == '}' || x == ']' ||
                              llvm::isSpace(x);
                     }) +
                     ")");
      while (i + 1 < text.size() &&
             (llvm::isDigit(text[i + 1]) || text[i + 1] == '.' ||
              text[i + 1] == 'e' || text[i + 1] == 'E' ||
              text[i + 1] == '+' || text[i + 1] == '-'))
        ++i;
      break;
    }
    default:
      break;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Value>
mlir::gdn::parseStrictJSON(StringRef text) {
  if (llvm::Error error = scan(text))
    return std::move(error);
  return llvm::json::parse(text);
}
