// tests/train/test_run_hardening.cpp — a run folder left by a kill or edited by hand: a
// half-written last log line, a torn metrics row, a kill between the two renames of a re-saved
// checkpoint, a trainer state whose step is impossible; the second Ctrl-C/SIGTERM, SIGHUP (and
// nohup's), and which threads take the signals.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <sstream>

#include "helpers.h"
#include "runtime/parallel.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::TrainFixture;
using mase::test::write_bytes;

TEST_CASE("run folder: a half-written last log line and a torn metrics row are dropped on resume") {
  mase::test::TempDir tmp;
  RunDir run = RunDir::create(tmp.path / "run");
  for (int s = 1; s <= 3; ++s) run.append_log(nlohmann::ordered_json{{"step", s}, {"loss", 0.5}});
  run.append_metrics({.step = 2});
  std::ofstream(run.file(RunDir::kLog), std::ios::app) << R"({"step": 3, "lo)";   // killed here
  std::ofstream(run.file(RunDir::kMetrics), std::ios::app) << "3,0.1\n99999999999999999999999\n";
  run.truncate_after(3);
  const std::string log = mase::test::read_bytes(run.file(RunDir::kLog));
  CHECK(std::count(log.begin(), log.end(), '\n') == 3);
  CHECK(log.find("\"lo\n") == std::string::npos);
  CHECK(log.back() == '\n');
  const std::string metrics = mase::test::read_bytes(run.file(RunDir::kMetrics));
  CHECK(metrics == std::string(kMetricsHeader) + "\n" + metrics.substr(metrics.find('\n') + 1));
  CHECK(metrics.find("\n2,") != std::string::npos);
  CHECK(metrics.find("3,0.1") == std::string::npos);
  CHECK(metrics.find("9999") == std::string::npos);
}

TEST_CASE("run folder: a kill between the two renames of a re-saved step keeps the step") {
  mase::test::TempDir tmp;
  RunDir run = RunDir::create(tmp.path / "run");
  write_bytes(run.file(RunDir::kConfig), "{}");
  run.save_checkpoint(5, [](const fs::path& d) { write_bytes(d / RunDir::kState, "five"); });
  const fs::path ckpts = tmp.path / "run" / "checkpoints";
  // the state a kill leaves: step-000005 moved aside, its replacement not yet renamed in
  fs::rename(ckpts / "step-000005", ckpts / ".tmp-old-step-000005-4242");
  fs::create_directories(ckpts / ".tmp-step-000005-4242");
  write_bytes(ckpts / ".tmp-step-000005-4242" / "model.safetensors", "half");
  RunDir reopened = RunDir::open(tmp.path / "run");
  REQUIRE(reopened.latest_checkpoint() == ckpts / "step-000005");
  CHECK(mase::test::read_bytes(ckpts / "step-000005" / RunDir::kState) == "five");
  CHECK(mase::test::list_files(ckpts) == std::vector<std::string>{"step-000005/trainer_state.json"});
}

// predict, --init and --eval-only read a run still training (its latest checkpoint) while that
// run's process may be writing its next one: reading it must not tidy the checkpoints folder
// (RunDir::open deletes temporaries: the save in progress then failed with an IoError).
TEST_CASE("run folder: loading a run still training leaves the checkpoint being written alone") {
  TrainFixture fx;
  TrainConfig c = fx.config("live");
  REQUIRE(train_new(c, fx.null, [&](int64_t step, double) {
            if (step == 2) request_stop();
          }).status == TrainStatus::interrupted);
  clear_stop();
  const fs::path ckpts = fx.run("live") / "checkpoints";
  const fs::path saving = ckpts / ".tmp-step-000005-4242";  // the other process, mid-save
  fs::create_directories(saving);
  write_bytes(saving / "model.safetensors", "half");
  const fs::path aside = ckpts / ".tmp-old-step-000009-4242";  // and one between its renames
  fs::create_directories(aside);
  write_bytes(aside / RunDir::kState, "{}");

  LoadedModel lm = load_model_dir(fx.run("live"));
  CHECK(lm.weights == ckpts / "step-000002" / "model.safetensors");
  TrainConfig e = fx.config("unused");
  e.init = fx.run("live").string();
  e.vocab.clear();
  eval_only(e, fx.null);
  CHECK(mase::test::read_bytes(saving / "model.safetensors") == "half");
  CHECK(fs::exists(aside / RunDir::kState));
  CHECK_FALSE(fs::exists(ckpts / "step-000009"));
}

TEST_CASE("resume: a trainer state with an impossible step is refused naming the file") {
  TrainFixture fx;
  TrainConfig c = fx.config("cut");
  TrainResult first = train_new(c, fx.null, [&](int64_t step, double) {
    if (step == 2) request_stop();
  });
  REQUIRE(first.status == TrainStatus::interrupted);
  clear_stop();
  RunDir run = RunDir::open(fx.run("cut"));
  const fs::path state = *run.latest_checkpoint() / RunDir::kState;
  const std::string good = mase::test::read_bytes(state);
  nlohmann::json j = nlohmann::json::parse(good);
  j["step"] = int64_t{1'000'000'000'000};
  write_bytes(state, j.dump());
  CHECK_THROWS_WITH_AS(resume(fx.run("cut"), {}, fx.null),
                       doctest::Contains(("[resume] " + state.string() + ": expected step = epoch x ").c_str()),
                       ConfigError);
  j["step"] = -1;
  write_bytes(state, j.dump());
  CHECK_THROWS_WITH_AS(resume(fx.run("cut"), {}, fx.null),
                       doctest::Contains(("[resume] " + state.string() +
                                          ": expected step, epoch and batch >= 0, got step -1").c_str()),
                       IoError);
  write_bytes(state, std::string(100'000, '[') + std::string(100'000, ']'));
  CHECK_THROWS_WITH_AS(resume(fx.run("cut"), {}, fx.null),
                       doctest::Contains("expected JSON nested at most 64 levels deep"), IoError);
}

// Signals sent to the process (as a terminal's Ctrl-C and kill(1) send them) are taken by the
// handlers' own thread (train/stop.cpp), asynchronously: the child waits for the flag.
TEST_CASE("stop handlers: a second signal exits at once with 128 + signal") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // child: first SIGINT asks for a stop, the SIGTERM after it must not wait
    ::close(STDERR_FILENO);
    install_stop_handlers();
    ::kill(::getpid(), SIGINT);
    for (int i = 0; i < 500 && !stop_requested(); ++i) ::usleep(10'000);
    if (!stop_requested()) ::_exit(3);
    ::kill(::getpid(), SIGTERM);
    ::usleep(5'000'000);
    ::_exit(0);  // reached only when the second signal was swallowed
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
}

// A hangup (the terminal closed, a scheduler's SIGHUP) stops a run as SIGTERM does, but a
// process started under nohup keeps ignoring it.
TEST_CASE("stop handlers: SIGHUP asks for a stop; an ignored SIGHUP (nohup) stays ignored") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(STDERR_FILENO);
    std::signal(SIGHUP, SIG_IGN);  // nohup
    install_stop_handlers();
    struct sigaction now {};
    sigaction(SIGHUP, nullptr, &now);
    if (now.sa_handler != SIG_IGN) ::_exit(2);
    ::kill(::getpid(), SIGHUP);
    ::usleep(100'000);
    if (stop_requested()) ::_exit(3);
    std::signal(SIGHUP, SIG_DFL);  // no nohup
    install_stop_handlers();
    ::kill(::getpid(), SIGHUP);
    for (int i = 0; i < 500 && !stop_requested(); ++i) ::usleep(10'000);
    ::_exit(stop_requested() ? 0 : 4);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("2: nohup's SIG_IGN replaced; 3: an ignored SIGHUP stopped; 4: SIGHUP did not stop");
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// oneDNN's JIT'd GEMMs point rsp at the heap: a handler run inside one corrupts it
// (train/stop.cpp). So the installing thread and every kernel worker block the stop signals.
TEST_CASE("stop handlers: the threads that run kernels block SIGINT, SIGTERM and SIGHUP") {
  const pid_t pid = ::fork();  // a child: the mask and the signal thread stay out of this process
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // workers that started before the handlers (with the signals open) must block them too
    parallel_for(0, 64, 1, [](int64_t, int64_t) { ::usleep(200); });
    install_stop_handlers();
    auto blocked = [] {
      sigset_t now;
      pthread_sigmask(SIG_BLOCK, nullptr, &now);
      return sigismember(&now, SIGINT) == 1 && sigismember(&now, SIGTERM) == 1 &&
             sigismember(&now, SIGHUP) == 1;
    };
    std::atomic<int> open{0}, tasks{0};
    for (int round = 0; round < 20; ++round)  // workers join the arena as the rounds run
      parallel_for(0, 64, 1, [&](int64_t, int64_t) {
        ++tasks;
        if (!blocked()) ++open;
        ::usleep(200);
      });
    // and a fork of this process (mase-search --workers) still takes a Ctrl-C
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::kill(::getpid(), SIGINT);
      for (int i = 0; i < 500 && !stop_requested(); ++i) ::usleep(10'000);
      ::_exit(stop_requested() ? 0 : 5);
    }
    int gs = 0;
    ::waitpid(grandchild, &gs, 0);
    const int code = !blocked() ? 2 : open > 0 ? 3 : tasks != 20 * 64 ? 4
                     : !(WIFEXITED(gs) && WEXITSTATUS(gs) == 0) ? 5 : 0;
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  INFO("2: the installing thread, 3: a worker, did not block them; 5: the fork saw no Ctrl-C");
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("report: accuracy at chance on a balanced test set warns that the budget was too small") {
  CHECK(chance_level_warning(0.5, 0.5, 63).find("warning   test accuracy 0.5 is chance level on a "
                                                 "balanced test set: 63 steps were too few") == 0);
  CHECK(chance_level_warning(0.515, 0.5, 63) != "");
  CHECK(chance_level_warning(0.53, 0.5, 63) == "");   // learning, a little
  CHECK(chance_level_warning(0.5, 0.9, 63) == "");    // unbalanced: 0.5 is not chance there
}
