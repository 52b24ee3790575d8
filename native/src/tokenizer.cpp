#include "tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "errors.h"

namespace rmscore {

void truncate_longest_first(std::vector<int64_t>& first, std::vector<int64_t>& second, size_t budget) {
  if (first.size() + second.size() <= budget) return;
  // As the tokenizers library does it: with n1 the shorter length, the longer one keeps
  // max(n1, budget - n1); if both still do not fit, each gets half, the longer one (the second
  // on a tie) the odd token.
  bool swapped = first.size() > second.size();
  size_t n1 = std::min(first.size(), second.size()), n2;
  n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
  if (n1 + n2 > budget) {
    n1 = budget / 2;
    n2 = n1 + budget % 2;
  }
  if (swapped) std::swap(n1, n2);
  first.resize(std::min(first.size(), n1));
  second.resize(std::min(second.size(), n2));
}

void WordCache::encode_words(std::string_view text, std::vector<int64_t>& ids, const Encode& encode) const {
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) encode_word(text.substr(start, end - start), ids, encode);
    start = end + 1;
  }
}

void WordCache::encode_word(std::string_view word, std::vector<int64_t>& ids, const Encode& encode) const {
  std::string key(word);
  {
    std::shared_lock read(mutex_);
    auto it = words_.find(key);
    if (it != words_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int64_t> word_ids;
  encode(word, word_ids);
  ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  if (!full_.load(std::memory_order_relaxed)) {  // full: stop adding, as HF does
    std::unique_lock write(mutex_);
    if (words_.size() < capacity_) words_.emplace(std::move(key), std::move(word_ids));
    full_.store(words_.size() >= capacity_, std::memory_order_relaxed);
  }
}

Encoding Tokenizer::encode_pair(const std::string& prompt, const std::string& response,
                                size_t max_length) const {
  Encoding enc;
  if (response.empty()) {  // as the HF tokenizers treat an empty text_pair: one sequence
    std::vector<int64_t> a = encode(prompt);
    a.resize(std::min(a.size(), max_length >= 2 ? max_length - 2 : 0));
    enc.input_ids.push_back(cls_id());
    enc.input_ids.insert(enc.input_ids.end(), a.begin(), a.end());
    enc.input_ids.push_back(sep_id());
    enc.token_type_ids.assign(enc.input_ids.size(), 0);
    return enc;
  }
  std::vector<int64_t> a = encode(prompt), b = encode(response);
  truncate_longest_first(a, b, max_length >= 3 ? max_length - 3 : 0);
  enc.input_ids.reserve(a.size() + b.size() + 3);
  enc.input_ids.push_back(cls_id());
  enc.input_ids.insert(enc.input_ids.end(), a.begin(), a.end());
  enc.input_ids.push_back(sep_id());
  enc.token_type_ids.assign(enc.input_ids.size(), 0);
  enc.input_ids.insert(enc.input_ids.end(), b.begin(), b.end());
  enc.input_ids.push_back(sep_id());
  enc.token_type_ids.resize(enc.input_ids.size(), 1);
  return enc;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& folder, size_t word_cache, const std::string& chat_form) {
  namespace fs = std::filesystem;
  fs::path dir(folder);
  if (!fs::is_directory(dir)) throw Error(ExitCode::missing_file, "tokenizer folder not found: " + folder);
  if (fs::exists(dir / "spm.model")) return make_sentencepiece((dir / "spm.model").string(), word_cache);
  nlohmann::json config;
  if (fs::exists(dir / "tokenizer_config.json")) {
    std::ifstream in(dir / "tokenizer_config.json");
    config = nlohmann::json::parse(in, nullptr, false);
  }
  if (fs::exists(dir / "tokenizer.json")) {
    std::ifstream in(dir / "tokenizer.json");
    auto spec = nlohmann::json::parse(in, nullptr, false);
    if (spec.is_object() && spec.contains("model") && spec["model"].value("type", "") == "BPE") {
      const auto& pad = config.is_object() ? config.value("pad_token", nlohmann::json()) : nlohmann::json();
      std::string pad_token = pad.is_string() ? pad.get<std::string>() : pad.is_object() ? pad.value("content", "") : "";
      if (pad_token.empty())
        throw Error(ExitCode::mismatch, "tokenizer_config.json names no pad_token: a batch cannot be padded (" + folder + ")");
      if (chat_form.empty())
        throw Error(ExitCode::usage, "a byte-level BPE row is chat-templated: --chat-form FILE is required (rmbench.models.chat_form writes it)");
      return make_byte_bpe((dir / "tokenizer.json").string(), pad_token, word_cache, ChatForm::load(chat_form));
    }
  }
  if (!fs::exists(dir / "vocab.txt"))
    throw Error(ExitCode::missing_file, "tokenizer folder has neither spm.model, a BPE tokenizer.json nor vocab.txt: " + folder);
  bool lowercase = true;
  if (config.is_object() && config.contains("do_lower_case")) lowercase = config["do_lower_case"].get<bool>();
  return make_wordpiece((dir / "vocab.txt").string(), lowercase);
}

}  // namespace rmscore
