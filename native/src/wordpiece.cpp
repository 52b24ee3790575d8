// BERT-uncased WordPiece, id-exact with the Hugging Face tokenizers library:
// BertNormalizer (clean text, space out CJK, strip accents via NFD, lowercase),
// BertPreTokenizer (split on whitespace, isolate punctuation), greedy longest-match WordPiece.
#include <algorithm>
#include <fstream>
#include <string_view>
#include <unordered_map>
#include <utf8proc.h>

#include "errors.h"
#include "tokenizer.h"
#include "unicode.h"

namespace rmscore {
namespace {

constexpr size_t kMaxCharsPerWord = 100;

bool is_control(utf8proc_int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CS:
      return true;
    default:
      return false;
  }
}

bool is_punctuation(utf8proc_int32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_cjk(utf8proc_int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_ascii(const std::string& text) {
  for (unsigned char c : text)
    if (c >= 0x80) return false;
  return true;
}

// Length in bytes of the UTF-8 character starting with byte `lead`.
size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

class WordPiece : public Tokenizer {
 public:
  WordPiece(const std::string& vocab_txt, bool lowercase) : lowercase_(lowercase) {
    std::ifstream in(vocab_txt);
    if (!in) throw Error(ExitCode::missing_file, "vocabulary not found: " + vocab_txt);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      pieces_.push_back(line);
    }
    // Views into pieces_, which no longer changes: lookups need no string copies. Continuation
    // pieces ("##ing") are keyed without their prefix.
    for (size_t id = 0; id < pieces_.size(); ++id) {
      std::string_view piece = pieces_[id];
      bool continuation = piece.size() > 2 && piece.substr(0, 2) == "##";
      auto& map = continuation ? continuations_ : words_;
      map.emplace(continuation ? piece.substr(2) : piece, static_cast<int64_t>(id));
      longest_ = std::max(longest_, piece.size());
    }
    unk_ = lookup("[UNK]");
    cls_ = lookup("[CLS]");
    sep_ = lookup("[SEP]");
    pad_ = lookup("[PAD]");
  }

  std::vector<int64_t> encode(const std::string& text) const override {
    std::string norm = normalize(text);
    std::vector<int64_t> ids;
    ids.reserve(norm.size() / 3 + 4);
    size_t word_start = 0, word_chars = 0;
    auto flush = [&](size_t end) {
      if (word_chars > 0) wordpiece(std::string_view(norm).substr(word_start, end - word_start), word_chars, ids);
      word_chars = 0;
    };
    for (size_t i = 0; i < norm.size();) {
      unsigned char lead = static_cast<unsigned char>(norm[i]);
      size_t n = utf8_length(lead);
      utf8proc_int32_t c = lead;
      if (n > 1) utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(norm.data() + i), n, &c);
      if (c == ' ' || (n > 1 && is_whitespace(c))) {
        flush(i);
      } else if (is_punctuation(c)) {
        flush(i);
        wordpiece(std::string_view(norm).substr(i, n), 1, ids);
      } else {
        if (word_chars == 0) word_start = i;
        ++word_chars;
      }
      i += n;
    }
    flush(norm.size());
    return ids;
  }

  int64_t cls_id() const override { return cls_; }
  int64_t sep_id() const override { return sep_; }
  int64_t pad_id() const override { return pad_; }
  size_t vocab_size() const override { return pieces_.size(); }
  std::string kind() const override { return "wordpiece"; }

 private:
  int64_t lookup(const std::string& token) const {
    auto it = words_.find(token);
    if (it == words_.end()) throw Error(ExitCode::mismatch, "vocabulary lacks " + token);
    return it->second;
  }

  // BertNormalizer: drop NUL, U+FFFD and control characters, any whitespace becomes a space,
  // CJK ideographs are spaced out; then (uncased) strip accents (NFD, drop nonspacing marks) and
  // lowercase. Returns UTF-8 in which every whitespace is a plain space.
  std::string normalize(const std::string& text) const {
    std::string out;
    out.reserve(text.size() + 8);
    if (is_ascii(text)) {  // the common case: no decomposition, no CJK, a byte table is enough
      for (unsigned char c : text) {
        if (c == '\t' || c == '\n' || c == '\r' || c == ' ') out.push_back(' ');
        else if (c < 0x20 || c == 0x7F) continue;  // control characters
        else out.push_back(lowercase_ && c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : static_cast<char>(c));
      }
      return out;
    }
    for (utf8proc_int32_t c : decode_utf8(text)) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      if (is_whitespace(c)) {
        out.push_back(' ');
      } else if (is_cjk(c)) {
        out.push_back(' ');
        append_utf8(out, c);
        out.push_back(' ');
      } else {
        append_utf8(out, c);
      }
    }
    if (!lowercase_) return out;
    utf8proc_uint8_t* nfd = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(out.data()),
                                      static_cast<utf8proc_ssize_t>(out.size()), &nfd,
                                      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
    if (n < 0) return {};
    std::string decomposed(reinterpret_cast<char*>(nfd), static_cast<size_t>(n));
    free(nfd);
    out.clear();
    for (utf8proc_int32_t c : decode_utf8(decomposed)) {
      if (utf8proc_category(c) == UTF8PROC_CATEGORY_MN) continue;
      append_utf8(out, utf8proc_tolower(c));
    }
    return out;
  }

  // Greedy longest match; one unmatchable piece makes the whole word [UNK].
  void wordpiece(std::string_view word, size_t chars, std::vector<int64_t>& ids) const {
    if (chars > kMaxCharsPerWord) {
      ids.push_back(unk_);
      return;
    }
    size_t start = 0, first = ids.size();
    while (start < word.size()) {
      const auto& map = start > 0 ? continuations_ : words_;
      // No piece is longer than the longest in the vocabulary: start there, on a character boundary.
      size_t end = std::min(word.size(), start + longest_);
      while (end > start && end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
      int64_t found = -1;
      while (end > start) {
        auto it = map.find(word.substr(start, end - start));
        if (it != map.end()) {
          found = it->second;
          break;
        }
        do --end;  // back one UTF-8 character
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (found < 0) {
        ids.resize(first);
        ids.push_back(unk_);
        return;
      }
      ids.push_back(found);
      start = end;
    }
  }

  std::vector<std::string> pieces_;
  std::unordered_map<std::string_view, int64_t> words_, continuations_;
  size_t longest_ = 0;
  bool lowercase_;
  int64_t unk_, cls_, sep_, pad_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_wordpiece(const std::string& vocab_txt, bool lowercase) {
  return std::make_unique<WordPiece>(vocab_txt, lowercase);
}

}  // namespace rmscore
