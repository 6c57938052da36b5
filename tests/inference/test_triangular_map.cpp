// The triangular map that skews a proposal (inference/triangular_map.hpp) and a proposal skewed
// by it: a bijection with the log-Jacobian it reports, and a density that integrates to one,
// that its draws follow and that its overrelaxed moves leave invariant. Statistical checks use
// fixed seeds and 4 standard errors.
#include "gaussian_targets.hpp"

#include "inference/gaussian.hpp"
#include "inference/triangular_map.hpp"

#include <doctest/doctest.h>

#include <Eigen/LU>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace vbn::inference;

namespace {

// A tensor symmetric in its three indices, of entries up to `size` (a skewed posterior's
// whitened third derivatives are of order 1/sqrt(rows)).
std::vector<Eigen::MatrixXd> symmetric_tensor(int d, double size, unsigned seed) {
    Rng rng(seed, 1);
    std::vector<Eigen::MatrixXd> a(static_cast<std::size_t>(d), Eigen::MatrixXd::Zero(d, d));
    for (int i = 0; i < d; ++i)
        for (int j = i; j < d; ++j)
            for (int k = j; k < d; ++k) {
                const double v = size * (2 * rng.uniform() - 1);
                const int idx[6][3] = {{i, j, k}, {i, k, j}, {j, i, k}, {j, k, i}, {k, i, j}, {k, j, i}};
                for (const auto& p : idx) a[static_cast<std::size_t>(p[0])](p[1], p[2]) = v;
            }
    return a;
}

}  // namespace

TEST_CASE("triangular map: the inverse undoes the map, and the log-Jacobian is log det of its derivative") {
    const int d = 4;
    const TriangularMap t = TriangularMap::from_third_derivatives(symmetric_tensor(d, 0.3, 5));
    Eigen::VectorXd z(d), y(d), back(d), yp(d), ym(d);
    Rng rng(3, 1);
    for (int rep = 0; rep < 20; ++rep) {
        for (int i = 0; i < d; ++i) z[i] = (rep < 10 ? 1.0 : 6.0) * rng.normal();  // the last ten far out (clamps bind)
        const double lj = t.forward(z, y);
        REQUIRE(y.allFinite());
        back = y;
        CHECK(t.inverse(back) == doctest::Approx(lj).epsilon(1e-12));
        CHECK((back - z).norm() <= 1e-10 * (1 + z.norm()));
        // ∂y/∂z by central differences: lower triangular, and its log determinant.
        Eigen::MatrixXd jac(d, d);
        for (int c = 0; c < d; ++c) {
            const double h = 1e-6;
            Eigen::VectorXd zp = z, zm = z;
            zp[c] += h;
            zm[c] -= h;
            t.forward(zp, yp);
            t.forward(zm, ym);
            jac.col(c) = (yp - ym) / (2 * h);
        }
        CHECK(jac.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().cwiseAbs().maxCoeff() < 1e-6);
        CHECK(std::log(std::abs(jac.determinant())) == doctest::Approx(lj).epsilon(1e-6));
    }
    // With a zero tensor it is the identity.
    const TriangularMap id = TriangularMap::from_third_derivatives(std::vector<Eigen::MatrixXd>(3, Eigen::MatrixXd::Zero(3, 3)));
    Eigen::VectorXd z3 = Eigen::VectorXd::LinSpaced(3, -1, 2), y3(3);
    CHECK(id.forward(z3, y3) == 0.0);
    CHECK(y3 == z3);
    // Malformed tensors are refused.
    CHECK_THROWS_AS(TriangularMap::from_third_derivatives(std::vector<Eigen::MatrixXd>(3, Eigen::MatrixXd::Zero(2, 3))),
                    std::invalid_argument);
    std::vector<Eigen::MatrixXd> bad = symmetric_tensor(2, 0.1, 1);
    bad[1](0, 1) = std::nan("");
    CHECK_THROWS_AS(TriangularMap::from_third_derivatives(bad), std::invalid_argument);
}

TEST_CASE("triangular map: the map is its formula, in every group of coordinates, at every size") {
    // forward computes the coordinates' drifts and scales eight at a time from columns of
    // coefficients (the first group holding d mod 8); here they are summed as written.
    for (const int d : {1, 2, 7, 8, 9, 16, 20, 23, 50, 64}) {
        CAPTURE(d);
        const auto a = symmetric_tensor(d, 0.6 / std::sqrt(static_cast<double>(d)), 40u + static_cast<unsigned>(d));
        const TriangularMap t = TriangularMap::from_third_derivatives(a);
        Rng rng(7, static_cast<std::uint64_t>(d));
        Eigen::VectorXd z(d), y(d), want(d), back(d);
        for (int rep = 0; rep < 6; ++rep) {
            for (int i = 0; i < d; ++i) z[i] = (rep < 3 ? 1.0 : 4.0) * rng.normal();  // the last three far out
            double want_log_jacobian = 0;
            for (int k = 0; k < d; ++k) {
                const auto& ak = a[static_cast<std::size_t>(k)];
                double quad = 0, lin = 0, b = ak(k, k);
                for (int i = 0; i < k; ++i) {
                    lin += 0.5 * ak(k, i) * z[i];
                    for (int j = 0; j < k; ++j) quad += 0.5 * ak(i, j) * z[i] * z[j];
                }
                for (int j = k + 1; j < d; ++j) b += ak(j, j);
                const double m = std::clamp(quad, -TriangularMap::max_drift, TriangularMap::max_drift);
                const double u = std::clamp(lin, -TriangularMap::max_log_scale, TriangularMap::max_log_scale);
                want[k] = 0.5 * b + m + std::exp(u) * z[k];
                want_log_jacobian += u;
            }
            const double lj = t.forward(z, y);
            CHECK(lj == doctest::Approx(want_log_jacobian).epsilon(1e-12));
            CHECK((y - want).cwiseAbs().maxCoeff() <= 1e-12 * (1 + want.cwiseAbs().maxCoeff()));
            back = y;
            CHECK(t.inverse(back) == doctest::Approx(lj).epsilon(1e-12));
            CHECK((back - z).cwiseAbs().maxCoeff() <= 1e-10 * (1 + z.cwiseAbs().maxCoeff()));
        }
    }
}

TEST_CASE("a proposal skewed by a map: its density integrates to one, its draws follow it, overrelaxed moves keep it") {
    // 2-D, so that a grid gives the density's mass and moments exactly enough.
    Eigen::MatrixXd cov(2, 2);
    cov << 1.0, 0.6, 0.6, 2.0;
    const Eigen::Vector2d mu(0.5, -1.0);
    const auto map = std::make_shared<const TriangularMap>(TriangularMap::from_third_derivatives(symmetric_tensor(2, 0.4, 9)));
    for (const double df : {GaussianProposal::gaussian_df, 30.0}) {
        CAPTURE(df);
        GaussianProposal q(mu, cov, df);
        q.set_map(map);
        REQUIRE(q.has_map());
        // Grid over ±14 units around μ: the mass, mean and covariance of the density.
        const vbn::test::GridMoments g = vbn::test::grid_moments(q, mu, 14, 1401);
        CHECK(g.mass == doctest::Approx(1.0).epsilon(2e-3));
        const Eigen::Vector2d m1 = g.mean;
        const Eigen::Matrix2d var = g.cov;
        // The map moved the mean off μ, else the moment checks below could not tell.
        CHECK((m1 - mu).norm() > 0.1);
        // Independent draws, and one overrelaxed move from each: both have the grid's moments.
        const std::string failed = vbn::test::check_proposal_draws(q, m1, var, 21);
        CHECK_MESSAGE(failed.empty(), failed);
        // A map needs one block of its own size; a marginal other than the whole is refused;
        // assign() removes the map.
        CHECK_THROWS_AS(q.marginal(0, 1), std::invalid_argument);
        CHECK(q.marginal(0, 2).has_map());
        GaussianProposal three(Eigen::VectorXd::Zero(3), Eigen::MatrixXd::Identity(3, 3));
        CHECK_THROWS_AS(three.set_map(map), std::invalid_argument);
        GaussianProposal refit = q;
        refit.assign(mu, q.cholesky());
        CHECK(!refit.has_map());
    }
}
