// Forward simulation from a model: parameters from the prior (or given), then rows sampled
// in topological order (`vbn simulate`, docs/design.md §3).
#pragma once

#include "inference/rng.hpp"
#include "lang/ir.hpp"
#include "runtime/target/prior.hpp"  // draw_prior, which simulate starts from

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace vbn {

// θ from JSON such as {"w": [2, -1], "b": 0.5, "W": [[1, 2], [3, 4]]}: scalars as numbers,
// vectors as arrays, matrices as arrays of rows. Parameters the JSON leaves out keep the
// values they have in `theta` on entry. Unknown names and wrong shapes throw vbn::Error
// (kind usage) naming the parameter.
void theta_from_json(const ir::Graph& graph, const nlohmann::json& params, Eigen::VectorXd& theta,
                     std::vector<std::string>* given = nullptr);

// θ as JSON in the same shape: {"w": [2, -1], ...}.
nlohmann::ordered_json theta_to_json(const ir::Graph& graph, const Eigen::VectorXd& theta);

// The linear predictor of element e's CPD at θ: offset + Σ fixed + θ_b' f, with element
// values x (±1 for binary nodes, real for covariates).
double linear_predictor(const ir::Graph& g, int e, const Eigen::Ref<const Eigen::VectorXd>& theta,
                        const std::vector<double>& x);

struct SimulateOptions {
    long rows = 100;
    bool include_hidden = false;  // also write the hidden nodes' values
};

// Samples `rows` rows given θ and writes them as CSV: a header of element names, then
// binary values as 1/-1 and covariates (which have no distribution in the model) drawn
// iid N(0, 1). Columns in element declaration order.
void simulate_csv(const ir::Graph& graph, const Eigen::VectorXd& theta, const SimulateOptions& options,
                  inference::Rng& rng, std::ostream& out);

}  // namespace vbn
