// search/sweep_study.cpp — sweeps as studies: ordered points, the recorded objective, the loop,
// the CSV and the figures. Read sweep_study.h first.
#include "search/sweep_study.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "search/study_store.h"
#include "search/sweep_list.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace mase::search {
using nlohmann::json;
namespace {

// The first key whose value differs between a recorded and a given objective, as text.
std::string objective_difference(const json& was, const json& now) {
  std::set<std::string> keys;
  for (const auto& [k, v] : was.items()) keys.insert(k);
  for (const auto& [k, v] : now.items()) keys.insert(k);
  for (const std::string& k : keys) {
    json a = was.contains(k) ? was[k] : json(), b = now.contains(k) ? now[k] : json();
    if (a != b) return cat(k, " ", a.dump(), ", not ", b.dump());
  }
  return "";
}

// The recorded objective of `study` (null if none), through a connection of our own.
struct ObjectiveTable {
  explicit ObjectiveTable(const std::string& path) : db(store::open_database(path)) {
    store::Transaction tx(*db);  // (concurrent CREATE ... IF NOT EXISTS: one at a time)
    db->exec("CREATE TABLE IF NOT EXISTS sweep_objectives(study TEXT PRIMARY KEY, "
             "objective_json TEXT NOT NULL)",
             "create sweep_objectives");
    tx.commit();
  }
  json read(const std::string& study) {
    store::Statement q(*db, "SELECT objective_json FROM sweep_objectives WHERE study = ?1",
                       "read sweep objective");
    return q.bind(1, study).step() ? json::parse(q.text(0)) : json();
  }
  void record(const std::string& study, const json& objective) {
    store::Statement ins(*db, "INSERT INTO sweep_objectives VALUES(?1, ?2) ON CONFLICT DO NOTHING",
                         "record sweep objective");
    ins.bind(1, study).bind(2, objective.dump()).run();
  }
  std::unique_ptr<store::Database> db;
};

int complete_points(const SweepPlan& plan, const std::vector<TrialRecord>& trials) {
  int n = 0;
  for (const Values& v : plan.points)
    n += std::any_of(trials.begin(), trials.end(), [&](const TrialRecord& r) {
      return r.trial.state == TrialState::complete && r.trial.values == v;
    });
  return n;
}

}  // namespace

std::optional<Values> OrderedGridSampler::sample(const Space&, const std::vector<Trial>& history,
                                                 int64_t) {
  for (const Values& p : points_) {
    if (skip.count(p)) continue;
    bool taken = std::any_of(history.begin(), history.end(), [&](const Trial& t) {
      return t.state != TrialState::failed && t.values == p;
    });
    if (!taken) return p;
  }
  return std::nullopt;
}

std::vector<std::string> choices_of(const std::vector<double>& xs) {
  std::vector<std::string> out;
  for (double x : xs) out.push_back(format_real(x));
  return out;
}

SweepPlan sweep_files(const std::string& dir, const std::string& study,
                      const std::vector<std::string>& plots) {
  namespace fs = std::filesystem;
  SweepPlan plan;
  plan.db = (fs::path(dir) / "studies.db").string();
  plan.study = study;
  plan.csv = (fs::path(dir) / (study + ".csv")).string();
  plan.plots = plots;
  if (plan.plots.empty())
    for (const char* ext : {".svg", ".png"})
      plan.plots.push_back((fs::path(dir) / (study + ext)).string());
  return plan;
}

Study open_sweep(const SweepPlan& plan, OrderedGridSampler*& sampler) {
  ObjectiveTable table(plan.db);
  const json was = table.read(plan.study);
  MASE_CHECK(was.is_null() || was == plan.objective, ConfigError, "[--study] study '", plan.study,
             "' in ", plan.db, " was swept with ", objective_difference(was, plan.objective),
             " (use another --study name, or the flags it was created with)");
  auto owned = std::make_unique<OrderedGridSampler>(plan.points);
  sampler = owned.get();
  Study study = Study::open(plan.db, plan.study, plan.space, Direction::maximize,
                            std::move(owned), 0);
  table.record(plan.study, plan.objective);
  return study;
}

int run_sweep(const SweepPlan& plan, const PointFn& evaluate, std::FILE* out) {
  std::filesystem::create_directories(std::filesystem::path(plan.db).parent_path());
  OrderedGridSampler* sampler = nullptr;
  Study study = open_sweep(plan, sampler);
  std::fprintf(out, "sweep     %s\n", plan.summary.c_str());
  const int dead = study.resume();
  const int total = static_cast<int>(plan.points.size());
  int done = complete_points(plan, study.trials());
  std::fprintf(out, "study     %s in %s: %d points, %d done before%s\n", plan.study.c_str(),
               plan.db.c_str(), total, done,
               dead ? cat(", ", dead, " of a dead process marked failed").c_str() : "");
  std::fflush(out);

  constexpr int kMaxFailuresInARow = 3;
  int failures = 0, evaluated = 0, failed = 0;
  std::string last_error;
  while (!train::stop_requested()) {
    std::optional<Trial> t = study.ask();
    if (!t) break;
    const auto start = std::chrono::steady_clock::now();
    std::string result;
    try {
      Outcome o = evaluate(Params(plan.space, t->values));
      study.tell(t->number, o);
      result = cat("accuracy ", format_real(o.value));
      if (o.attrs.count("test_loss")) result += "  test_loss " + o.attrs["test_loss"];
      failures = 0;
      ++done;
    } catch (const std::exception& e) {
      study.tell(t->number, TrialState::failed, 0, {{"error", e.what()}});
      sampler->skip.insert(t->values);
      result = cat("failed: ", e.what());
      last_error = e.what();
      ++failed;
      MASE_CHECK(++failures < kMaxFailuresInARow, Error, "[sweep] ", kMaxFailuresInARow,
                 " points in a row failed; the last: ", e.what(),
                 " (fix it, then run the same command again: done points are kept)");
    }
    ++evaluated;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(out, "point %d/%d  %s  %s  (%s)\n", done, total,
                 plan.space.format(t->values).c_str(), result.c_str(),
                 train::format_duration(s).c_str());
    std::fflush(out);
  }
  write_sweep_outputs(plan, study, out);
  // a sweep with a failed point has a hole in its curve: say so in the exit status too
  MASE_CHECK(failed == 0, Error, "[sweep] ", failed, " of the ", evaluated, " points run failed; "
             "the last: ", last_error, " (fix it, then run the same command again: done points "
             "are kept)");
  return evaluated;
}

void write_sweep_outputs(const SweepPlan& plan, const Study& study, std::FILE* out) {
  const SweepLayout& L = plan.layout;
  // Complete trials grouped by curve (curves in the order the plan lists them, then any
  // others the study has), each curve by x.
  std::vector<std::string> order;
  auto note_curve = [&](const std::string& label) {
    if (std::find(order.begin(), order.end(), label) == order.end()) order.push_back(label);
  };
  for (const Values& v : plan.points) note_curve(L.curve_label(Params(plan.space, v)));
  std::map<std::string, std::vector<const TrialRecord*>> by_curve;
  const std::vector<TrialRecord> trials = study.trials();
  for (const TrialRecord& r : trials) {
    if (r.trial.state != TrialState::complete) continue;
    const std::string label = L.curve_label(Params(plan.space, r.trial.values));
    note_curve(label);
    by_curve[label].push_back(&r);
  }
  const Param& xp = plan.space.at(L.x_param);
  auto x_of = [&](const TrialRecord* r) { return std::stod(xp.format(r->trial.values.at(xp.name))); };

  std::string csv = "curve";
  for (const std::string& p : L.label_params) csv += "," + p;
  csv += "," + L.x_param + ",accuracy";
  for (const std::string& a : L.attr_columns) csv += "," + a;
  csv += ",trial\n";
  std::vector<Curve> curves;
  int rows = 0;
  for (const std::string& label : order) {
    auto& rs = by_curve[label];
    if (rs.empty()) continue;
    std::stable_sort(rs.begin(), rs.end(),
                     [&](const TrialRecord* a, const TrialRecord* b) { return x_of(a) < x_of(b); });
    Curve c{label, {}};
    for (const TrialRecord* r : rs) {
      csv += csv_field(label);
      for (const std::string& p : L.label_params)
        (csv += ',') += csv_field(plan.space.at(p).format(r->trial.values.at(p)));
      csv += "," + xp.format(r->trial.values.at(xp.name)) + "," + format_real(r->trial.value);
      for (const std::string& a : L.attr_columns) {
        auto it = r->attrs.find(a);
        (csv += ',') += csv_field(it == r->attrs.end() ? "" : it->second);
      }
      csv += cat(",", r->trial.number, "\n");
      c.points.emplace_back(x_of(r), r->trial.value);
      ++rows;
    }
    curves.push_back(std::move(c));
  }
  write_text_atomic(plan.csv, csv);
  std::fprintf(out, "csv       %s (%d rows)\n", plan.csv.c_str(), rows);
  for (const std::string& p : plan.plots) {
    if (curves.empty()) break;
    plot_curves(curves, plan.text, p);
    std::fprintf(out, "plot      %s (data %s.dat, gnuplot script %s.gp)\n", p.c_str(), p.c_str(),
                 p.c_str());
  }
  std::fflush(out);
}

}  // namespace mase::search
