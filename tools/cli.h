// tools/cli.h — what every mase-* main does around its own work: parse the flags, and turn an
// error into one line on stderr and an exit status.
//
//   if (auto status = mase::cli::parse(app, "mase-foo", argc, argv)) return *status;
//   return mase::cli::run("mase-foo", [&] { ...; return 0; });
//
// Exit status: 0 after --help; 2 for bad flags or a ConfigError (the user can fix the command);
// 1 for any other error (a file, a device, something unexpected). A crash (a bug: segfault,
// abort) prints the tool's name, the signal and a raw backtrace on stderr before dying: the
// addresses are offsets into the binary (`addr2line -e bin/mase-foo -f -C 0x…` names them).
#pragma once
#include <CLI/CLI.hpp>
#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "data/utf8.h"
#include "runtime/error.h"

namespace mase::cli {

constexpr int kExitError = 1, kExitUsage = 2;

// Set by a tool whose processes run as one job (mase-train under mpirun): given an error line,
// true when this process is not to print it (every process raised it; rank 0 prints it).
// Unset, or false: the line is printed.
inline std::function<bool(const std::string&)> quiet_error;

// Prints "tool: message" on stderr unless quiet_error says another process prints it.
inline void say_error(const char* tool, const std::string& message) {
  const std::string line = std::string(tool) + ": " + message;
  if (!(quiet_error && quiet_error(line))) std::fprintf(stderr, "%s\n", line.c_str());
}

namespace detail {
inline const char* crash_tool = "mase";
// Async-signal-safe only (write, open, read, backtrace_symbols_fd): the heap may be broken.
inline void on_crash(int sig) {
  auto say = [](const char* s) { (void)!write(2, s, std::strlen(s)); };
  say(crash_tool);
  say(": crashed (");
  say(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
      : sig == SIGILL ? "SIGILL" : "SIGABRT");
  say("): a bug in mase-cpp; the backtrace, and where the binary is loaded:\n");
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
  if (int fd = open("/proc/self/maps", O_RDONLY); fd >= 0) {  // the first line: the binary's base
    char line[256];
    const ssize_t n = read(fd, line, sizeof line - 1);
    if (n > 0) {
      line[n] = 0;
      if (char* nl = std::strchr(line, '\n')) nl[0] = 0;
      say(line);
      say("\n");
    }
    close(fd);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
}  // namespace detail

// The length of the UTF-8 character at s[i] when it is well-formed (data/utf8.h) and, for one
// byte, not a control character other than those `allowed`; 0 otherwise.
inline size_t utf8_char(const std::string& s, size_t i, const char* allowed = "") {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return (c >= 0x20 && c != 0x7f) || (c != 0 && std::strchr(allowed, c)) ? 1 : 0;
  const data::Utf8Prefix p = data::utf8_prefix(s, i);
  return p.well_formed() ? static_cast<size_t>(p.len) : 0;
}

// Whether `s` is text a user wrote: valid UTF-8, no control characters but tab and CR.
inline bool is_text(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_char(s, i, "\t\r");
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// `msg` with every byte a terminal should not be sent escaped as \xNN: control characters and
// bytes that are not part of valid UTF-8 (an error that quotes a binary file given by mistake,
// a PNG as a TOML, would otherwise print raw bytes). Valid UTF-8 text passes unchanged.
inline std::string printable(const std::string& msg) {
  std::string out;
  const auto* b = reinterpret_cast<const unsigned char*>(msg.data());
  const size_t n = msg.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = b[i];
    const size_t len = utf8_char(msg, i);
    if (len > 0) {
      out.append(msg, i, len);
      i += len;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
      ++i;
    }
  }
  return out;
}

// CLI11's wording of a flag given twice, in the house form: "--max-len: At Most 1 required but
// received 2" -> "--max-len: expected once, got 2 times". Other messages pass unchanged.
inline std::string house_form(const std::string& msg) {
  const std::string at_most = ": At Most 1 required but received ";
  if (const size_t p = msg.find(at_most); p != std::string::npos)
    return msg.substr(0, p) + ": expected once, got " + msg.substr(p + at_most.size()) + " times";
  return msg;
}

// Parses `app` (CLI11: argv, or a vector of arguments in reverse order). nullopt: go on;
// otherwise the status to exit with.
template <class... Args>
std::optional<int> parse(CLI::App& app, const char* tool, Args&&... args) {
  // Progress lines appear as they are printed, also when redirected to a file or a pipe
  // (stdout is block-buffered there by default; a log read with tail -f would lag minutes).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  detail::crash_tool = tool;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, detail::on_crash);
  try {
    app.parse(std::forward<Args>(args)...);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    say_error(tool, printable(house_form(e.what())) + " (see --help)");
    return kExitUsage;
  }
  return std::nullopt;
}

// A flag whose value names files inside a folder (--study: its CSV, plots and run folders):
// letters, digits, '.', '_' and '-', not starting with '.', so it cannot leave the folder
// ("../x"), make sub-folders ("a/b") or hide a file.
inline CLI::Validator file_name_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        const bool ok = !v.empty() && v[0] != '.' &&
                        v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789._-") == std::string::npos;
        return ok ? "" : "expected a name of letters, digits, '.', '_' or '-' (it names files "
                         "in --dir), got '" + v + "'";
      },
      "NAME");
}

// A flag naming a file to read (a config, a vocabulary, a file of reviews): it must be there
// and not be a folder. Checked as the command line is read, so a typo is one line and exit 2
// before anything starts (a download, a run folder), like any other bad flag.
inline CLI::Validator existing_file(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        std::error_code ec;
        const auto st = std::filesystem::status(v, ec);
        if (v.empty()) return "expected " + what + ", got an empty name";
        if (!std::filesystem::exists(st)) return "expected " + what + ", got '" + v + "' (no such file)";
        if (std::filesystem::is_directory(st)) return "expected " + what + ", got '" + v + "' (a folder)";
        return "";
      },
      "FILE");
}

// A flag whose empty value would quietly mean "not given" (--data-dir '' reading the default
// folder, --resume '' starting a new run, --storage '' the default database): refused.
inline CLI::Validator nonempty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        return v.empty() ? "expected " + what + ", got an empty name" : "";
      },
      "TEXT");
}

// A folder to write into, made when missing (mase-search --dir): a name, and not a file. Checked
// as the command line is read, before anything is opened or created (a studies.db in the
// current folder for --dir '', a filesystem_error at the first create_directories for a file).
inline CLI::Validator folder_to_write(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        std::error_code ec;
        if (v.empty()) return "expected " + what + ", got an empty name";
        const auto st = std::filesystem::status(v, ec);
        if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
          return "expected " + what + ", got '" + v + "' (a file)";
        return "";
      },
      "DIR");
}

// A file to write (a report's CSV): a name, and not a folder, checked before the work whose
// result it holds (a folder would fail only at the end, the work lost).
inline CLI::Validator file_to_write(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        std::error_code ec;
        if (v.empty()) return "expected " + what + ", got an empty name";
        if (std::filesystem::is_directory(v, ec)) return "expected " + what + ", got '" + v + "' (a folder)";
        return "";
      },
      "FILE");
}

// The first flag of `app` given on the command line that `allowed` does not list, or "": what a
// mode that reads only some flags refuses (mase-train --resume, --eval-only; mase-search
// --plot), since a flag it does not read would be silently ignored.
inline std::string flag_outside(const CLI::App& app, const std::vector<std::string>& allowed) {
  for (const CLI::Option* o : app.get_options()) {
    const std::string name = o->get_name();
    if (o->count() == 0 || name.rfind("--", 0) != 0) continue;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) return name;
  }
  return "";
}

// A seed: a whole number >= 0. CLI11 reads "-1" into an unsigned flag as 2^64 - 1 without a
// word; refused here instead.
inline CLI::Validator seed_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        const bool ok = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
        return ok ? "" : "expected a whole number >= 0, got '" + v + "'";
      },
      "UINT");
}

// Runs body() (which returns the exit status) and reports what it throws as one line.
template <class F>
int run(const char* tool, F&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    say_error(tool, printable(e.what()));
    return kExitUsage;
  } catch (const Error& e) {
    say_error(tool, printable(e.what()));
    return kExitError;
  } catch (const std::exception& e) {
    say_error(tool, "unexpected error: " + printable(e.what()));
    return kExitError;
  }
}

}  // namespace mase::cli
