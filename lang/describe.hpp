// Human-readable pictures of a checked model: the text `vbn check` prints, and Graphviz DOT.
#pragma once

#include "lang/ir.hpp"

#include <string>

namespace vbn::lang {

// The graph as `vbn check` prints it: nodes in topological order with their kind and
// distribution, the parameters with shapes and priors, and the parameter blocks.
std::string describe(const ir::Graph& graph);

// The predictor of one binary element in canonical form, e.g. "2 + w[1]*h + w[2]*o".
std::string predictor_text(const ir::Graph& graph, int element);

// Graphviz DOT of the network: one vertex per element (hidden dashed, covariates boxes),
// one edge per parent, labelled with its weight's name or fixed value.
std::string to_dot(const ir::Graph& graph);

}  // namespace vbn::lang
