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

}  // namespace vbn::test
