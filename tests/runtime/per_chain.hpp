// One scalar function of each draw's first two parameters, as an iterations × chains matrix
// (the layout inference::rhat and the ESS functions take), for the two-weight paper models;
// and the check of such a series' mean against an exact value.
#pragma once

#include "inference/diagnostics.hpp"
#include "runtime/sampling/fit.hpp"

#include <Eigen/Core>
#include <fmt/format.h>

#include <cmath>
#include <string>

namespace vbn::test {

template <class F>
Eigen::MatrixXd per_chain(const FitResult& r, F f) {
    Eigen::MatrixXd m(r.chains[0].draws.rows(), static_cast<Eigen::Index>(r.chains.size()));
    for (std::size_t c = 0; c < r.chains.size(); ++c)
        for (Eigen::Index i = 0; i < m.rows(); ++i)
            m(i, static_cast<Eigen::Index>(c)) = f(Eigen::Vector2d(r.chains[c].draws.row(i).head(2).transpose()));
    return m;
}

// Failures of |mean - truth| ≤ z · mcse, and of mcse ≤ floor (the check's power), as text
// (empty when both hold).
inline std::string check_moment(const std::string& what, const Eigen::MatrixXd& series, double truth, double floor,
                                double z = 4) {
    const double est = series.mean();
    const double se = inference::mcse_mean(series);
    std::string out;
    if (!(std::abs(est - truth) <= z * se))
        out += fmt::format("{}: {:.4g} vs exact {:.4g}, {:.2f} mcse (mcse {:.3g})\n", what, est, truth,
                           std::abs(est - truth) / se, se);
    if (!(se <= floor)) out += fmt::format("{}: mcse {:.3g} above {:.3g}: too few effective draws to check\n", what, se, floor);
    return out;
}

// Failures of a two-weight fit's means and covariances against exact ones (a grid's), each
// within 4 Monte Carlo errors, with floors on those errors of 0.1 sd for a mean and 0.2 sd²
// for a covariance so that every check has power.
inline std::string moment_failures(const FitResult& r, const Eigen::Vector2d& mean, const Eigen::Matrix2d& cov) {
    std::string failures;
    for (int i = 0; i < 2; ++i) {
        failures += check_moment(fmt::format("mean[{}]", i), per_chain(r, [&](const Eigen::Vector2d& x) { return x[i]; }),
                                 mean[i], 0.1 * std::sqrt(cov(i, i)));
        for (int j = 0; j <= i; ++j)
            failures += check_moment(fmt::format("cov[{},{}]", i, j), per_chain(r, [&](const Eigen::Vector2d& x) {
                                         return (x[i] - mean[i]) * (x[j] - mean[j]);
                                     }),
                                     cov(i, j), 0.2 * std::sqrt(cov(i, i) * cov(j, j)));
    }
    return failures;
}

}  // namespace vbn::test
