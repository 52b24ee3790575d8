// DeBERTa-v3's SentencePiece tokenizer through the sentencepiece library (Debian's
// libsentencepiece-dev), with [CLS]/[SEP]/[PAD] taken from the model's own pieces.
#include <sentencepiece_processor.h>

#include "errors.h"
#include "tokenizer.h"

namespace rmscore {
namespace {

class SentencePiece : public Tokenizer {
 public:
  explicit SentencePiece(const std::string& model) {
    auto status = spm_.Load(model);
    if (!status.ok()) throw Error(ExitCode::missing_file, "cannot load " + model + ": " + status.ToString());
    cls_ = piece("[CLS]");
    sep_ = piece("[SEP]");
    pad_ = piece("[PAD]");
  }

  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int> ids;
    spm_.Encode(text, &ids);
    return {ids.begin(), ids.end()};
  }

  int64_t cls_id() const override { return cls_; }
  int64_t sep_id() const override { return sep_; }
  int64_t pad_id() const override { return pad_; }
  size_t vocab_size() const override { return static_cast<size_t>(spm_.GetPieceSize()); }
  std::string kind() const override { return "sentencepiece"; }

 private:
  int64_t piece(const std::string& name) const {
    int id = spm_.PieceToId(name);
    if (id == spm_.unk_id() && name != "[UNK]") throw Error(ExitCode::mismatch, "SentencePiece model lacks " + name);
    return id;
  }

  sentencepiece::SentencePieceProcessor spm_;
  int64_t cls_, sep_, pad_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece(const std::string& spm_model) {
  return std::make_unique<SentencePiece>(spm_model);
}

}  // namespace rmscore
