// data/tokenizer.cpp — load_tokenizer: the saved file's kind picks the tokenizer.
#include "data/tokenizer.h"

#include "data/sentencepiece_tokenizer.h"
#include "data/wordpiece.h"

namespace mase::data {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path) {
  if (path.extension() == ".model") return SentencePieceTokenizer::load(path);
  return WordPiece::load(path);
}

}  // namespace mase::data
