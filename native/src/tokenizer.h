// Native tokenizers for the reward models, id-exact with the Hugging Face fast tokenizers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rmscore {

// One tokenized (prompt, response) row: [CLS] prompt [SEP] response [SEP] for an encoder, the
// dialogue in its chat template for a decoder.
struct Encoding {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> token_type_ids;  // pair: 0 for [CLS] prompt [SEP], 1 for response [SEP]; chat: 0
  size_t size() const { return input_ids.size(); }
};

// As many words as the Hugging Face tokenizers' model caches hold by default.
constexpr size_t kDefaultWordCache = 10000;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of one text, without special tokens.
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  virtual int64_t cls_id() const = 0;
  virtual int64_t sep_id() const = 0;
  virtual int64_t pad_id() const = 0;
  virtual size_t vocab_size() const = 0;
  virtual std::string kind() const = 0;
  // How texts are split before the model sees them, for the result file (e.g. the word cache).
  virtual std::string word_mode() const { return "whole text"; }

  // The pair with the model card's template, truncated longest_first to max_length tokens.
  Encoding encode_pair(const std::string& prompt, const std::string& response, size_t max_length) const;
  // A row as its model takes it: the pair template here; a chat-templated tokenizer overrides it.
  virtual Encoding encode_row(const std::string& prompt, const std::string& response, size_t max_length) const {
    return encode_pair(prompt, response, max_length);
  }
  // A text its sender rendered already, as the Hugging Face tokenizer takes one text: here with
  // [CLS] and [SEP] around it; a chat-templated tokenizer adds nothing (its markup is in the text).
  virtual Encoding encode_text(const std::string& text, size_t max_length) const {
    return encode_pair(text, "", max_length);
  }
};

// The token ids of words, remembered up to `capacity` words, as the Hugging Face
// tokenizers' Unigram and BPE models keep theirs: where a tokenizer's pieces never span a space, a word's ids do
// not depend on its neighbours. Safe to share between threads (the concurrency study does).
class WordCache {
 public:
  using Encode = std::function<void(std::string_view word, std::vector<int64_t>& ids)>;
  explicit WordCache(size_t capacity) : capacity_(capacity) {}
  // Appends the ids of every space-separated word of `text` to `ids`, encoding the words it has
  // not seen with `encode`.
  void encode_words(std::string_view text, std::vector<int64_t>& ids, const Encode& encode) const;
  // Appends the ids of one word, encoding it with `encode` unless it is remembered.
  void encode_word(std::string_view word, std::vector<int64_t>& ids, const Encode& encode) const;
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  mutable std::shared_mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> words_;
  // Set once the cache is full, so that a miss after that takes no exclusive lock (with many
  // client threads on one engine, every miss would otherwise queue them all to add nothing).
  mutable std::atomic<bool> full_{false};
};

// Truncates two sequences longest-first so that together they hold at most `budget` tokens,
// exactly as the Hugging Face tokenizers library does for TruncationStrategy::LongestFirst.
void truncate_longest_first(std::vector<int64_t>& first, std::vector<int64_t>& second, size_t budget);

using Messages = std::vector<std::pair<std::string, std::string>>;  // (role, content) turns

// A model's chat template compiled by rmbench (rmbench.models.chat_form, which says how): the text
// between two turns by their kinds (start, user, assistant, final: the reply, end) and an edit of
// each kind's content. Exact for the rows its caller has checked against the template.
class ChatForm {
 public:
  static ChatForm load(const std::string& path);
  std::string render(const Messages& messages) const;

 private:
  const std::string& glue(const std::string& before, const std::string& after) const;
  std::unordered_map<std::string, std::string> glue_;
  std::unordered_map<std::string, std::string> edits_;  // kind -> none | strip | lstrip_newlines
};

// Loads the tokenizer of a Hugging Face tokenizer/model folder: SentencePiece when the folder
// holds spm.model (DeBERTa-v3), byte-level BPE when its tokenizer.json is a BPE model (Qwen2/3,
// Llama-3; its rows rendered by the chat form in the file `chat_form`), else WordPiece from
// vocab.txt (BERT/ELECTRA). `word_cache` bounds the words a SentencePiece or BPE tokenizer
// remembers (0: none).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& folder, size_t word_cache = kDefaultWordCache,
                                          const std::string& chat_form = "");

std::unique_ptr<Tokenizer> make_wordpiece(const std::string& vocab_txt, bool lowercase);
std::unique_ptr<Tokenizer> make_sentencepiece(const std::string& spm_model, size_t word_cache);
std::unique_ptr<Tokenizer> make_byte_bpe(const std::string& tokenizer_json, const std::string& pad_token,
                                         size_t word_cache, ChatForm form);

// An hh-rlhf (prompt, reply) row as chat messages (role, content), as rmbench.models.build.chat_messages
// makes them: each Human or Assistant turn of the prompt stripped, the closing empty Assistant
// turn dropped, text before the first turn opening the first user message, the reply last.
Messages chat_messages(const std::string& prompt, const std::string& response);

// Whether a SentencePiece model (its serialized ModelProto) encodes a text word by word to the
// same ids as the whole text: its pieces never cross a space (unigram or BPE trained with
// split_by_whitespace, no whitespace-only pieces, the space as a prefix) and its normalizer turns
// any run of spaces into one word boundary. False for a spec it cannot read.
bool sentencepiece_splits_on_spaces(std::string_view model_proto);

// Whether a SentencePiece model is a unigram model (Hugging Face's converter makes it a Unigram
// model, whose segmentation the native tokenizer follows). False for a spec it cannot read.
bool sentencepiece_is_unigram(std::string_view model_proto);

}  // namespace rmscore
