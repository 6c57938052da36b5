// One scalar function of each draw's first two parameters, as an iterations × chains matrix
// (the layout inference::rhat and the ESS functions take), for the two-weight paper models.
#pragma once

#include "runtime/sampling/fit.hpp"

#include <Eigen/Core>

namespace vbn::test {

template <class F>
Eigen::MatrixXd per_chain(const FitResult& r, F f) {
    Eigen::MatrixXd m(r.chains[0].draws.rows(), static_cast<Eigen::Index>(r.chains.size()));
    for (std::size_t c = 0; c < r.chains.size(); ++c)
        for (Eigen::Index i = 0; i < m.rows(); ++i)
            m(i, static_cast<Eigen::Index>(c)) = f(Eigen::Vector2d(r.chains[c].draws.row(i).head(2).transpose()));
    return m;
}

}  // namespace vbn::test
