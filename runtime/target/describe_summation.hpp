// What `vbn check --data` prints about summing a data set's unobserved values out row by row
// (the exact target): the largest group linked in one row, the widest elimination, and the
// rows too wide to sum out.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"

#include <string>

namespace vbn {

// Empty when no row has unobserved values that matter (hidden or missing with an observed
// descendant). max_enumerated as TargetOptions::max_enumerated.
std::string describe_summation(const ir::Graph& graph, const Dataset& data, int max_enumerated = 12);

}  // namespace vbn
