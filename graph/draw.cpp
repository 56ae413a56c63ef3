// graph/draw.cpp — node table, DOT text and rendering through `dot` (see draw.h).
#include "graph/draw.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/op_table.h"
#include "runtime/atomic_file.h"

extern char** environ;

namespace mase::graph {
namespace {

std::string op_of(const Node& n) {
  if (!n.meta.empty()) return n.meta.mase_op;
  return n.target;
}

// The shape column: the value's shape, or for the output node the shapes it returns.
std::string result_of(const Node& n) {
  const auto& shown = n.op == OpKind::output ? n.meta.args : n.meta.results;
  std::string s;
  for (const auto& t : shown) s += (s.empty() ? "" : ", ") + t.str();
  return s.empty() ? std::string("-") : s;
}

// Text inside a double-quoted DOT string: quotes and backslashes escaped.
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

const char* fill_of(OpKind k) {
  switch (k) {
    case OpKind::placeholder:
      return "#c7e9c0";
    case OpKind::get_attr:
      return "#d9d9d9";
    case OpKind::call_module:
      return "#c6dbef";
    case OpKind::call_function:
      return "#fff7bc";
    case OpKind::call_method:
      return "#fde0c5";
    case OpKind::output:
      return "#fcbba1";
  }
  return "white";
}

std::string label_of(const Node& n) {
  std::vector<std::string> lines{n.name};
  std::string kind = std::string(name(n.op));
  if (n.op == OpKind::call_module)
    kind += " " + (n.meta.module_type.empty() ? n.target : n.meta.module_type);
  else if (n.op != OpKind::placeholder && n.op != OpKind::output)
    kind += " " + n.target;
  if (!n.meta.empty() && n.meta.mase_type != name(n.op))  // placeholder, get_attr, output: no news
    kind += "  [" + n.meta.mase_type + ": " + n.meta.mase_op + "]";
  lines.push_back(kind);
  if (n.op == OpKind::call_module) lines.push_back("module " + n.target);
  std::string attrs;
  for (const auto& [k, v] : n.attrs) {
    if (n.op == OpKind::placeholder) break;  // shape/dtype: shown as "out" below
    attrs += (attrs.empty() ? "" : ", ") + k + "=" + attr_str(v);
  }
  if (!attrs.empty()) lines.push_back(attrs);
  for (size_t i = 0; i < n.meta.args.size(); ++i)
    if (n.op != OpKind::output) lines.push_back(cat("in", i, ": ", n.meta.args[i].str()));
  for (const auto& r : n.meta.results) lines.push_back("out: " + r.str());
  for (const auto& p : n.meta.parameters)
    lines.push_back(
        cat(p.name, " ", p.shape, " ", p.precision.str(), p.trainable ? "" : " frozen"));
  std::string label;
  for (const auto& l : lines) label += dot_escape(l) + "\\l";  // \l: a left-aligned line
  return label;
}

void run_dot(const std::string& format, const std::string& dot_file, const std::string& out_file) {
  std::vector<std::string> argv_s{"dot", "-T" + format, "-o", out_file, dot_file};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  MASE_CHECK(rc == 0, IoError, "[draw] expected to run `dot` (Graphviz), got: ", std::strerror(rc),
             " (install the graphviz package, or draw to a .dot file)");
  int status = 0;
  waitpid(pid, &status, 0);
  MASE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, IoError, "[draw] expected `dot -T",
             format, "` to succeed on ", dot_file, ", got exit status ",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, " (its message is above)");
}

}  // namespace

std::string node_table(const Graph& g) {
  std::vector<std::array<std::string, 5>> rows{{"name", "kind", "op", "shape", "args"}};
  for (const Node* n : g.nodes()) {
    std::string args;
    for (const Node* a : n->args)
      args += (args.empty() ? "" : ", ") + (a ? a->name : std::string("-"));
    rows.push_back({n->name, std::string(name(n->op)), op_of(*n), result_of(*n), args});
  }
  std::array<size_t, 5> w{};
  for (const auto& r : rows)
    for (size_t c = 0; c < 5; ++c) w[c] = std::max(w[c], r[c].size());
  std::ostringstream os;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < 5; ++c)
      line += r[c] + std::string(c < 4 ? w[c] - r[c].size() + 2 : 0, ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
  }
  return os.str();
}

std::string to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph mase_graph {\n"
     << "  rankdir=TB;\n"
     << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [color=\"#555555\"];\n";
  for (const Node* n : g.nodes())
    os << "  \"" << dot_escape(n->name) << "\" [label=\"" << label_of(*n) << "\", fillcolor=\""
       << fill_of(n->op) << "\"];\n";
  for (const Node* n : g.nodes())
    for (const Node* a : n->args)
      if (a) os << "  \"" << dot_escape(a->name) << "\" -> \"" << dot_escape(n->name) << "\";\n";
  os << "}\n";
  return os.str();
}

bool have_dot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((std::filesystem::path(d) / "dot").c_str(), X_OK) == 0) return true;
  return false;
}

void draw(const Graph& g, const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  const std::string dot = to_dot(g);
  if (ext == ".dot") {
    write_text_atomic(path, dot);
    return;
  }
  MASE_CHECK(ext == ".svg" || ext == ".png" || ext == ".pdf", ConfigError,
             "[draw] expected a path ending in .svg, .png, .pdf or .dot, got '", path, "'");
  const std::string pid = std::to_string(::getpid());
  const std::string dot_file = path + ".tmp-" + pid + ".dot", out_tmp = path + ".tmp-" + pid;
  struct Cleanup {  // the temporaries go whatever happens
    std::string a, b;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove(a, ec);
      std::filesystem::remove(b, ec);
    }
  } cleanup{dot_file, out_tmp};
  {
    std::ofstream f(dot_file);
    f << dot;
    MASE_CHECK(f.good(), IoError, "[draw] expected to write ", dot_file,
               ", got a failed stream (is the folder there, and writable?)");
  }
  run_dot(ext.substr(1), dot_file, out_tmp);
  std::error_code ec;
  std::filesystem::rename(out_tmp, path, ec);
  MASE_CHECK(!ec, IoError, "[draw] expected to rename ", out_tmp, " to ", path, ", got: ",
             ec.message());
}

}  // namespace mase::graph
