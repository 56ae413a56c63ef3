// tests/data/test_imdb_real.cpp — the real IMDb archive from ../shared (skipped when absent):
// 12,500 reviews per split and label, ids 0..12499, ratings on the right side of 5/6, and a
// known first line (see ../shared/data/README.md).
#include "data/imdb.h"
#include "data_helpers.h"

using namespace mase;
using namespace mase::data;
using namespace mase::test;

TEST_CASE("imdb real: the archive has 12500 reviews per split and label") {
  fs::path archive = shared_file("imdb/aclImdb_v1.tar.gz");
  if (archive.empty()) return;
  Imdb d = read_imdb(archive);
  for (const auto* split : {&d.train, &d.test}) {
    REQUIRE(split->size() == 25000);
    for (int32_t label : {0, 1}) {
      // Canonical order: neg reviews 0..12499 first, then pos 0..12499.
      for (int32_t id = 0; id < 12500; ++id) {
        const Review& r = (*split)[label * 12500 + id];
        if (r.label != label || r.id != id || (label ? r.rating < 7 : r.rating > 4)) {
          FAIL_CHECK("unexpected review " << r.label << "/" << r.id << "_" << r.rating);
          break;
        }
      }
    }
  }
  CHECK(d.stats.reviews == 50000);
  CHECK(d.stats.empty == 0);
  CHECK(d.test[0].rating == 2);  // test/neg/0_2.txt
  CHECK(d.test[0].text.rfind("Once again Mr. Costner has dragged out a movie", 0) == 0);
  int64_t with_br = 0;
  for (const auto* split : {&d.train, &d.test}) {
    for (const Review& r : *split) with_br += r.text.find("<br") != std::string::npos;
  }
  CHECK(with_br == 0);  // every "<br />" became a space
}
