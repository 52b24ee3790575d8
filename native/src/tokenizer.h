// Native tokenizers for the two reward models, id-exact with the Hugging Face fast tokenizers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rmscore {

// One tokenized (prompt, response) pair: [CLS] prompt [SEP] response [SEP].
struct Encoding {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> token_type_ids;  // 0 for [CLS] prompt [SEP], 1 for response [SEP]
  size_t size() const { return input_ids.size(); }
};

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

  // The pair with the model card's template, truncated longest_first to max_length tokens.
  Encoding encode_pair(const std::string& prompt, const std::string& response, size_t max_length) const;
};

// Truncates two sequences longest-first so that together they hold at most `budget` tokens,
// exactly as the Hugging Face tokenizers library does for TruncationStrategy::LongestFirst.
void truncate_longest_first(std::vector<int64_t>& first, std::vector<int64_t>& second, size_t budget);

// Loads the tokenizer of a Hugging Face tokenizer/model folder: SentencePiece when the folder
// holds spm.model (DeBERTa-v3), else WordPiece from vocab.txt (BERT/ELECTRA).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& folder);

std::unique_ptr<Tokenizer> make_wordpiece(const std::string& vocab_txt, bool lowercase);
std::unique_ptr<Tokenizer> make_sentencepiece(const std::string& spm_model);

}  // namespace rmscore
