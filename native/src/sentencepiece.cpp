// DeBERTa-v3's SentencePiece tokenizer through the sentencepiece library (Debian's
// libsentencepiece-dev), with [CLS]/[SEP]/[PAD] taken from the model's own pieces.
//
// Speed: where the model's pieces never span a space (its spec says so, see
// sentencepiece_splits_on_spaces), each space-separated word is encoded alone and remembered
// (WordCache), as the Hugging Face Unigram model splits on the metaspace and caches words; the
// ids are the same as the whole text's. With the cache off (--word-cache 0) the whole text goes
// to the library in one call (a call per word without the cache is slower than one call).
#include <sentencepiece_processor.h>

#include <cstdint>

#include "errors.h"
#include "tokenizer.h"

namespace rmscore {
namespace {

// A minimal protobuf reader for the few scalar fields of the model's spec we need (the library
// keeps its ModelProto header private). Calls `field(number, value)` for each varint field and
// `message(number, bytes)` for each length-delimited one.
template <class Varint, class Bytes>
bool scan_proto(std::string_view data, Varint&& field, Bytes&& message) {
  size_t i = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; i < data.size() && shift < 64; shift += 7) {
      auto byte = static_cast<uint8_t>(data[i++]);
      v |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  };
  while (i < data.size()) {
    uint64_t key, value;
    if (!varint(key)) return false;
    switch (key & 7) {
      case 0:
        if (!varint(value)) return false;
        field(key >> 3, value);
        break;
      case 1: i += 8; break;
      case 5: i += 4; break;
      case 2:
        if (!varint(value) || value > data.size() - i) return false;
        message(key >> 3, data.substr(i, value));
        i += value;
        break;
      default: return false;
    }
  }
  return i == data.size();
}

}  // namespace

// Field numbers and defaults are sentencepiece_model.proto's.
bool sentencepiece_splits_on_spaces(std::string_view model_proto) {
  uint64_t model_type = 1, split_by_whitespace = 1, suffix = 0, whitespace_only = 0;
  uint64_t dummy_prefix = 1, remove_extra = 1, escape = 1;
  auto ignore = [](uint64_t, auto) {};
  bool specs_ok = true;
  bool ok = scan_proto(
      model_proto, ignore, [&](uint64_t number, std::string_view spec) {
        if (number == 2)  // TrainerSpec
          specs_ok = scan_proto(spec, [&](uint64_t f, uint64_t v) {
            if (f == 3) model_type = v;
            if (f == 22) split_by_whitespace = v;
            if (f == 24) suffix = v;
            if (f == 26) whitespace_only = v;
          }, ignore) && specs_ok;
        if (number == 3)  // NormalizerSpec
          specs_ok = scan_proto(spec, [&](uint64_t f, uint64_t v) {
            if (f == 3) dummy_prefix = v;
            if (f == 4) remove_extra = v;
            if (f == 5) escape = v;
          }, ignore) && specs_ok;
      });
  bool unigram_or_bpe = model_type == 1 || model_type == 2;
  return ok && specs_ok && unigram_or_bpe && split_by_whitespace && !suffix && !whitespace_only && dummy_prefix &&
         remove_extra && escape;
}

namespace {

class SentencePiece : public Tokenizer {
 public:
  SentencePiece(const std::string& model, size_t word_cache) : cache_(word_cache) {
    auto status = spm_.Load(model);
    if (!status.ok()) throw Error(ExitCode::missing_file, "cannot load " + model + ": " + status.ToString());
    cls_ = piece("[CLS]");
    sep_ = piece("[SEP]");
    pad_ = piece("[PAD]");
    splits_on_spaces_ = sentencepiece_splits_on_spaces(spm_.serialized_model_proto());
    // Word by word without the cache is slower than the whole text (a library call per word).
    by_word_ = splits_on_spaces_ && word_cache > 0;
  }

  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int64_t> ids;
    ids.reserve(text.size() / 3 + 4);
    auto encode_text = [this](std::string_view t, std::vector<int64_t>& out) {
      std::vector<int> piece_ids;
      spm_.Encode(t, &piece_ids);
      out.insert(out.end(), piece_ids.begin(), piece_ids.end());
    };
    if (by_word_) cache_.encode_words(text, ids, encode_text);
    else encode_text(text, ids);
    return ids;
  }

  int64_t cls_id() const override { return cls_; }
  int64_t sep_id() const override { return sep_; }
  int64_t pad_id() const override { return pad_; }
  size_t vocab_size() const override { return static_cast<size_t>(spm_.GetPieceSize()); }
  std::string kind() const override { return "sentencepiece"; }
  std::string word_mode() const override {
    if (!splits_on_spaces_) return "whole text (the model's pieces may span spaces)";
    if (!by_word_) return "whole text (word cache off)";
    return "by word, cache of " + std::to_string(cache_.capacity()) + " words";
  }

 private:
  int64_t piece(const std::string& name) const {
    int id = spm_.PieceToId(name);
    if (id == spm_.unk_id() && name != "[UNK]") throw Error(ExitCode::mismatch, "SentencePiece model lacks " + name);
    return id;
  }

  sentencepiece::SentencePieceProcessor spm_;
  WordCache cache_;
  bool splits_on_spaces_ = false, by_word_ = false;
  int64_t cls_, sep_, pad_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece(const std::string& spm_model, size_t word_cache) {
  return std::make_unique<SentencePiece>(spm_model, word_cache);
}

}  // namespace rmscore
