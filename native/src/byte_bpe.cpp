// Byte-level BPE (Qwen2/Qwen3, Llama-3), id-exact with the Hugging Face tokenizer of the same
// tokenizer.json: added tokens matched in the raw text first, then per stretch between them NFC
// (where the file normalizes), the file's split pattern (Qwen2's or Llama-3's), the text's UTF-8
// bytes, merges by rank (a piece that is a token stays whole where the file ignores merges). A
// decoder row is its dialogue rendered by the model's chat form and cut at max_length from the end.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "errors.h"
#include "tokenizer.h"
#include "unicode.h"

namespace rmscore {
namespace {

using json = nlohmann::json;

// GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for themselves, the other bytes for
// U+0100 onwards in byte order. Vocab strings are written in these characters.
std::array<utf8proc_int32_t, 256> byte_chars() {
  std::array<utf8proc_int32_t, 256> chars{};
  utf8proc_int32_t shifted = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    chars[b] = printable ? b : shifted++;
  }
  return chars;
}

// A vocab string back to the bytes it stands for; false where a character is not a byte's.
bool vocab_bytes(const std::string& token, const std::unordered_map<utf8proc_int32_t, char>& byte_of,
                 std::string& bytes) {
  bytes.clear();
  for (utf8proc_int32_t c : decode_utf8(token)) {
    auto it = byte_of.find(c);
    if (it == byte_of.end()) return false;
    bytes.push_back(it->second);
  }
  return true;
}

// The split patterns the engine implements, as tokenizer.json writes them, by the longest run of
// digits one piece holds: Qwen2's (one) and Llama-3's (up to three; otherwise the same).
const std::string kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Those patterns by hand over code points:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,max_digits} | ?[^\s\p{L}\p{N}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
// Returns the end of the piece that starts at i (the first alternative that matches there).
size_t piece_end(const Codepoints& c, size_t i, size_t max_digits) {
  const size_t n = c.size();
  // (?i) folds case as Unicode does: ASCII, and the long s (U+017F) is an s
  auto lower = [&](size_t k) {
    if (k >= n) return '\0';
    if (c[k] == 0x17F) return 's';
    return c[k] < 0x80 ? static_cast<char>(std::tolower(c[k])) : '\0';
  };
  auto other = [&](size_t k) { return k < n && !is_whitespace(c[k]) && !is_letter(c[k]) && !is_number(c[k]); };
  auto newline = [&](size_t k) { return c[k] == '\r' || c[k] == '\n'; };
  if (c[i] == '\'') {  // contractions, case-insensitive
    char a = lower(i + 1), b = lower(i + 2);
    if ((a == 'r' || a == 'v') && b == 'e') return i + 3;
    if (a == 'l' && b == 'l') return i + 3;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  }
  size_t letters = i;
  if (!is_letter(c[i]) && !is_number(c[i]) && !newline(i) && i + 1 < n && is_letter(c[i + 1])) letters = i + 1;
  if (is_letter(c[letters])) {
    while (letters < n && is_letter(c[letters])) ++letters;
    return letters;
  }
  if (is_number(c[i])) {
    size_t end = i + 1;
    while (end < n && end - i < max_digits && is_number(c[end])) ++end;
    return end;
  }
  size_t start = (c[i] == ' ' && other(i + 1)) ? i + 1 : i;
  if (other(start)) {
    size_t k = start;
    while (other(k)) ++k;
    while (k < n && newline(k)) ++k;
    return k;
  }
  // whitespace: up to the run's last line break if it has one, else all of a run at the end,
  // else all but its last character (which then opens the next piece), else the one character
  size_t end = i;
  while (end < n && is_whitespace(c[end])) ++end;
  for (size_t k = end; k > i; --k)
    if (newline(k - 1)) return k;
  if (end == n || end - i == 1) return end;
  return end - 1;
}

class ByteBpe final : public Tokenizer {
 public:
  ByteBpe(const json& spec, const std::string& pad_token, size_t word_cache, ChatForm form)
      : form_(std::move(form)), cache_(word_cache) {
    const json& model = spec.at("model");
    if (model.value("type", "") != "BPE") throw Error(ExitCode::mismatch, "tokenizer.json's model is not BPE");
    read_normalizer(spec.value("normalizer", json()));
    read_split(spec.value("pre_tokenizer", json()));
    whole_pieces_ = model.value("ignore_merges", false);
    auto chars = byte_chars();
    std::unordered_map<utf8proc_int32_t, char> byte_of;
    for (int b = 0; b < 256; ++b) byte_of[chars[b]] = static_cast<char>(b);
    std::string bytes;
    for (const auto& [token, id] : model.at("vocab").items()) {
      if (!vocab_bytes(token, byte_of, bytes))
        throw Error(ExitCode::mismatch, "vocab entry '" + token + "' is not byte-level (not a byte-level BPE)");
      ids_[bytes] = id.get<int64_t>();
    }
    for (int b = 0; b < 256; ++b) {
      auto it = ids_.find(std::string(1, static_cast<char>(b)));
      byte_ids_[b] = it == ids_.end() ? -1 : it->second;
    }
    int64_t rank = 0;
    for (const auto& merge : model.at("merges")) {
      std::string left, right;
      if (merge.is_string()) {  // "a b" (older files) or ["a", "b"]
        const std::string& m = merge.get_ref<const std::string&>();
        size_t space = m.find(' ');
        left = m.substr(0, space), right = m.substr(space + 1);
      } else {
        left = merge.at(0), right = merge.at(1);
      }
      std::string a, b;
      if (!vocab_bytes(left, byte_of, a) || !vocab_bytes(right, byte_of, b))
        throw Error(ExitCode::mismatch, "merge '" + left + " " + right + "' is not byte-level");
      auto ia = ids_.find(a), ib = ids_.find(b), ab = ids_.find(a + b);
      if (ia == ids_.end() || ib == ids_.end() || ab == ids_.end())
        throw Error(ExitCode::mismatch, "merge '" + left + " " + right + "' names a token the vocab lacks");
      merges_.emplace(pair_key(ia->second, ib->second), Merge{rank++, ab->second});
    }
    for (const auto& added : spec.value("added_tokens", json::array())) {
      std::string content = added.at("content");
      if (added.value("lstrip", false) || added.value("rstrip", false) || added.value("single_word", false) ||
          added.value("normalized", false))
        throw Error(ExitCode::mismatch, "added token '" + content + "' strips, matches single words or is normalized: not supported");
      added_.push_back({content, added.at("id").get<int64_t>()});
    }
    // leftmost-longest: at a position, the longest added token that starts there
    std::sort(added_.begin(), added_.end(), [](const auto& x, const auto& y) { return x.text.size() > y.text.size(); });
    for (const auto& t : added_)
      if (!t.text.empty()) opens_added_[static_cast<unsigned char>(t.text[0])] = true;
    auto pad = std::find_if(added_.begin(), added_.end(), [&](const auto& t) { return t.text == pad_token; });
    if (pad == added_.end()) throw Error(ExitCode::mismatch, "pad token '" + pad_token + "' is not an added token");
    pad_id_ = pad->id;
  }

  std::vector<int64_t> encode(const std::string& text) const override {
    if (!valid_utf8(text)) throw Error(ExitCode::malformed_input, "text is not valid UTF-8");
    std::vector<int64_t> ids;
    size_t start = 0;
    for (size_t pos = 0; pos < text.size(); ++pos) {
      if (!opens_added_[static_cast<unsigned char>(text[pos])]) continue;
      for (const auto& t : added_) {  // longest first
        if (text.compare(pos, t.text.size(), t.text) != 0) continue;
        encode_ordinary(std::string_view(text).substr(start, pos - start), ids);
        ids.push_back(t.id);
        start = pos + t.text.size();
        pos = start - 1;
        break;
      }
    }
    encode_ordinary(std::string_view(text).substr(start), ids);
    return ids;
  }

  Encoding encode_row(const std::string& prompt, const std::string& response, size_t max_length) const override {
    if (!valid_utf8(prompt) || !valid_utf8(response)) throw Error(ExitCode::malformed_input, "text is not valid UTF-8");
    return encode_text(form_.render(chat_messages(prompt, response)), max_length);
  }

  Encoding encode_text(const std::string& text, size_t max_length) const override {
    Encoding e;  // encode() refuses text that is not UTF-8
    e.input_ids = encode(text);
    e.input_ids.resize(std::min(e.input_ids.size(), max_length));
    e.token_type_ids.assign(e.input_ids.size(), 0);
    return e;
  }

  int64_t cls_id() const override { throw Error(ExitCode::usage, "a byte-level BPE row has no [CLS]: it is chat-templated"); }
  int64_t sep_id() const override { throw Error(ExitCode::usage, "a byte-level BPE row has no [SEP]: it is chat-templated"); }
  int64_t pad_id() const override { return pad_id_; }
  size_t vocab_size() const override { return ids_.size() + added_.size(); }
  std::string kind() const override {
    return std::string("byte-level BPE (tokenizer.json") + (nfc_ ? ", NFC" : "") + ", digits by " +
           std::to_string(max_digits_) + "), chat-form rows";
  }
  std::string word_mode() const override {
    return "split pattern pieces, " + std::to_string(cache_.capacity()) + " cached";
  }

 private:
  struct Merge {
    int64_t rank, id;
  };
  struct Added {
    std::string text;
    int64_t id;
  };
  static uint64_t pair_key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b); }

  void read_normalizer(const json& normalizer) {
    if (normalizer.is_null()) return;
    if (normalizer.value("type", "") != "NFC")
      throw Error(ExitCode::mismatch, "tokenizer.json's normalizer is " + normalizer.dump() + ": the engine knows NFC or none");
    nfc_ = true;
  }

  // A Split on one of the known patterns (isolated), then the byte-level mapping without its own regex.
  void read_split(const json& pre) {
    if (!pre.is_object() || pre.value("type", "") != "Sequence")
      throw Error(ExitCode::mismatch, "tokenizer.json's pre-tokenizer is not a split pattern then the byte-level map");
    const json* split = nullptr;
    bool byte_level = false;
    const json steps = pre.value("pretokenizers", json::array());  // `split` points into it
    for (const json& step : steps) {
      std::string type = step.value("type", "");
      if (type == "Split" && !split) split = &step;
      else if (type == "ByteLevel" && !step.value("add_prefix_space", true) && !step.value("use_regex", true)) byte_level = true;
      else throw Error(ExitCode::mismatch, "tokenizer.json's pre-tokenizer step " + step.dump() + " is not one the engine knows");
    }
    std::string pattern = split ? split->value("pattern", json()).value("Regex", "") : "";
    if (!split || !byte_level || split->value("behavior", "") != "Isolated" || split->value("invert", true))
      throw Error(ExitCode::mismatch, "tokenizer.json's pre-tokenizer is not a split pattern then the byte-level map");
    if (pattern == kQwen2Split) max_digits_ = 1;
    else if (pattern == kLlama3Split) max_digits_ = 3;
    else throw Error(ExitCode::mismatch, "tokenizer.json's split pattern " + pattern + " is neither Qwen2's nor Llama-3's");
  }

  // Text without added tokens: NFC, split into pieces, each piece's bytes merged.
  void encode_ordinary(std::string_view raw, std::vector<int64_t>& ids) const {
    if (raw.empty()) return;
    // ASCII is its own NFC: most rows skip the normalizer's copy
    bool ascii = !nfc_ || std::all_of(raw.begin(), raw.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; });
    std::string composed;
    std::string_view text = raw;
    if (!ascii) {
      utf8proc_uint8_t* out = nullptr;
      utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(raw.data()),
                                        static_cast<utf8proc_ssize_t>(raw.size()), &out,
                                        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
      if (n < 0) throw Error(ExitCode::malformed_input, std::string("NFC failed: ") + utf8proc_errmsg(n));
      composed.assign(reinterpret_cast<char*>(out), static_cast<size_t>(n));
      std::free(out);
      text = composed;
    }
    // code points and where each starts in the text: a piece is a slice of the text
    Codepoints c;
    std::vector<size_t> at;
    c.reserve(text.size());
    at.reserve(text.size() + 1);
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    for (size_t k = 0; k < text.size();) {
      utf8proc_int32_t cp;
      utf8proc_ssize_t n = utf8proc_iterate(p + k, static_cast<utf8proc_ssize_t>(text.size() - k), &cp);
      if (n <= 0) throw Error(ExitCode::malformed_input, "text is not valid UTF-8");
      c.push_back(cp);
      at.push_back(k);
      k += static_cast<size_t>(n);
    }
    at.push_back(text.size());
    auto merge_piece = [this](std::string_view word, std::vector<int64_t>& out) { merge(word, out); };
    for (size_t i = 0; i < c.size();) {
      size_t end = piece_end(c, i, max_digits_);
      cache_.encode_word(text.substr(at[i], at[end] - at[i]), ids, merge_piece);
      i = end;
    }
  }

  // Byte-pair merges of one piece, lowest rank first (leftmost among equals), as the tokenizers
  // library's BPE model applies them.
  void merge(std::string_view word, std::vector<int64_t>& out) const {
    if (whole_pieces_) {
      auto whole = ids_.find(std::string(word));
      if (whole != ids_.end()) {
        out.push_back(whole->second);
        return;
      }
    }
    struct Symbol {
      int64_t id;
      int prev, next;
    };
    std::vector<Symbol> symbols;
    for (size_t k = 0; k < word.size(); ++k) {
      int64_t id = byte_ids_[static_cast<unsigned char>(word[k])];
      if (id < 0) throw Error(ExitCode::mismatch, "a byte has no token in this vocab");
      symbols.push_back({id, static_cast<int>(k) - 1, k + 1 < word.size() ? static_cast<int>(k) + 1 : -1});
    }
    struct Candidate {
      int64_t rank;
      int pos;
      int64_t left, right;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
    auto consider = [&](int pos) {
      if (pos < 0 || symbols[pos].next < 0) return;
      auto it = merges_.find(pair_key(symbols[pos].id, symbols[symbols[pos].next].id));
      if (it != merges_.end()) queue.push({it->second.rank, pos, symbols[pos].id, symbols[symbols[pos].next].id});
    };
    for (size_t k = 0; k + 1 < symbols.size(); ++k) consider(static_cast<int>(k));
    while (!queue.empty()) {
      Candidate top = queue.top();
      queue.pop();
      Symbol& s = symbols[top.pos];
      // stale: the left symbol was merged away or changed, or its right neighbour did
      if (s.id != top.left || s.next < 0 || symbols[s.next].id != top.right) continue;
      Symbol& right = symbols[s.next];
      if (right.prev != top.pos) continue;
      s.id = merges_.at(pair_key(top.left, top.right)).id;
      s.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = top.pos;
      right.id = -1, right.prev = right.next = -1;
      consider(s.prev);
      consider(top.pos);
    }
    for (int k = symbols.empty() ? -1 : 0; k >= 0; k = symbols[k].next) out.push_back(symbols[k].id);
  }

  std::unordered_map<std::string, int64_t> ids_;
  std::array<int64_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<Added> added_;
  std::array<bool, 256> opens_added_{};  // bytes an added token starts with
  int64_t pad_id_ = -1;
  bool nfc_ = false, whole_pieces_ = false;
  size_t max_digits_ = 1;
  ChatForm form_;
  WordCache cache_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_bpe(const std::string& tokenizer_json, const std::string& pad_token, size_t word_cache,
                                         ChatForm form) {
  std::ifstream in(tokenizer_json);
  if (!in) throw Error(ExitCode::missing_file, "tokenizer.json not found: " + tokenizer_json);
  json spec = json::parse(in, nullptr, false);
  if (spec.is_discarded()) throw Error(ExitCode::mismatch, tokenizer_json + " is not JSON");
  return std::make_unique<ByteBpe>(spec, pad_token, word_cache, std::move(form));
}

}  // namespace rmscore
