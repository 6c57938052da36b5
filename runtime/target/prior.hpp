// The prior over the weights that the model declares: one Gaussian N(μ_b, Σ_b) per block.
#pragma once

#include "inference/rng.hpp"
#include "lang/ir.hpp"

#include <Eigen/Core>

namespace vbn {

// θ drawn from the prior N(μ_b, Σ_b) of every block.
Eigen::VectorXd draw_prior(const ir::Graph& graph, inference::Rng& rng);

}  // namespace vbn
