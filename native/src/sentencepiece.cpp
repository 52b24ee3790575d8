// DeBERTa-v3's SentencePiece tokenizer: the sentencepiece library (Debian's
// libsentencepiece-dev) normalizes, and the Hugging Face Unigram model's own Viterbi search
// (UnigramLattice below) segments, so that the ids are those of the fast tokenizer the
// PyTorch reference uses. [CLS]/[SEP]/[PAD] are taken from the model's own pieces.
//
// Speed: where the model's pieces never span a space (its spec says so, see
// sentencepiece_splits_on_spaces), each space-separated word is encoded alone and remembered
// (WordCache), as the Hugging Face Unigram model splits on the metaspace and caches words; the
// ids are the same as the whole text's. With the cache off (--word-cache 0) the whole text is
// normalized in one library call.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>

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
bool sentencepiece_is_unigram(std::string_view model_proto) {
  uint64_t model_type = 1;
  auto ignore = [](uint64_t, auto) {};
  bool ok = scan_proto(model_proto, ignore, [&](uint64_t number, std::string_view spec) {
    if (number == 2) scan_proto(spec, [&](uint64_t f, uint64_t v) { if (f == 3) model_type = v; }, ignore);
  });
  return ok && model_type == 1;
}

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

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;  // a stray byte: one position, as an unknown piece
}

// The segmentation of the Hugging Face tokenizers' Unigram model (Unigram::encode_optimized),
// not libsentencepiece's. Both find a highest-scoring path, but where two segmentations score
// the same ("1,000" as "0 00" or "00 0") they keep different ones, and the ids then differ.
// Hugging Face's rule, followed here step for step: scores are doubles (the model's floats),
// each path's score is summed left to right, start positions are visited left to right and
// the pieces from one start shortest first, and a node keeps the first candidate unless a
// later one scores strictly higher. So among equal scores the path whose last piece starts
// earliest wins. Every piece is a candidate, as in Hugging Face's trie; an unknown character
// scores the lowest piece score minus 10, and a run of unknown pieces becomes one [UNK].
class UnigramLattice {
 public:
  explicit UnigramLattice(const sentencepiece::SentencePieceProcessor& spm) : unk_id_(spm.unk_id()) {
    double min_score = std::numeric_limits<double>::max();
    piece_at_.push_back(-1);  // the root
    for (int id = 0; id < spm.GetPieceSize(); ++id) {
      const std::string& piece = spm.IdToPiece(id);
      double score = spm.GetScore(id);
      scores_.push_back(score);
      min_score = std::min(min_score, score);
      uint32_t node = 0;
      for (unsigned char byte : piece) {
        auto [it, added] = children_.try_emplace(key(node, byte), static_cast<uint32_t>(piece_at_.size()));
        if (added) piece_at_.push_back(-1);
        node = it->second;
      }
      if (node != 0 && piece_at_[node] < 0) piece_at_[node] = id;
    }
    unk_score_ = min_score - 10.0;
  }

  // Appends the ids of normalized text (metaspaces for spaces), split before each metaspace
  // as Hugging Face's Metaspace pre-tokenizer does.
  void encode(std::string_view normalized, std::vector<int64_t>& ids) const {
    size_t start = 0;
    while (start < normalized.size()) {
      size_t next = normalized.find(kMetaspace, start + 1);
      if (next == std::string_view::npos) next = normalized.size();
      segment(normalized.substr(start, next - start), ids);
      start = next;
    }
  }

 private:
  struct Best {
    double score = 0;
    int64_t start = -1;  // -1: no path reaches here yet
    int64_t id = 0;
  };

  static uint64_t key(uint32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }

  static void offer(Best& node, double score, size_t start, int64_t id) {
    if (node.start < 0 || score > node.score) node = {score, static_cast<int64_t>(start), id};
  }

  void segment(std::string_view word, std::vector<int64_t>& ids) const {
    std::vector<Best> best(word.size() + 1);
    for (size_t start = 0; start < word.size();) {
      double base = best[start].score;
      size_t char_length = std::min(utf8_length(word[start]), word.size() - start);
      bool single_char_piece = false;
      uint32_t node = 0;
      for (size_t end = start; end < word.size();) {
        auto it = children_.find(key(node, word[end++]));
        if (it == children_.end()) break;
        node = it->second;
        int32_t id = piece_at_[node];
        if (id < 0) continue;
        offer(best[end], base + scores_[id], start, id);
        single_char_piece |= end - start == char_length;
      }
      if (!single_char_piece) offer(best[start + char_length], base + unk_score_, start, unk_id_);
      start += char_length;
    }
    size_t first = ids.size();
    for (size_t end = word.size(); end > 0; end = static_cast<size_t>(best[end].start)) {
      bool fused = best[end].id == unk_id_ && ids.size() > first && ids.back() == unk_id_;
      if (!fused) ids.push_back(best[end].id);
    }
    std::reverse(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
  }

  std::unordered_map<uint64_t, uint32_t> children_;  // (node, byte) -> child node
  std::vector<int32_t> piece_at_;                    // node -> the piece ending there, or -1
  std::vector<double> scores_;
  double unk_score_ = 0;
  int64_t unk_id_;
};

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
    // Hugging Face converts a unigram model to its Unigram model; a BPE one keeps the library's ids.
    if (sentencepiece_is_unigram(spm_.serialized_model_proto())) lattice_ = std::make_unique<UnigramLattice>(spm_);
    // Where the normalizer keeps every printable ASCII character (DeBERTa's nmt_nfkc does), a
    // word of them normalizes to itself after a metaspace, and the library call is skipped.
    plain_ascii_kept_ = true;
    for (char c = '!'; c <= '~' && plain_ascii_kept_; ++c)
      plain_ascii_kept_ = library_normalize(std::string(1, c)) == std::string(kMetaspace) + c;
  }

  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int64_t> ids;
    ids.reserve(text.size() / 3 + 4);
    auto encode_text = [this](std::string_view t, std::vector<int64_t>& out) {
      if (lattice_) return lattice_->encode(normalize(t), out);
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

  // The library's normalization of a text (spaces as metaspaces, the dummy prefix): the pieces
  // it segments the text into, joined (an unknown piece is its normalized text).
  std::string library_normalize(std::string_view text) const {
    std::vector<std::string> pieces;
    spm_.Encode(text, &pieces);
    std::string normalized;
    for (const auto& p : pieces) normalized += p;
    return normalized;
  }

  std::string normalize(std::string_view text) const {
    bool plain = plain_ascii_kept_ && !text.empty();
    for (size_t i = 0; plain && i < text.size(); ++i) plain = text[i] >= '!' && text[i] <= '~';
    return plain ? std::string(kMetaspace) + std::string(text) : library_normalize(text);
  }

  sentencepiece::SentencePieceProcessor spm_;
  std::unique_ptr<UnigramLattice> lattice_;
  WordCache cache_;
  bool splits_on_spaces_ = false, by_word_ = false, plain_ascii_kept_ = false;
  int64_t cls_, sep_, pad_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece(const std::string& spm_model, size_t word_cache) {
  return std::make_unique<SentencePiece>(spm_model, word_cache);
}

}  // namespace rmscore
