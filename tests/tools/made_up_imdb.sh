# tests/tools/made_up_imdb.sh — sourced by the mase-train scripts of tests/tools: made_up_imdb
# DIR writes DIR/data/imdb/aclImdb (24 reviews per label and split: "great"/"awful" words
# among neutral ones) and DIR/vocab.txt, the WordPiece vocabulary of those words.
made_up_imdb() {
  for split in train test; do
    for i in $(seq 0 23); do
      mkdir -p "$1/data/imdb/aclImdb/$split/pos" "$1/data/imdb/aclImdb/$split/neg"
      echo "the film was great and i loved it $i" > "$1/data/imdb/aclImdb/$split/pos/${i}_9.txt"
      echo "the film was awful and i hated it $i" > "$1/data/imdb/aclImdb/$split/neg/${i}_2.txt"
    done
  done
  printf '%s\n' '[PAD]' '[UNK]' '[CLS]' '[SEP]' '[MASK]' the film was great and i loved it \
    awful hated 0 1 2 3 4 5 6 7 8 9 > "$1/vocab.txt"
}
