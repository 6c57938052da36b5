// Modes of the exact log posterior by Newton ascent from several starts, with their Laplace
// approximations: used to build independence proposals with one component per mode, for
// posteriors that VB covers with a single narrow Gaussian (docs/experiments-multimodal.md).
#pragma once

#include <Eigen/Core>

#include <vector>

namespace vbn {

class Target;

struct PosteriorMode {
    Eigen::VectorXd mode;
    Eigen::MatrixXd cov;       // the inverse of minus the Hessian there (Laplace)
    double log_density = 0;    // Target::log_density at the mode
    double log_mass = 0;       // Laplace: log_density + ½ log det(2π cov)
};

// Damped Newton from each start (posterior_mode of runtime/variational/vb_refine.hpp: a finite-difference
// Hessian of the analytic gradient, shifted where it is not negative definite, with
// backtracking). Starts that do not end at a mode with a negative definite Hessian are dropped; modes within Mahalanobis
// distance 1 of one already found are merged. Sorted by decreasing log_mass.
std::vector<PosteriorMode> find_posterior_modes(const Target& target, const std::vector<Eigen::VectorXd>& starts,
                                                int max_iterations = 100);

}  // namespace vbn
