// Third derivatives of the whole log posterior at a mode, in whitened coordinates, by finite
// differences of its exact gradient: for a posterior whose summed-out values couple the
// blocks (no closed form like Target::complete_block_third_derivatives), so that varmh's one
// t over all of θ can be skewed by the triangular map (inference/triangular_map.hpp).
#pragma once

#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <vector>

namespace vbn {

// out[k](i, j) = ∂³ log p / ∂y_k ∂y_i ∂y_j at θ = mode + lower · y, y = 0, symmetrised over
// the three indices. Each column pair (i, j) comes from the gradient's mixed second
// difference along e_i and e_j (step h in whitened units: its truncation error is O(h²) of
// the fifth derivative, its rounding error O(ε |∇| / h²)); 2d² + 1 gradients in all, made by
// `threads` threads (the result does not depend on how many). Throws std::invalid_argument
// where a gradient is not finite.
std::vector<Eigen::MatrixXd> whole_third_derivatives(const Target& target, const Eigen::VectorXd& mode,
                                                     const Eigen::MatrixXd& lower, int threads, double h = 0.1);

}  // namespace vbn
