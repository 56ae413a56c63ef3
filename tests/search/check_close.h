// tests/search/check_close.h — element-wise closeness of two vectors, for the TPE tests
// (test_tpe.cpp, test_tpe_multivariate.cpp): |got - want| <= rel * max(1, |want|), per element.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

inline void check_close(const std::vector<double>& got, const std::vector<double>& want,
                        double rel, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i);
    CHECK(std::abs(got[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}
