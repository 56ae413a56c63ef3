// graph/draw.h — a graph as text: the node table, Graphviz DOT, and SVG/PNG through `dot`.
//
//   std::cout << node_table(g);        // name, kind, op, output shape: one line per node
//   draw(g, "bert.svg");               // DOT written here, rendered by Graphviz's `dot`
//
// The DOT text is ours (one box per node: its name, kind, op and attrs, the shapes flowing in
// and out, and the parameters of a call_module node with their shape and precision; one edge
// per use). Rendering runs the `dot` program (Debian package graphviz) on it: drawing to a
// ".dot" path writes the text only; ".svg", ".png" and ".pdf" are rendered. Files are
// written to a temporary name and renamed, so a failed render leaves nothing half-written.
// Read next: graph/export.h.
#pragma once
#include <string>

#include "graph/graph.h"

namespace mase::graph {

// One row per node: name, kind (placeholder, call_module, …), op (mase_op when the metadata
// pass ran, else the target), the output's shape and dtype, and the args' names.
std::string node_table(const Graph& g);

std::string to_dot(const Graph& g);

// Writes `path` (.dot, .svg, .png or .pdf). IoError when `dot` is missing or fails (with its
// exit status; dot's own message goes to stderr); ConfigError for another extension.
void draw(const Graph& g, const std::string& path);

bool have_dot();  // the `dot` program is on PATH

}  // namespace mase::graph
