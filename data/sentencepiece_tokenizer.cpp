// data/sentencepiece_tokenizer.cpp — training, loading and using a sentencepiece model.
#include "data/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <utf8proc.h>

#include <cstdio>
#include <unordered_map>

#include "data/io.h"
#include "runtime/error.h"
#include "runtime/parallel.h"

namespace mase::data {

SentencePieceTokenizer::SentencePieceTokenizer(std::string serialized, std::string source)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()),
      serialized_(std::move(serialized)) {
  auto st = sp_->LoadFromSerializedProto(serialized_);
  MASE_CHECK(st.ok(), IoError, "[sentencepiece] expected a sentencepiece model in ", source,
             ", got ", st.ToString(),
             " (a vocab.txt is WordPiece's: --tokenizer wordpiece; a model mase trained and "
             "cached that no longer loads: delete it to retrain)");
  special_.pad = sp_->pad_id();
  special_.unk = sp_->unk_id();
  special_.cls = sp_->bos_id();
  special_.sep = sp_->eos_id();
  int mask = sp_->PieceToId("[MASK]");
  special_.mask = mask == special_.unk ? -1 : mask;
  MASE_CHECK(special_.pad >= 0 && special_.cls >= 0 && special_.sep >= 0, IoError,
             "[sentencepiece] expected pad, bos ([CLS]) and eos ([SEP]) ids in ", source,
             ", got pad ", special_.pad, ", bos ", special_.cls, ", eos ", special_.sep,
             " (train it with mase: it sets pad_id=0 bos_id=2 eos_id=3)");
  fingerprint_ = fnv1a(serialized_, fnv1a("sentencepiece-v1\n"));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(
    const std::filesystem::path& model) {
  return std::make_unique<SentencePieceTokenizer>(read_file(model, "sentencepiece"),
                                                  model.string());
}

int32_t SentencePieceTokenizer::vocab_size() const { return sp_->GetPieceSize(); }

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int> pieces;
  auto st = sp_->Encode(text, &pieces);  // const and thread-safe
  MASE_CHECK(st.ok(), IoError, "[sentencepiece] encode failed: ", st.ToString());
  std::vector<int32_t> ids;
  ids.reserve(pieces.size() + 2);
  if (add_special) ids.push_back(special_.cls);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  if (add_special) ids.push_back(special_.sep);
  return ids;
}

std::vector<std::string> SentencePieceTokenizer::pieces(std::string_view text) const {
  std::vector<std::string> out;
  auto st = sp_->Encode(text, &out);
  MASE_CHECK(st.ok(), IoError, "[sentencepiece] encode failed: ", st.ToString());
  return out;
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
  std::vector<int> keep;
  for (int32_t i : ids) {
    MASE_CHECK(i >= 0 && i < vocab_size(), ConfigError, "[sentencepiece] expected an id in [0, ",
               vocab_size(), "), got ", i);
    if (i != special_.pad && i != special_.cls && i != special_.sep && i != special_.mask)
      keep.push_back(i);
  }
  std::string text;
  auto st = sp_->Decode(keep, &text);
  MASE_CHECK(st.ok(), IoError, "[sentencepiece] decode failed: ", st.ToString());
  return text;
}

std::string SentencePieceTokenizer::piece(int32_t id) const {
  MASE_CHECK(id >= 0 && id < vocab_size(), ConfigError, "[sentencepiece] expected an id in [0, ",
             vocab_size(), "), got ", id);
  return sp_->IdToPiece(id);
}

void SentencePieceTokenizer::save(const std::filesystem::path& path) const {
  write_text_atomic(path.string(), serialized_);
}

namespace {
// True when `text` has a letter, number, punctuation or symbol. sentencepiece 0.1.97 aborts
// the process (a CHECK, not a Status) when the training text has no such character at all,
// e.g. only whitespace; train_sentencepiece refuses that case first.
bool has_visible_char(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + i,
                              static_cast<utf8proc_ssize_t>(text.size() - i), &c);
    if (n <= 0) return false;  // not UTF-8: sentencepiece would reject it anyway
    i += static_cast<size_t>(n);
    // utf8proc orders its categories Cn, Lu..Lo, Mn..Me, Nd..No, Pc..Po, Sm..So, Z*, C*.
    const utf8proc_category_t cat = utf8proc_category(c);
    if ((cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
        (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_SO)) {
      return true;
    }
  }
  return false;
}

// Feeds training texts to sentencepiece without writing them to a file first.
class TextIterator : public sentencepiece::SentenceIterator {
 public:
  explicit TextIterator(const std::vector<std::string_view>& texts) : texts_(texts) { load(); }
  bool done() const override { return i_ >= texts_.size(); }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (!done()) value_.assign(texts_[i_]);
  }
  const std::vector<std::string_view>& texts_;
  size_t i_ = 0;
  std::string value_;
};
}  // namespace

std::unique_ptr<SentencePieceTokenizer> train_sentencepiece(
    const std::vector<std::string_view>& texts, const SentencePieceOptions& opt) {
  MASE_CHECK(opt.vocab_size >= 8, ConfigError, "[sentencepiece] expected a vocab size >= 8, got ",
             opt.vocab_size);
  bool visible = false;
  for (std::string_view t : texts) {
    if (t.size() <= static_cast<size_t>(opt.max_sentence_bytes) && has_visible_char(t)) {
      visible = true;
      break;
    }
  }
  MASE_CHECK(visible, ConfigError, "[sentencepiece] expected training texts with visible ",
             "characters, got ", texts.size(), " texts of whitespace, control characters or over ",
             opt.max_sentence_bytes, " bytes");
  const int threads = opt.threads > 0 ? opt.threads : num_threads();
  std::unordered_map<std::string, std::string> args = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(opt.vocab_size)},
      {"character_coverage", std::to_string(opt.character_coverage)},
      {"normalization_rule_name", "nmt_nfkc_cf"},
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "2"},
      {"eos_id", "3"},
      {"pad_piece", "[PAD]"},
      {"unk_piece", "[UNK]"},
      {"bos_piece", "[CLS]"},
      {"eos_piece", "[SEP]"},
      {"control_symbols", "[MASK]"},
      {"max_sentence_length", std::to_string(opt.max_sentence_bytes)},
      {"num_threads", std::to_string(threads)},
      {"minloglevel", "2"},  // errors only: training otherwise logs hundreds of lines
  };
  TextIterator it(texts);
  std::string model;
  auto st = sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
  MASE_CHECK(st.ok(), ConfigError, "[sentencepiece] training failed: ", st.ToString(),
             " (--vocab-size must fit the text: more than its distinct characters, fewer than "
             "the pieces it can give)");
  return std::make_unique<SentencePieceTokenizer>(std::move(model), "the model just trained");
}

std::string sentencepiece_model_name(std::string_view dataset, uint64_t data_fingerprint,
                                     const SentencePieceOptions& opt) {
  char fp[17];
  std::snprintf(fp, sizeof fp, "%016llx", static_cast<unsigned long long>(data_fingerprint));
  // character_coverage in ppm keeps the name free of dots: 0.9995 -> "cov999500", 1 ->
  // "cov1000000".
  return cat(dataset, "-sentencepiece-unigram-", opt.vocab_size, "-nfkc_cf-cov",
             static_cast<long>(opt.character_coverage * 1e6 + 0.5), "-", fp, ".model");
}

}  // namespace mase::data
