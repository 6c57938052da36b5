// A model with an interaction (a product of parents, docs/language.md) fitted by MCMC and
// checked against its exact posterior integrated on a grid (validation/grid_posterior.hpp).
// The hidden node h enters y only through the product h * o (and two children with fixed
// weights, which make its sign identifiable), and o is missing in a fifth of the rows, so the
// summed-out factors link h alone (o observed) and h and o together (o missing). Tolerances are 4 Monte Carlo standard errors from the chains' own ESS, with a
// floor on the standard error so that each check can fail (as in test_grid_checks.cpp).
#include "inference/diagnostics.hpp"
#include "inference/rng.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/target/target.hpp"
#include "tests/runtime/per_chain.hpp"
#include "validation/grid_posterior.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace vbn;

namespace {

const char* const model_text = "node h hidden ~ bernoulli(0.7);\n"
                               "node o ~ bernoulli(0.5);\n"
                               "node y ~ logistic(0.5 + w * [o, h * o]);\n"
                               "node z1 ~ logistic(2 * h);\n"
                               "node z2 ~ logistic(-1.5 * h);\n"
                               "w ~ normal(0, 2);\n";

// 300 rows simulated at w = (1, 2) with a fixed seed; o blanked in every fifth row.
Dataset interaction_data(const ir::Graph& g) {
    Eigen::VectorXd theta(2);
    theta << 1.0, 2.0;
    inference::Rng rng(35);
    std::ostringstream csv;
    simulate_csv(g, theta, SimulateOptions{300, false}, rng, csv);
    std::istringstream in(csv.str());
    std::ostringstream blanked;
    std::string line;
    std::getline(in, line);
    REQUIRE(line == "o,y,z1,z2");
    blanked << line << "\n";
    for (int r = 0; std::getline(in, line); ++r)
        blanked << (r % 5 == 4 ? "NA" + line.substr(line.find(',')) : line) << "\n";
    std::istringstream data(blanked.str());
    return load_csv(g, data, "interaction.csv");
}


}  // namespace

TEST_CASE("an interaction with a hidden factor: MCMC means and covariances against the grid" * doctest::timeout(300)) {
    const ir::Graph g = compile_model(model_text, "interaction.vbn");
    const Dataset data = interaction_data(g);
    const auto target = make_target(g, data);
    const GridPosterior grid = grid_posterior(*target, Eigen::Vector2d(-10, -10), Eigen::Vector2d(10, 10), 401);
    REQUIRE(grid.edge_log_ratio < -25);  // the grid holds the posterior
    for (const std::string method : {"auto", "nuts", "gibbs"}) {
        CAPTURE(method);
        FitOptions o;
        o.method = method;
        o.seed = 11;
        o.warmup = 1000;
        o.draws = 4000;
        o.chains = 4;
        o.threads = 2;
        const FitResult r = fit(g, data, o);
        const std::string failures = test::moment_failures(r, grid.mean, grid.cov);
        CHECK_MESSAGE(failures.empty(), failures);
    }
}
