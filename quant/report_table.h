// quant/report_table.h — a plain-text table with aligned columns, for the passes' reports.
//
//   layer                       old type  new type         weight
//   bert.encoder.layer.0...     Linear    QuantizedLinear  integer(width=8, frac_width=4)
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace mase::quant {

class ReportTable {
 public:
  explicit ReportTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_column(std::string name) { header_.push_back(std::move(name)); }
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  std::string str() const {
    std::vector<size_t> width(header_.size(), 0);
    auto measure = [&](const std::vector<std::string>& r) {
      for (size_t i = 0; i < r.size() && i < width.size(); ++i)
        width[i] = std::max(width[i], r[i].size());
    };
    measure(header_);
    for (const auto& r : rows_) measure(r);
    auto line = [&](const std::vector<std::string>& r) {
      std::string s = " ";
      for (size_t i = 0; i < r.size() && i < width.size(); ++i) {
        s += " " + r[i];
        if (i + 1 < r.size()) s += std::string(width[i] - r[i].size() + 1, ' ');
      }
      return s + "\n";
    };
    std::string out = line(header_);
    for (const auto& r : rows_) out += line(r);
    return out;
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace mase::quant
