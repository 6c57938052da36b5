// What `vbn check --data` prints about a data set against its model.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"

#include <string>

namespace vbn {

// Rows, distinct patterns, and per observed node the missing entries.
std::string describe_data(const ir::Graph& graph, const Dataset& data);

}  // namespace vbn
