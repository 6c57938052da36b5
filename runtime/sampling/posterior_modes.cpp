#include "runtime/sampling/posterior_modes.hpp"

#include "runtime/target/target.hpp"
#include "runtime/variational/vb_refine.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace vbn {

std::vector<PosteriorMode> find_posterior_modes(const Target& target, const std::vector<Eigen::VectorXd>& starts,
                                                int max_iterations) {
    const int d = target.dim();
    Target::Workspace ws = target.make_workspace();
    std::vector<PosteriorMode> modes;
    for (const Eigen::VectorXd& start : starts) {
        // The correction's damped Newton (runtime/variational/vb_refine.hpp): converged means a stationary
        // point with a positive definite negative Hessian, whose inverse is the Laplace covariance.
        NewtonMode found = posterior_mode(target, start, max_iterations);
        if (!found.converged) continue;
        const Eigen::LLT<Eigen::MatrixXd> cov(found.cov);
        if (cov.info() != Eigen::Success) continue;
        bool known = false;
        for (const PosteriorMode& m : modes) {
            const Eigen::LLT<Eigen::MatrixXd> c(m.cov);
            if ((found.mode - m.mode).dot(c.solve(found.mode - m.mode)) < 1) known = true;
        }
        if (known) continue;
        PosteriorMode m;
        m.log_density = target.log_density(found.mode, ws);
        if (!std::isfinite(m.log_density)) continue;
        const Eigen::MatrixXd l = cov.matrixL();
        // log det(cov) = 2 Σ log L_ii of the covariance's Cholesky factor.
        m.log_mass = m.log_density + 0.5 * d * std::log(2 * std::numbers::pi) + l.diagonal().array().log().sum();
        m.mode = std::move(found.mode);
        m.cov = std::move(found.cov);
        modes.push_back(std::move(m));
    }
    std::sort(modes.begin(), modes.end(), [](const PosteriorMode& a, const PosteriorMode& b) { return a.log_mass > b.log_mass; });
    return modes;
}

}  // namespace vbn
