// Test helper: the gradient of a target's log density by central differences, steps of
// 1e-5 relative to each coordinate (at least 1e-5), to check the analytic one against.
#pragma once

#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>

namespace vbn::test {

inline Eigen::VectorXd log_density_differences(const Target& t, Eigen::VectorXd theta) {
    Eigen::VectorXd g(theta.size());
    for (Eigen::Index k = 0; k < theta.size(); ++k) {
        const double h = 1e-5 * std::max(1.0, std::abs(theta[k])), x = theta[k];
        theta[k] = x + h;
        const double up = t.log_density(theta);
        theta[k] = x - h;
        const double down = t.log_density(theta);
        theta[k] = x;
        g[k] = (up - down) / (2 * h);
    }
    return g;
}

}  // namespace vbn::test
