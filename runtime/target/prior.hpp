// The prior over the weights that the model declares: one Gaussian N(μ_b, Σ_b) per block,
// with Student-t entries where ir::Block::prior_df says so.
#pragma once

#include "inference/rng.hpp"
#include "lang/ir.hpp"

#include <Eigen/Core>

namespace vbn {

// θ drawn from the prior of every block (Student-t entries as scale mixtures of normals),
// learned scales first and the weights they scale given them; θ holds log τ.
Eigen::VectorXd draw_prior(const ir::Graph& graph, inference::Rng& rng);

}  // namespace vbn
