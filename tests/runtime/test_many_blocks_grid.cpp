// The default method on a fully observed model of more than 200 weights, against each block's
// exact posterior on a grid. Above 200 weights the independence proposal is built block by
// block (runtime/sampling/block_modes.hpp) rather than from one dense Newton fit, so this is
// the case the block-wise path must get right: 110 children of one binary parent, each with
// its own intercept and weight (220 weights), 40 rows, true weights drawn wide enough that
// some children's counts sit near separation (skewed posteriors, a mode far from the mean).
//
// Every node is observed, so the posterior is the product of the blocks' posteriors, each a
// two-weight logistic regression whose likelihood depends on the data only through four
// counts n(a, y). The grid's density is written out here from those counts, independently of
// runtime/target.
#include "inference/diagnostics.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/sampling/fit.hpp"
#include "tests/runtime/per_chain.hpp"
#include "validation/grid_posterior.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace vbn;

// Named, not anonymous, and holding the test cases: the sanitizer build compiles test files
// together (unity batches), where two files' anonymous helpers of one name collide.
namespace many_blocks_grid {

constexpr int children = 110;
constexpr int rows = 40;
constexpr double prior_sd = 2;

double log_sigmoid(double z) { return z >= 0 ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z)); }

struct ManyBlocks {
    std::string model;
    std::string csv;
    // counts[i][2 * (a > 0) + (y > 0)]: rows of child i with parent a and value y.
    std::vector<std::array<int, 4>> counts;
};

// Data simulated from true intercepts and weights drawn from N(0, 2.5²), wider than the prior,
// so that some children are nearly separated by their parent.
ManyBlocks simulate(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> truth(0, 2.5);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> b(children), w(children);
    for (int i = 0; i < children; ++i) b[i] = truth(rng), w[i] = truth(rng);
    ManyBlocks m;
    m.model = fmt::format("node a ~ bernoulli(0.5);\nnode v[{}] ~ logistic(b + w * a);\nb ~ normal(0, {});\nw ~ normal(0, {});\n",
                          children, prior_sd, prior_sd);
    m.counts.assign(children, {0, 0, 0, 0});
    std::ostringstream csv;
    csv << "a";
    for (int i = 1; i <= children; ++i) csv << ",v[" << i << "]";
    csv << "\n";
    for (int r = 0; r < rows; ++r) {
        const int a = u(rng) < 0.5 ? 1 : -1;
        csv << a;
        for (int i = 0; i < children; ++i) {
            const int y = u(rng) < 1 / (1 + std::exp(-(b[i] + w[i] * a))) ? 1 : -1;
            csv << "," << y;
            ++m.counts[i][2 * (a > 0) + (y > 0)];
        }
        csv << "\n";
    }
    m.csv = csv.str();
    return m;
}

// Child i's exact posterior over (b_i, w_i): N(0, 2²) priors and its four counts.
GridPosterior child_grid(const std::array<int, 4>& n) {
    auto log_p = [&](const Eigen::Vector2d& x) {
        double lp = -(x[0] * x[0] + x[1] * x[1]) / (2 * prior_sd * prior_sd);
        for (int a = -1; a <= 1; a += 2)
            for (int y = -1; y <= 1; y += 2) lp += n[2 * (a > 0) + (y > 0)] * log_sigmoid(y * (x[0] + x[1] * a));
        return lp;
    };
    return grid_posterior(log_p, Eigen::Vector2d(-16, -16), Eigen::Vector2d(16, 16), 641);
}

// The draws of θ entries (ib, iw) as a chain's two-weight draws (per_chain reads the first two
// columns).
FitResult pick(const FitResult& r, int ib, int iw) {
    FitResult out;
    for (const auto& c : r.chains) {
        inference::ChainResult two;
        two.draws.resize(c.draws.rows(), 2);
        two.draws.col(0) = c.draws.col(ib);
        two.draws.col(1) = c.draws.col(iw);
        out.chains.push_back(std::move(two));
    }
    return out;
}


TEST_CASE("220 weights, every node observed: the default's draws against each block's grid" * doctest::timeout(300)) {
    const ManyBlocks m = simulate(11);
    const ir::Graph graph = compile_model(m.model, "many_blocks.vbn");
    REQUIRE(graph.dim == 2 * children);
    std::istringstream in(m.csv);
    const Dataset data = load_csv(graph, in, "many_blocks.csv");

    FitOptions o;
    o.seed = 5;
    o.threads = 2;
    const FitResult r = fit(graph, data, o);
    CHECK(r.method == "varblock");

    // θ index of each reported name (b[i], w[i]).
    std::map<std::string, int> index;
    for (std::size_t j = 0; j < r.names.size(); ++j) index[r.names[j]] = r.order[j];

    // Five checks per child, 550 in all: at 4.5 Monte Carlo standard errors each fails with
    // probability 7e-6 under correct sampling, so all pass with probability 0.996; the floors
    // (0.1 sd on a mean, 0.2 sd² on a covariance) keep each check able to fail.
    std::string failures;
    int near_separated = 0;
    for (int i = 0; i < children; ++i) {
        const auto& n = m.counts[static_cast<std::size_t>(i)];
        if (n[0] == 0 || n[1] == 0 || n[2] == 0 || n[3] == 0) ++near_separated;
        const GridPosterior g = child_grid(n);
        REQUIRE(g.edge_log_ratio < -20);  // the grid holds the posterior
        const FitResult two = pick(r, index.at(fmt::format("b[{}]", i + 1)), index.at(fmt::format("w[{}]", i + 1)));
        std::string child;
        for (int k = 0; k < 2; ++k) {
            child += test::check_moment(fmt::format("mean[{}]", k), test::per_chain(two, [&](const Eigen::Vector2d& x) { return x[k]; }),
                                        g.mean[k], 0.1 * std::sqrt(g.cov(k, k)), 4.5);
            for (int l = 0; l <= k; ++l)
                child += test::check_moment(fmt::format("cov[{},{}]", k, l), test::per_chain(two, [&](const Eigen::Vector2d& x) {
                                                return (x[k] - g.mean[k]) * (x[l] - g.mean[l]);
                                            }),
                                            g.cov(k, l), 0.2 * std::sqrt(g.cov(k, k) * g.cov(l, l)), 4.5);
        }
        if (!child.empty()) failures += fmt::format("child {} (counts {} {} {} {}):\n{}", i + 1, n[0], n[1], n[2], n[3], child);
    }
    // The check covers what it is for: children whose counts leave a cell empty.
    CHECK(near_separated >= 10);
    CHECK_MESSAGE(failures.empty(), failures);
}

}  // namespace many_blocks_grid
