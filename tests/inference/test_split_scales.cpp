// A proposal with split scales (inference/gaussian.hpp, Geweke's split-t): each whitened axis
// stretched by its own factor on each side, alone or before a triangular map. Its density
// integrates to one, its draws and overrelaxed moves follow it, and the stretch is where it
// says. Statistical checks use fixed seeds and 4 standard errors.
#include "gaussian_targets.hpp"

#include "inference/gaussian.hpp"
#include "inference/triangular_map.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace vbn::inference;

namespace {

// A small symmetric third-derivative tensor for the 2-D map.
std::shared_ptr<const TriangularMap> small_map() {
    std::vector<Eigen::MatrixXd> a(2, Eigen::MatrixXd::Zero(2, 2));
    a[0](0, 0) = 0.3;                             // A_000
    a[0](0, 1) = a[0](1, 0) = a[1](0, 0) = -0.2;  // A_001
    a[0](1, 1) = a[1](0, 1) = a[1](1, 0) = 0.1;   // A_011
    a[1](1, 1) = 0.25;                            // A_111
    return std::make_shared<const TriangularMap>(TriangularMap::from_third_derivatives(a));
}

}  // namespace

TEST_CASE("split scales: the density integrates to one, draws and overrelaxed moves follow it, alone or with a map") {
    Eigen::MatrixXd cov(2, 2);
    cov << 1.0, 0.5, 0.5, 1.5;
    const Eigen::Vector2d mu(0.5, -1.0);
    const Eigen::Vector2d below(1.0, 2.5), above(3.0, 1.0);
    for (const bool mapped : {false, true})
        for (const double df : {GaussianProposal::gaussian_df, 30.0}) {
            CAPTURE(mapped);
            CAPTURE(df);
            GaussianProposal q(mu, cov, df);
            if (mapped) q.set_map(small_map());
            q.set_split(below, above);
            REQUIRE(q.has_split());
            const vbn::test::GridMoments g = vbn::test::grid_moments(q, mu, 24, 1601);
            CHECK(g.mass == doctest::Approx(1.0).epsilon(2e-3));
            // The stretch moved the mean off the unstretched proposal's (μ without a map).
            if (!mapped) CHECK((g.mean - mu).norm() > 0.5);
            const std::string failed = vbn::test::check_proposal_draws(q, g.mean, g.cov, 31);
            CHECK_MESSAGE(failed.empty(), failed);
        }
}

TEST_CASE("split scales: the point of a whitened z is μ + L (s± z), and each side is stretched by its own factor") {
    Eigen::MatrixXd cov(2, 2);
    cov << 4.0, 1.0, 1.0, 2.0;
    const Eigen::Vector2d mu(1.0, 2.0);
    GaussianProposal q(mu, cov);
    const Eigen::MatrixXd lower = q.cholesky();
    q.set_split(Eigen::Vector2d(0.5, 2.0), Eigen::Vector2d(3.0, 1.5));
    Eigen::VectorXd x(2), u(2);
    for (const Eigen::Vector2d& z : {Eigen::Vector2d(1.0, -1.0), Eigen::Vector2d(-2.0, 0.5)}) {
        const Eigen::Vector2d stretched(z[0] * (z[0] >= 0 ? 3.0 : 0.5), z[1] * (z[1] >= 0 ? 1.5 : 2.0));
        const double lq = q.point(z, x);
        CHECK((x - (mu + lower * stretched)).norm() < 1e-12);
        // whiten() gives z back, and the density is the Gaussian's at z less log |∂z'/∂z|.
        CHECK(q.whiten(x, u) == doctest::Approx(lq).epsilon(1e-12));
        CHECK((u - z).norm() < 1e-12);
        const double log_jacobian = std::log(z[0] >= 0 ? 3.0 : 0.5) + std::log(z[1] >= 0 ? 1.5 : 2.0);
        const double gaussian = -std::log(2 * M_PI) - lower.diagonal().array().log().sum() - 0.5 * z.squaredNorm();
        CHECK(lq == doctest::Approx(gaussian - log_jacobian).epsilon(1e-12));
    }
}

TEST_CASE("split scales: refused where they cannot apply; a marginal other than the whole and assign() drop them") {
    GaussianProposal q(Eigen::Vector2d(0, 0), Eigen::Matrix2d::Identity());
    CHECK_THROWS_AS(q.set_split(Eigen::Vector2d(1, 1), Eigen::Vector3d(1, 1, 1)), std::invalid_argument);
    CHECK_THROWS_AS(q.set_split(Eigen::Vector2d(1, 0), Eigen::Vector2d(1, 1)), std::invalid_argument);
    CHECK_THROWS_AS(q.set_split(Eigen::Vector2d(1, 1), Eigen::Vector2d(1, INFINITY)), std::invalid_argument);
    CHECK(!q.has_split());
    std::vector<Eigen::MatrixXd> blocks(2, Eigen::MatrixXd::Identity(1, 1));
    GaussianProposal two_blocks(Eigen::Vector2d(0, 0), blocks);
    CHECK_THROWS_AS(two_blocks.set_split(Eigen::Vector2d(1, 2), Eigen::Vector2d(2, 1)), std::invalid_argument);
    q.set_split(Eigen::Vector2d(1, 2), Eigen::Vector2d(2, 1));
    CHECK_THROWS_AS(q.marginal(0, 1), std::invalid_argument);
    CHECK(q.marginal(0, 2).has_split());
    GaussianProposal refit = q;
    refit.assign(Eigen::Vector2d(1, 1), q.cholesky());
    CHECK(!refit.has_split());
    q.set_split(Eigen::VectorXd(), Eigen::VectorXd());
    CHECK(!q.has_split());
}
