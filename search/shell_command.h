// search/shell_command.h — the shell command of one `mase-search custom` trial: `sh -c COMMAND`
// in a process group of its own, its stdout read for its last line, its stderr passed through
// to ours, its stdin /dev/null — and stopped when the search is.
//
// Stopping. A stopped search (Ctrl-C, `kill PID`, SIGHUP, or a --workers parent forwarding
// one of them: train::stop_requested()) must not wait for a command that may run for hours,
// nor record what it printed as a finished trial. So while the command runs, the flag is
// polled (every 50 ms); once it is set the command's whole group — sh and whatever it started
// (python, a training script's own workers) — gets SIGTERM, and SIGKILL `grace_s` later if any
// of it is still there. The caller records the trial as interrupted (lab_runner.h).
// Why a group of its own: kill(-group) reaches exactly the command's processes and not ours;
// and a terminal's Ctrl-C reaches mase's group only, so the command sees one SIGTERM from us
// rather than a SIGINT of its own it might half-handle. Why stdin is /dev/null: a command in
// another group that read the terminal would be stopped by SIGTTIN and hang the trial.
// The command starts with no signal blocked and SIGINT, SIGTERM and SIGPIPE at their defaults:
// this process blocks the stop signals on its own threads (train/stop.cpp) and may ignore
// SIGPIPE, and both would be inherited (popen's command never saw a SIGTERM at all).
// Not covered: a second Ctrl-C quits mase at once (train/stop.cpp), leaving a command that
// ignores SIGTERM running; a process the command moves to another group (setsid) is not
// reached.
// Watching. A caller may see each stdout line as it arrives (`watch`: the reports and
// constraints of a `mase-search custom` trial, search/command_objective.h) and end the command
// by returning false: its group gets SIGTERM (and SIGKILL grace_s later) exactly as for a stop,
// and the run says `halted`. With a watch, the command runs with PYTHONUNBUFFERED=1 (unless set): Python
// writes a pipe in 8 KB blocks otherwise, and its reports would arrive when it exits.
// Read next: search/command_objective.h.
#pragma once
#include <functional>
#include <string>

namespace mase::search {

struct ShellRun {
  std::string last_line;  // the last line of its stdout with something besides blanks
  int status = 0;         // as waitpid reports it (-1: not known, the process was reaped elsewhere)
  bool stopped = false;   // a stop was requested while it ran: its group was sent SIGTERM
  bool killed = false;    // ... and SIGKILL, grace_s later
  bool halted = false;    // the watch returned false: its group was sent SIGTERM (and `killed`)
};

// Sees each complete line of the command's stdout (without its newline) as it arrives; false
// ends the command. It must not throw (keep what went wrong, return false, throw after).
using LineWatch = std::function<bool(const std::string& line)>;

inline constexpr double kCommandGrace_s = 5;

// Runs `command` to its end, or until a stop is requested (see above). IoError if it cannot be
// started (no pipe, no /bin/sh, too many processes).
ShellRun run_shell(const std::string& command, double grace_s = kCommandGrace_s,
                   const LineWatch& watch = {});

}  // namespace mase::search
