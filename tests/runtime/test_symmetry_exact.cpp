// The symmetries lang/symmetry.hpp reports, checked against the exact log posterior (hidden
// nodes summed out) on random small models and random data: every reported flip and swap
// leaves it equal, and every flip it does not report changes it somewhere, so the detector is
// exact and not merely cautious.
#include "lang/symmetry.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>

namespace {

using namespace vbn;

// H hidden nodes, each feeding at least one of O observed nodes (a hidden node with no
// observed descendant sums to one and could have symmetries the term-by-term rule misses).
// Each choice is biased towards the symmetric case so that both outcomes occur often; a third
// of the models are plain (one root probability and one weight prior), where swaps occur.
std::string random_model(std::mt19937& rng, int H, int O) {
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const bool plain = pick(3) == 0;
    const char* root = pick(2) == 0 ? "0.3" : "0.5";
    const char* means[] = {"0", "0", "0", "0.4"};
    const char* sds[] = {"1", "1", "1", "2"};
    std::string text, priors;
    for (int k = 1; k <= H; ++k) {
        if (plain) {
            text += fmt::format("node h{} hidden ~ bernoulli({});\n", k, root);
        } else if (pick(3) == 0) {
            text += fmt::format("node h{} hidden ~ logistic({}a{});\n", k, pick(3) == 0 ? "0.4 + " : "", k);
            priors += fmt::format("a{} ~ normal({}, 1);\n", k, means[pick(4)]);
        } else {
            text += fmt::format("node h{} hidden ~ bernoulli({});\n", k, pick(3) == 0 ? "0.3" : "0.5");
        }
    }
    for (int j = 1; j <= O; ++j) {
        std::string terms = fmt::format("b{}", j);
        priors += fmt::format("b{} ~ normal({}, 1.5);\n", j, means[pick(4)]);
        for (int k = 1; k <= H; ++k) {
            const int r = pick(6);
            if (r == 0 && j < O) continue;  // the last observed node sees every hidden one
            if (r == 1 && !plain) {
                terms += fmt::format(" + 0.5 * h{}", k);
            } else {
                terms += fmt::format(" + w{}{} * h{}", j, k, k);
                priors += plain ? fmt::format("w{}{} ~ normal(0, 1);\n", j, k)
                                : fmt::format("w{}{} ~ normal({}, {});\n", j, k, means[pick(4)], sds[pick(4)]);
            }
        }
        text += fmt::format("node y{} ~ logistic({});\n", j, terms);
    }
    return text + priors;
}

std::string random_csv(std::mt19937& rng, int O, int rows) {
    std::string csv;
    for (int j = 1; j <= O; ++j) csv += fmt::format("{}y{}", j > 1 ? "," : "", j);
    csv += '\n';
    for (int t = 0; t < rows; ++t)
        for (int j = 1; j <= O; ++j) csv += fmt::format("{}{}", rng() % 2 ? "1" : "-1", j < O ? "," : "\n");
    return csv;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); }

}  // namespace

TEST_CASE("reported symmetries are exact and unreported flips are not") {
    std::mt19937 rng(20261127);
    std::normal_distribution<double> normal(0.0, 1.5);
    int exact_flips = 0, broken_flips = 0, swaps = 0;
    for (int model = 0; model < 60; ++model) {
        const int H = 1 + static_cast<int>(rng() % 3), O = 2 + static_cast<int>(rng() % 2);
        const std::string text = random_model(rng, H, O);
        INFO(text);
        const ir::Graph g = compile_model(text, "random.vbn");
        std::istringstream csv(random_csv(rng, O, 8));
        const Dataset data = load_csv(g, csv, "random.csv");
        const Target target(g, data);
        auto ws = target.make_workspace();
        const lang::Symmetries s = lang::find_symmetries(g);
        std::vector<Eigen::VectorXd> thetas;
        for (int d = 0; d < 4; ++d) {
            Eigen::VectorXd th(g.dim);
            for (int k = 0; k < g.dim; ++k) th[k] = normal(rng);
            thetas.push_back(th);
        }
        for (int h = 0; h < H; ++h) {
            const std::vector<int> coords = lang::flip_coordinates(g, h);
            if (coords.empty()) continue;  // fixed child terms only: the flip leaves θ as it is
            const bool reported = std::find(s.flips.begin(), s.flips.end(), h) != s.flips.end();
            bool all_equal = true;
            for (const auto& th : thetas) {
                Eigen::VectorXd flipped = th;
                for (int k : coords) flipped[k] = -flipped[k];
                const double a = target.log_density(th, ws), b = target.log_density(flipped, ws);
                if (reported) CHECK(close(a, b));
                all_equal = all_equal && close(a, b);
            }
            INFO("hidden node " << g.elements[static_cast<std::size_t>(h)].name);
            CHECK(all_equal == reported);
            (reported ? exact_flips : broken_flips) += 1;
        }
        for (const auto& cls : s.exchangeable)
            for (std::size_t m = 1; m < cls.size(); ++m) {
                const std::vector<int> perm = lang::swap_permutation(g, cls[0], cls[m]);
                REQUIRE(perm.size() == static_cast<std::size_t>(g.dim));
                for (const auto& th : thetas) {
                    Eigen::VectorXd swapped(g.dim);
                    for (int k = 0; k < g.dim; ++k) swapped[k] = th[perm[static_cast<std::size_t>(k)]];
                    CHECK(close(target.log_density(th, ws), target.log_density(swapped, ws)));
                }
                ++swaps;
            }
    }
    // The random models exercise both outcomes and some swaps.
    CHECK(exact_flips >= 10);
    CHECK(broken_flips >= 10);
    CHECK(swaps >= 3);
    MESSAGE(fmt::format("{} exact flips, {} broken, {} swaps", exact_flips, broken_flips, swaps));
}
