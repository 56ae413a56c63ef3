// tools/cli.h — what every mase-* main does around its own work: parse the flags, and turn an
// error into one line on stderr and an exit status.
//
//   if (auto status = mase::cli::parse(app, "mase-foo", argc, argv)) return *status;
//   return mase::cli::run("mase-foo", [&] { ...; return 0; });
//
// Exit status: 0 after --help; 2 for bad flags or a ConfigError (the user can fix the command);
// 1 for any other error (a file, a device, something unexpected).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <optional>

#include "runtime/error.h"

namespace mase::cli {

constexpr int kExitError = 1, kExitUsage = 2;

// Parses `app` (CLI11: argv, or a vector of arguments in reverse order). nullopt: go on;
// otherwise the status to exit with.
template <class... Args>
std::optional<int> parse(CLI::App& app, const char* tool, Args&&... args) {
  // Progress lines appear as they are printed, also when redirected to a file or a pipe
  // (stdout is block-buffered there by default; a log read with tail -f would lag minutes).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    app.parse(std::forward<Args>(args)...);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", tool, e.what());
    return kExitUsage;
  }
  return std::nullopt;
}

// Runs body() (which returns the exit status) and reports what it throws as one line.
template <class F>
int run(const char* tool, F&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return kExitUsage;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected error: %s\n", tool, e.what());
    return kExitError;
  }
}

}  // namespace mase::cli
