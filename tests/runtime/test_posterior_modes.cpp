// Mode search on the exact log posterior (runtime/sampling/posterior_modes.hpp) against the grid.
#include "runtime/data/dataset.hpp"
#include "runtime/sampling/fit.hpp"
#include "validation/grid_posterior.hpp"
#include "runtime/data/model.hpp"
#include "runtime/sampling/posterior_modes.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/LU>
#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace vbn;

TEST_CASE("mode search finds both modes of the bimodal example where the grid has them, largest Laplace mass first") {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
    const ir::Graph g = load_model(dir + "bimodal.vbn");
    const Dataset d = load_csv(g, dir + "bimodal.csv");
    const auto target = make_target(g, d);
    const GridPosterior grid = grid_posterior(*target, Eigen::Vector2d(-8, -8), Eigen::Vector2d(12, 6), 401);
    REQUIRE(grid.modes.size() == 2);
    // Starts on either side, one of them twice (merged), one far out in the prior's tail.
    const std::vector<Eigen::VectorXd> starts{Eigen::Vector2d(4, 0), Eigen::Vector2d(-3, -2), Eigen::Vector2d(3.5, -1),
                                              Eigen::Vector2d(9, 5)};
    const std::vector<PosteriorMode> modes = find_posterior_modes(*target, starts);
    REQUIRE(modes.size() == 2);
    const double spacing = 20.0 / 400;
    for (int k = 0; k < 2; ++k) {
        CAPTURE(k);
        CHECK((modes[static_cast<std::size_t>(k)].mode - grid.modes[static_cast<std::size_t>(k)].location).cwiseAbs().maxCoeff() <=
              spacing);
        // The Laplace covariance is positive definite and its log mass is consistent.
        CHECK(modes[static_cast<std::size_t>(k)].cov.determinant() > 0);
    }
    CHECK(modes[0].log_mass > modes[1].log_mass);
    // The gradient vanishes at the modes.
    Eigen::VectorXd grad(2);
    for (const auto& m : modes) {
        target->log_density_gradient(m.mode, grad);
        CHECK(grad.norm() < 1e-6);
    }
}
