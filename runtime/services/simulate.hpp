// The simulation job (`vbn simulate`): parameters from the prior, or given as JSON, then
// rows sampled forward in topological order (runtime/predictive/simulate.hpp).
#pragma once

#include "lang/ir.hpp"
#include "runtime/services/callbacks.hpp"

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <ostream>

namespace vbn::services {

struct SimulateSettings {
    long rows = 100;
    std::uint64_t seed = 1;
    bool include_hidden = false;            // also write the hidden nodes' values
    std::optional<nlohmann::json> params;   // {"w": [2, -1], ...}; parameters left out are drawn
    std::string params_name = "the given values";  // what messages call them (a file name)
};

// Writes the rows as CSV to `csv` and returns the parameters they were drawn with (the
// graph's layout). Notes (parameters drawn from their priors, covariates drawn N(0, 1)) go
// to callbacks.log. Throws vbn::Error (usage for bad settings or parameters).
Eigen::VectorXd simulate(const ir::Graph& graph, const SimulateSettings& settings, std::ostream& csv,
                         const Callbacks& callbacks = {});

}  // namespace vbn::services
