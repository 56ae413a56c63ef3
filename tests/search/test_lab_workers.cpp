// tests/search/test_lab_workers.cpp — `mase-search precision` and its threads around the
// --workers fork: loading --init builds a model whose random init runs on oneTBB's pool, and a
// pool running at the fork is missing in the copies (their kernels then run on one thread) —
// the oracle: the threads of the process at the moment it forks (/proc/self/task, counted by a
// pthread_atfork handler), in a process of its own (this test binary run again for one case:
// an earlier case of the same process may have started the pool already); every process's
// PTQ trials run on --threads (cores / N by default) — the oracle: num_threads() in each; and
// a study only a copy reached (the parent stopped first) gets its CSV — the CSVs written.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "runtime/parallel.h"
#include "search/lab_commands.h"
#include "train/trainer.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::search;
using mase::test::TrainFixture;
namespace fs = std::filesystem;

namespace {

constexpr const char* kForkCase =
    "precision --workers 2 in a process of its own (started by the case below and a no-op alone)";

int threads_now() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

int g_threads_at_fork = -1;  // this process's threads just after its first fork

// A precision study of 2 trials over integer 8/4 and 8/8, on the fixture's data.
PrecisionOptions precision_options(const std::string& init, const std::string& data_dir,
                                   const std::string& cache_dir, const std::string& dir) {
  PrecisionOptions o;
  o.init = init;
  o.sampler = "random";
  o.widths = {8};
  o.frac_widths = {4, 8};
  o.trials = 2;
  o.dir = dir;
  o.base.data_dir = data_dir;
  o.base.cache_dir = cache_dir;
  o.base.max_steps = 0;  // PTQ only
  o.base.max_len = 0;    // --init's
  o.base.batch_size = 8;
  o.base.eval_batch_size = 16;
  o.base.train_subset = 0;
  o.base.test_subset = 0;
  o.base.ckpt_every = 0;
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  return o;
}

// run_precision with --workers: a copy that throws exits (status 1, which fails the parent)
// instead of going on with the rest of this test binary.
LabResult run_in_copies(const PrecisionOptions& o) {
  const pid_t parent = getpid();
  try {
    return run_precision(o);
  } catch (...) {
    if (getpid() != parent) _exit(1);
    throw;
  }
}

}  // namespace

TEST_CASE(kForkCase) {
  const char* init = std::getenv("MASE_TEST_FORK_INIT");
  if (!init) return;
  pthread_atfork(nullptr, [] {
    if (g_threads_at_fork < 0) g_threads_at_fork = threads_now();
  }, nullptr);
  const std::string out = std::getenv("MASE_TEST_FORK_OUT");
  PrecisionOptions o = precision_options(init, std::getenv("MASE_TEST_FORK_DATA"),
                                         std::getenv("MASE_TEST_FORK_CACHE"), out + "/s");
  o.workers = 2;
  const LabResult res = run_in_copies(o);
  if (res.worker_copy) _exit(0);  // the copy: its trials are in the study
  std::fclose(o.out);
  std::ofstream(out + "/threads_at_fork") << g_threads_at_fork;
  CHECK(res.csvs.size() == 2);  // the study's CSV and the summary
}

TEST_CASE("precision --workers 2: no thread of oneTBB's pool is running when the copies fork") {
  // A model with a tensor large enough for a parallel random init (intermediate 2048 x hidden
  // 32 = 65,536 weights; kGrainElems is 32 Ki), trained one epoch on the fixture.
  TrainFixture fx;
  const fs::path cfg = fx.dir.path / "wide.json";
  std::ofstream(cfg) << "{\"vocab_size\": " << fx.vocab_size
                     << ", \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                        "\"num_attention_heads\": 2, \"intermediate_size\": 2048, "
                        "\"max_position_embeddings\": 64}";
  train::TrainConfig tc = fx.config("trained");
  tc.model = cfg.string();
  tc.epochs = 1;
  REQUIRE(train::train_new(tc, fx.null).status == train::TrainStatus::completed);

  // this binary again, for the case above only, told where everything is
  const fs::path out = fx.dir.path / "forked";
  fs::create_directories(out);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back("MASE_TEST_FORK_INIT=" + fx.run("trained").string());
  env.push_back("MASE_TEST_FORK_DATA=" + fx.data_dir.string());
  env.push_back("MASE_TEST_FORK_CACHE=" + (fx.dir.path / "cache").string());
  env.push_back("MASE_TEST_FORK_OUT=" + out.string());
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = std::string("--test-case=") + kForkCase;
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), nullptr};
  const std::string log = (out / "log").string();  // its doctest report
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO);
    execve(exe, argv, envp.data());
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  std::ifstream report(log);
  INFO("the forked case's report:\n" << std::string(std::istreambuf_iterator<char>(report), {}));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::ifstream in(out / "threads_at_fork");
  int threads = -1;
  in >> threads;
  // the process's own thread alone (OpenBLAS's stop at a fork by themselves)
  CHECK(threads == 1);
}

TEST_CASE("precision: its trials run on --threads, cores / N in each process with --workers N") {
  // A PTQ trial only evaluates (no training, where train_model sets the count): the command
  // itself must set it, after the fork. The oracle: num_threads() in each process once its
  // trials are done (a copy exits non-zero when its count is wrong: the parent then fails).
  TrainFixture fx;
  train::TrainConfig tc = fx.config("trained");
  tc.epochs = 1;
  REQUIRE(train::train_new(tc, fx.null).status == train::TrainStatus::completed);
  const std::string cache = (fx.dir.path / "cache").string();

  set_num_threads(2);  // what an earlier command of this process left
  PrecisionOptions one = precision_options(fx.run("trained"), fx.data_dir.string(), cache,
                                           (fx.dir.path / "one").string());
  one.base.threads = 1;
  CHECK(run_precision(one).csvs.size() == 2);
  std::fclose(one.out);
  CHECK(num_threads() == 1);

  set_num_threads(2);
  PrecisionOptions two = precision_options(fx.run("trained"), fx.data_dir.string(), cache,
                                           (fx.dir.path / "two").string());
  two.workers = 2;  // --threads 0: the cores shared
  const int share = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  const LabResult res = run_in_copies(two);
  if (res.worker_copy) _exit(num_threads() == share ? 0 : 1);
  std::fclose(two.out);
  CHECK(res.csvs.size() == 2);
  CHECK(num_threads() == share);
  set_num_threads(0);
}

namespace {
bool g_stop_parent_at_fork = false;  // once: the parent of the next fork is told to stop
}  // namespace

TEST_CASE("precision --workers 2: a study only a copy reached still gets its CSV") {
  // Ctrl-C stops every process in the study it is in, and a copy that found one study's trials
  // all taken is already in the next. The extreme case, made certain: the parent is told to stop
  // as it forks (a pthread_atfork handler of the parent), so it reaches no study at all, while
  // its copy runs both. The oracle: the CSVs the parent writes, one per study with its 2 trials.
  TrainFixture fx;
  train::TrainConfig tc = fx.config("trained");
  tc.epochs = 1;
  REQUIRE(train::train_new(tc, fx.null).status == train::TrainStatus::completed);
  static bool registered = false;
  if (!registered)
    pthread_atfork(nullptr, [] {
      if (g_stop_parent_at_fork) train::request_stop(), g_stop_parent_at_fork = false;
    }, nullptr);
  registered = true;

  const fs::path dir = fx.dir.path / "s";
  PrecisionOptions o = precision_options(fx.run("trained"), fx.data_dir.string(),
                                         (fx.dir.path / "cache").string(), dir.string());
  o.formats = {"integer", "binary"};
  o.workers = 2;
  train::clear_stop();
  g_stop_parent_at_fork = true;
  const LabResult res = run_in_copies(o);
  if (res.worker_copy) _exit(0);
  std::fclose(o.out);
  g_stop_parent_at_fork = false;
  CHECK(train::stop_requested());  // the parent did stop
  train::clear_stop();
  CHECK(res.studies == std::vector<std::string>{"precision-integer", "precision-binary"});
  for (const char* s : {"precision-integer", "precision-binary"}) {
    INFO(s);
    std::ifstream in(dir / (std::string(s) + ".csv"));
    REQUIRE(in.good());
    int complete = 0;
    for (std::string line; std::getline(in, line);)
      complete += line.find(",complete,") != std::string::npos;
    CHECK(complete == 2);
  }
}
