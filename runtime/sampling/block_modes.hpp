// The exact posterior's mode block by block, where the blocks do not interact.
#pragma once

#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <vector>

namespace vbn {

struct BlockModes {
    Eigen::VectorXd mode;
    std::vector<Eigen::MatrixXd> cov;  // per block: the Laplace covariance at its mode
    int iterations = 0;                // the most Newton steps a block took
    bool converged = false;            // every block at a stationary point, positive definite
};

// Where every block is complete (Target::complete_block: its terms are its prior and its own
// complete-family rows), the log posterior is a sum of one term per block, so its mode is
// every block's mode and its negative Hessian is block-diagonal. Each block's damped Newton
// then uses that block's exact negative Hessian (complete_block_negative_hessian) and
// block_log_density, as posterior_mode (runtime/variational/vb_refine.hpp) does for all of θ
// with a dense one: memory and time O(Σ block²), not O(dim²), so the exact proposal serves
// 10^5 blocks. Throws std::invalid_argument when some block is not complete.
BlockModes posterior_mode_by_block(const Target& target, const Eigen::VectorXd& start, int max_iterations = 30);

}  // namespace vbn
