// search/shell_command.cpp — a trial's shell command in its own process group, stopped with
// the search. Read shell_command.h first.
#include "search/shell_command.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/error.h"
#include "train/trainer.h"

extern char** environ;

namespace mase::search {

namespace {

// posix_spawn's attributes and file actions, released however run_shell leaves.
struct Spawn {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t files;
  Spawn() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&files);
  }
  ~Spawn() {
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
  }
};

// Adds stdout's bytes to the lines read so far: `last` keeps the last one that is not blank;
// `watch`, if any, sees each line. Returns false once the watch has asked to end the command.
bool take(std::string& line, std::string& last, const char* bytes, size_t n,
          const LineWatch& watch) {
  bool go_on = true;
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] != '\n') {
      line += bytes[i];
      continue;
    }
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    if (watch && go_on) go_on = watch(line);
    line.clear();
  }
  return go_on;
}

// Our environment with PYTHONUNBUFFERED=1 added (unless it is set): a watched command's lines
// must arrive as it prints them. `env` points into environ and into `extra`, so an Environment
// must outlive the spawn (it is not copied: the pointer into `extra` would dangle).
struct Environment {
  std::string extra = "PYTHONUNBUFFERED=1";
  std::vector<char*> env;
  explicit Environment(bool unbuffered) {
    for (char** e = environ; *e; ++e) env.push_back(*e);
    if (unbuffered && !std::getenv("PYTHONUNBUFFERED")) env.push_back(extra.data());
    env.push_back(nullptr);
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

}  // namespace

ShellRun run_shell(const std::string& command, double grace_s, const LineWatch& watch) {
  int out[2];
  MASE_CHECK(::pipe2(out, O_CLOEXEC) == 0, IoError, "[search] cannot run the command (pipe: ",
             std::strerror(errno), "): ", command);
  Spawn s;
  // the command's own group (its pid), nothing blocked, the signals it should die of at their
  // defaults; stdout into our pipe (dup2 clears the close-on-exec the ends have), stdin empty
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&s.attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&s.attr, &none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  posix_spawn_file_actions_adddup2(&s.files, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&s.files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  Environment env(static_cast<bool>(watch));
  const int err = posix_spawn(&pid, "/bin/sh", &s.files, &s.attr, const_cast<char**>(argv),
                              env.env.data());
  ::close(out[1]);
  if (err != 0) {
    ::close(out[0]);
    throw IoError(cat("[search] cannot run the command (", std::strerror(err),
                      "; too many processes?): ", command));
  }

  using Clock = std::chrono::steady_clock;
  ShellRun r;
  int fd = out[0];
  bool reaped = false;
  Clock::time_point kill_at;
  std::string line;
  // until stdout is closed and sh is reaped, as popen's reader and pclose would wait
  bool ending = false;  // SIGTERM sent (a stop, or the watch): SIGKILL at kill_at
  const auto end_group = [&] {
    ending = true;
    ::kill(-pid, SIGTERM);  // the group: sh and every process it started
    kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(grace_s));
  };
  while (fd >= 0 || !reaped) {
    if (!ending && train::stop_requested()) {
      r.stopped = true;
      end_group();
    }
    if (ending && !r.killed && Clock::now() >= kill_at) {
      ::kill(-pid, SIGKILL);  // sh reaped or not, what is left of its group
      r.killed = true;
    }
    // ending: done once sh is reaped and its group is gone (or sent SIGKILL): not waiting
    // for stdout's end, which a process that left the group may hold open for ever
    if (ending && reaped && (r.killed || (::kill(-pid, 0) == -1 && errno == ESRCH))) break;
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
          // once ending, the lines still read are kept but no longer watched
          if (!take(line, r.last_line, buf, static_cast<size_t>(n), ending ? LineWatch{} : watch)
              && !ending) {
            r.halted = true;
            end_group();
          }
        } else if (n == 0 || errno != EINTR) {
          ::close(fd), fd = -1;  // the end (or a broken pipe)
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!reaped) {
      const pid_t w = ::waitpid(pid, &r.status, WNOHANG);
      if (w == -1 && errno == ECHILD) r.status = -1;  // reaped elsewhere: a SIGCHLD handler
      reaped = w == pid || (w == -1 && errno == ECHILD);
    }
  }
  if (fd >= 0) ::close(fd);
  // a last line without its newline (watched too, unless the command is being ended)
  if (!take(line, r.last_line, "\n", 1, ending ? LineWatch{} : watch)) r.halted = true;
  return r;
}

}  // namespace mase::search
