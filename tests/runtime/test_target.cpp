// The compiled target against exact answers: naive per-row enumeration of the full joint,
// finite differences, and invariances of the pattern compression.
#include "runtime/target/target.hpp"

#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/factor_tables.hpp"
#include "runtime/target/family_memo.hpp"
#include "runtime/target/row_table.hpp"
#include "tests/support/graph_builder.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace vbn;
using inference::log_inv_logit;
using inference::Rng;
using Vec = Eigen::VectorXd;

// Builds an ir::Graph by hand (tests/support/graph_builder.hpp); the block of a logistic
// node `name` is the parameter w_name.
struct ModelBuilder : test::GraphBuilder {
    // logit P(x = +1) = offset + Σ fixed + θ' f, θ ~ N(mean, sd²) iid.
    int logistic(const std::string& name, bool hidden, double offset, std::vector<ir::FixedTerm> fixed,
                 std::vector<ir::Feature> features, double mean = 0, double sd = 2) {
        const std::size_t n = features.size();
        return logistic_cov(name, hidden, offset, std::move(fixed), std::move(features), std::vector<double>(n, mean),
                            test::diagonal_cov(std::vector<double>(n, sd)), true);
    }
    int logistic_cov(const std::string& name, bool hidden, double offset, std::vector<ir::FixedTerm> fixed,
                     std::vector<ir::Feature> features, std::vector<double> mean, std::vector<double> cov,
                     bool diagonal) {
        const int n = static_cast<int>(features.size());
        return logistic_block(name, hidden, offset, std::move(fixed), std::move(features), "w_" + name, {n}, std::move(mean),
                              std::move(cov), diagonal);
    }
};

using test::bias;
using test::on;

using test::make_dataset;
using test::Row;

// log p(x_v, θ) by brute force: for every row separately, the full joint summed over all
// its unobserved values (no compression, no pruning), plus the normalised Gaussian prior.
double brute_log_joint(const ir::Graph& g, const std::vector<Row>& rows, const Vec& theta) {
    double total = 0;
    for (const auto& b : g.blocks) {
        Eigen::MatrixXd cov(b.size, b.size);
        for (int i = 0; i < b.size; ++i)
            for (int j = 0; j < b.size; ++j) cov(i, j) = b.prior_cov[sz(i * b.size + j)];
        const Vec c = theta.segment(b.offset, b.size) - Eigen::Map<const Vec>(b.prior_mean.data(), b.size);
        Eigen::LLT<Eigen::MatrixXd> llt(cov);
        total += -0.5 * c.dot(llt.solve(c)) -
                 0.5 * (b.size * std::log(2 * std::numbers::pi) + 2 * Eigen::MatrixXd(llt.matrixL()).diagonal().array().log().sum());
    }
    const int n = static_cast<int>(g.elements.size());
    for (const Row& row : rows) {
        std::vector<int> free;
        for (int e = 0; e < n; ++e)
            if (g.elements[sz(e)].binary && (g.elements[sz(e)].hidden || row[sz(e)] == 0)) free.push_back(e);
        std::vector<double> terms;
        for (long cfg = 0; cfg < (1L << free.size()); ++cfg) {
            std::vector<double> x = row;
            for (std::size_t k = 0; k < free.size(); ++k) x[sz(free[k])] = (cfg >> k) & 1 ? 1.0 : -1.0;
            double lp = 0;
            for (int e = 0; e < n; ++e) {
                if (!g.elements[sz(e)].binary) continue;
                lp += log_inv_logit(x[sz(e)] * test::eta_of(g, e, x, theta));
            }
            terms.push_back(lp);
        }
        total += inference::log_sum_exp(terms.begin(), terms.end());
    }
    return total;
}

Vec random_theta(int dim, Rng& rng, double scale = 1.5) {
    Vec t(dim);
    for (int k = 0; k < dim; ++k) t[k] = scale * rng.normal();
    return t;
}

// Central differences; the step suits O(1) parameters and the tolerance below.
template <class F>
Vec numeric_gradient(F f, const Vec& x, double h = 1e-5) {
    Vec g(x.size());
    for (int k = 0; k < x.size(); ++k) {
        Vec a = x, b = x;
        a[k] += h;
        b[k] -= h;
        g[k] = (f(a) - f(b)) / (2 * h);
    }
    return g;
}

// |analytic - numeric| within the central-difference error: h² f''' plus rounding eps |f| / h.
void check_gradient(const Vec& analytic, const Vec& numeric, double value_scale) {
    REQUIRE(analytic.size() == numeric.size());
    for (int k = 0; k < analytic.size(); ++k) {
        INFO("coordinate " << k << ": analytic " << analytic[k] << ", numeric " << numeric[k]);
        CHECK(std::abs(analytic[k] - numeric[k]) <= 1e-6 * std::max(1.0, std::abs(analytic[k])) + 1e-10 * value_scale);
    }
}

// ---- models --------------------------------------------------------------------------

struct Case {
    std::string name;
    ir::Graph graph;
    std::vector<Row> rows;
};

// Section 5.2 of the Variational MCMC paper: h hidden ~ bernoulli(0.6), o ~ bernoulli(0.5),
// y ~ logistic(2 + w * [h, o]); o and y missing in some rows.
Case multimodal(int rows = 60, std::uint64_t seed = 11) {
    ModelBuilder m;
    const int h = m.bernoulli("h", 0.6, true);
    const int o = m.bernoulli("o", 0.5);
    m.logistic("y", false, 2.0, {}, {on(h), on(o)}, 3.0, std::sqrt(10.0));
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(3, 0.0);
        r[1] = rng.bernoulli(0.5) ? 1 : -1;
        r[2] = rng.bernoulli(0.8) ? 1 : -1;
        if (t % 7 == 3) r[1] = 0;
        if (t % 11 == 5) r[2] = 0;
        data.push_back(r);
    }
    return {"multimodal", m.g, data};
}

// A sigmoid belief network with 2 hidden causes and 3 observed effects, v[k] ~
// logistic(b_k + W_k' h), some v missing. The causes are themselves a small network:
// h[1] ~ logistic(c) with a learned bias c, h[2] ~ logistic(0.4 + 0.8 h[1]) fixed.
Case sbn(int rows = 40, std::uint64_t seed = 12) {
    ModelBuilder m;
    const int h1 = m.logistic("h[1]", true, 0.0, {}, {bias()}, 0.0, 1.5);
    const int h2 = m.logistic("h[2]", true, 0.4, {{h1, 0.8}}, {});
    for (int k = 1; k <= 3; ++k)
        m.logistic("v[" + std::to_string(k) + "]", false, 0.0, {}, {bias(), on(h1), on(h2)}, 0.0, 2.0);
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(5, 0.0);
        for (int k = 2; k < 5; ++k) r[sz(k)] = rng.bernoulli(0.4) ? 1 : -1;
        if (t % 5 == 1) r[sz(2 + t % 3)] = 0;
        if (t % 13 == 0) r[2] = r[3] = r[4] = 0;  // nothing observed: the row drops out
        data.push_back(r);
    }
    return {"sbn", m.g, data};
}

// A chain a -> b -> c with b missing in some rows, plus: a covariate z as a parent of b,
// a subtracted term, a fixed-weight term, a full-covariance prior and a fixed logistic
// child d of b (no block).
Case chain(int rows = 80, std::uint64_t seed = 13) {
    ModelBuilder m;
    const int z = m.add("z", false, true);
    const int a = m.logistic("a", false, 0.0, {}, {bias()}, 0.0, 1.5);
    const int b = m.logistic_cov("b", false, -0.3, {}, {bias(), on(a, -1.0), on(z)}, {0.2, -0.1, 0.5},
                                 {1.0, 0.4, 0.1, 0.4, 2.0, -0.3, 0.1, -0.3, 1.5}, false);
    m.logistic("c", false, 0.3, {{a, 0.7}}, {bias(), on(b)}, 0.0, 2.0);
    m.logistic("d", false, 0.5, {{b, 1.5}}, {});
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(6, 0.0);
        r[0] = std::round(4 * rng.normal()) / 4;  // a few distinct covariate values repeat
        for (int k = 1; k < 5; ++k) r[sz(k)] = rng.bernoulli(0.5) ? 1 : -1;
        if (t % 3 == 0) r[2] = 0;
        if (t % 10 == 4) r[1] = 0;
        if (t % 8 == 6) r[3] = 0;
        if (t % 9 == 2) r[4] = 0;
        data.push_back(r);
    }
    return {"chain", m.g, data};
}

// A random network: a chain of 2 or 3 hidden nodes (each on the one before, by a learned or a
// fixed weight), 3 or 4 observed nodes on random hidden parents (of either sign), the observed
// node before and sometimes a fixed term on h1 as well, and a fifth of the cells missing: its
// components (up to 7 unobserved nodes) share factors across rows, in different scope orders.
Case random_chain(std::uint64_t seed, int rows = 50) {
    Rng rng(seed);
    ModelBuilder m;
    std::vector<int> hidden, observed;
    const int depth = rng.bernoulli(0.5) ? 2 : 3;
    for (int i = 0; i < depth; ++i) {
        const std::string name = "h" + std::to_string(i + 1);
        if (i == 0)
            hidden.push_back(m.logistic(name, true, 0.0, {}, {bias()}, 0.0, 1.5));
        else if (rng.bernoulli(0.5))
            hidden.push_back(m.logistic(name, true, 0.2, {}, {bias(), on(hidden.back())}, 0.0, 1.5));
        else
            hidden.push_back(m.logistic(name, true, -0.3, {{hidden.back(), 0.9}}, {}));
    }
    const int children = rng.bernoulli(0.5) ? 3 : 4;
    for (int j = 0; j < children; ++j) {
        std::vector<ir::Feature> features{bias()};
        std::vector<ir::FixedTerm> fixed;
        for (int h : hidden)
            if (rng.bernoulli(0.6)) features.push_back(on(h, rng.bernoulli(0.5) ? 1.0 : -1.0));
        if (!observed.empty() && rng.bernoulli(0.5)) features.push_back(on(observed.back()));
        if (rng.bernoulli(0.3)) fixed.push_back({hidden[0], 0.5});
        observed.push_back(m.logistic("v" + std::to_string(j + 1), false, 0.1, fixed, features, 0.0, 2.0));
    }
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(m.g.elements.size(), 0.0);
        for (int v : observed) r[sz(v)] = rng.bernoulli(0.2) ? 0.0 : (rng.bernoulli(0.5) ? 1.0 : -1.0);
        data.push_back(r);
    }
    return {"random chain " + std::to_string(seed), m.g, data};
}

// Both ways of summing out in one model: a node a missing in some rows with a real-valued
// covariate x as parent and as co-parent of its child, so that no factor of its components
// recurs (each summed directly), and a hidden h under a learned bias whose prior factor every
// component of h shares (summed from tables).
Case mixed(int rows = 40, std::uint64_t seed = 14) {
    ModelBuilder m;
    const int x = m.add("x", false, true);
    const int a = m.logistic("a", false, 0.2, {}, {bias(), on(x)}, 0.0, 1.5);
    m.logistic("y", false, 0.0, {}, {bias(), on(a), on(x)}, 0.0, 2.0);
    const int h = m.logistic("h", true, 0.0, {}, {bias()}, 0.0, 1.5);
    m.logistic("v", false, 0.0, {{h, 0.6}}, {bias(), on(h)}, 0.0, 2.0);
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(6, 0.0);
        r[0] = rng.normal();
        for (int k : {1, 2, 4}) r[sz(k)] = rng.bernoulli(0.5) ? 1 : -1;
        if (t % 3 == 1) r[1] = 0;
        if (t % 7 == 2) r[4] = 0;
        data.push_back(r);
    }
    return {"mixed", m.g, data};
}

std::vector<Case> all_cases() {
    return {multimodal(), sbn(), chain(), random_chain(31), random_chain(32), random_chain(33), mixed()};
}

}  // namespace

TEST_CASE("log density equals brute-force enumeration of the full joint, up to the stated constant") {
    for (const Case& c : all_cases()) {
        INFO("model " << c.name);
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        Rng rng(101);
        Vec base = random_theta(target.dim(), rng);
        const double base_target = target.log_density(base);
        const double base_brute = brute_log_joint(c.graph, c.rows, base);
        for (int rep = 0; rep < 5; ++rep) {
            const Vec theta = random_theta(target.dim(), rng);
            const double lp = target.log_density(theta);
            const double brute = brute_log_joint(c.graph, c.rows, theta);
            CHECK(lp + target.log_constant() == doctest::Approx(brute).epsilon(1e-9));
            const double diff = lp - base_target, brute_diff = brute - base_brute;
            CHECK(std::abs(diff - brute_diff) <= 1e-9 * std::max({1.0, std::abs(brute), std::abs(base_brute)}));
        }
    }
}

TEST_CASE("analytic gradient matches central differences, full and per block") {
    for (const Case& c : all_cases()) {
        INFO("model " << c.name);
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        auto ws = target.make_workspace();
        Rng rng(202);
        for (int rep = 0; rep < 4; ++rep) {
            const Vec theta = random_theta(target.dim(), rng);
            Vec grad(target.dim());
            const double lp = target.log_density_gradient(theta, grad, ws);
            CHECK(lp == target.log_density(theta, ws));  // the same bits with or without the gradient
            check_gradient(grad, numeric_gradient([&](const Vec& t) { return target.log_density(t, ws); }, theta),
                           std::abs(lp));
            for (int b = 0; b < target.blocks(); ++b) {
                INFO("block " << b);
                const int off = target.block_offset(b), n = target.block_size(b);
                Vec gb(n);
                const double lb = target.block_log_density_gradient(b, theta, gb, ws);
                CHECK(lb == target.block_log_density(b, theta, ws));
                auto f = [&](const Vec& tb) {
                    Vec t = theta;
                    t.segment(off, n) = tb;
                    return target.block_log_density(b, t, ws);
                };
                const Vec segment = theta.segment(off, n);
                check_gradient(gb, numeric_gradient(f, segment), std::abs(lb));
                // The terms left out do not depend on θ_b, so the gradients agree exactly.
                for (int k = 0; k < n; ++k)
                    CHECK(gb[k] == doctest::Approx(grad[off + k]).epsilon(1e-10).scale(1.0));
            }
        }
    }
}

TEST_CASE("block log density changes exactly as the full log density when only that block moves") {
    for (const Case& c : all_cases()) {
        INFO("model " << c.name);
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        auto ws = target.make_workspace();
        Rng rng(303);
        for (int rep = 0; rep < 3; ++rep) {
            const Vec theta = random_theta(target.dim(), rng);
            for (int b = 0; b < target.blocks(); ++b) {
                Vec moved = theta;
                for (int k = 0; k < target.block_size(b); ++k) moved[target.block_offset(b) + k] += rng.normal();
                const double full = target.log_density(moved, ws) - target.log_density(theta, ws);
                const double block = target.block_log_density(b, moved, ws) - target.block_log_density(b, theta, ws);
                CHECK(std::abs(full - block) <= 1e-10 * std::max(1.0, std::abs(target.log_density(theta, ws))));
            }
        }
    }
}

TEST_CASE("families: complete patterns, components and coupled blocks have the expected structure") {
    SUBCASE("multimodal: one component per distinct (o, y) case, h alone") {
        const Case c = multimodal();
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        const Families& f = target.families();
        CHECK(target.blocks() == 1);
        CHECK(f.complete[0].patterns() == 0);  // h is a parent of y in every row
        CHECK(f.largest_component == 2);  // rows with o missing: h and o together
        double weight = 0;
        for (const auto& comp : f.components) weight += comp.weight;
        // Rows with y missing have h barren (no observed descendant) and drop out entirely.
        long rows_with_y = 0;
        for (const auto& r : c.rows) rows_with_y += r[2] != 0;
        CHECK(weight == rows_with_y);
        CHECK(f.components.size() <= 6);  // o ∈ {±1, missing} × y ∈ {±1}
    }
    SUBCASE("sbn: both hidden causes form one component and couple every block") {
        const Case c = sbn();
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        CHECK(target.coupled_groups().size() == 1);
        CHECK(target.coupled_groups()[0] == std::vector<int>{0, 1, 2, 3});
        CHECK(target.families().largest_component == 2);
    }
    SUBCASE("chain: fully observed rows go to complete patterns, blocks of a, b, c coupled via missing b") {
        const Case c = chain();
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        const Families& f = target.families();
        CHECK(f.complete[0].patterns() <= 2);  // a: y ∈ {±1}, f = (1)
        CHECK(f.complete[0].w.sum() == doctest::Approx(static_cast<double>(c.rows.size() - 8)));
        CHECK(target.coupled_groups().size() == 1);
        CHECK(f.fixed_log_likelihood < 0);  // d observed with b observed
    }
}

TEST_CASE("barren nodes: a hidden child of observed nodes leaves the density unchanged") {
    const Case base = multimodal();
    ModelBuilder m;
    m.g = base.graph;
    // z hidden ~ logistic(u' [o, y]) and its hidden child z2 ~ logistic(0.3 + 2 z): both barren.
    const int z = m.logistic("z", true, 0.0, {}, {on(1), on(2)}, 0.0, 1.0);
    m.logistic("z2", true, 0.3, {{z, 2.0}}, {});
    std::vector<Row> rows;
    for (Row r : base.rows) {
        r.resize(5, 0.0);
        rows.push_back(r);
    }
    const Target without(base.graph, make_dataset(base.graph, base.rows));
    const Target with(m.g, make_dataset(m.g, rows));
    CHECK(with.families().components.size() == without.families().components.size());
    CHECK(with.families().largest_component == 2);
    CHECK(with.families().coupled_groups.size() == 2);
    Rng rng(404);
    const Vec u = random_theta(2, rng);
    auto ws = with.make_workspace();
    for (int rep = 0; rep < 4; ++rep) {
        const Vec w = random_theta(2, rng);
        Vec theta(4);
        theta << w, u;
        // The extra block adds only its own prior: -½ |u|² for the N(0, 1) prior.
        CHECK(with.log_density(theta, ws) == doctest::Approx(without.log_density(w) - 0.5 * u.squaredNorm()).epsilon(1e-12));
        Vec g_with(4), g_without(2);
        with.log_density_gradient(theta, g_with, ws);
        without.log_density_gradient(w, g_without);
        for (int k = 0; k < 2; ++k) CHECK(g_with[k] == doctest::Approx(g_without[k]).epsilon(1e-12));
        for (int k = 0; k < 2; ++k) CHECK(g_with[2 + k] == doctest::Approx(-u[k]).epsilon(1e-12));
    }
}

TEST_CASE("compression does not change the answer: duplicated, shuffled or uncompressed rows") {
    for (const Case& c : all_cases()) {
        INFO("model " << c.name);
        std::vector<Row> doubled = c.rows;
        doubled.insert(doubled.end(), c.rows.begin(), c.rows.end());
        std::vector<Row> shuffled = c.rows;
        Rng rng(505);
        for (std::size_t i = shuffled.size() - 1; i > 0; --i) std::swap(shuffled[i], shuffled[rng.below(i + 1)]);

        const Target target(c.graph, make_dataset(c.graph, c.rows));
        const Target raw(c.graph, make_dataset(c.graph, c.rows, false));
        const Target mixed(c.graph, make_dataset(c.graph, shuffled));
        const Target twice(c.graph, make_dataset(c.graph, doubled));
        auto ws = target.make_workspace();
        for (int rep = 0; rep < 3; ++rep) {
            const Vec theta = random_theta(target.dim(), rng);
            const double lp = target.log_density(theta);
            CHECK(raw.log_density(theta) == doctest::Approx(lp).epsilon(1e-12));
            CHECK(mixed.log_density(theta) == doctest::Approx(lp).epsilon(1e-12));
            const double lik = target.log_likelihood(theta, ws);
            auto ws2 = twice.make_workspace();
            CHECK(twice.log_likelihood(theta, ws2) == doctest::Approx(2 * lik).epsilon(1e-12));
            Vec g1(target.dim()), g2(target.dim());
            target.log_density_gradient(theta, g1);
            mixed.log_density_gradient(theta, g2);
            for (int k = 0; k < target.dim(); ++k) CHECK(g2[k] == doctest::Approx(g1[k]).epsilon(1e-12));
        }
    }
}

// A caller that owns the data may free them once the families are read (the services do,
// handed the data by the command line): the target built so is the target built without.
TEST_CASE("TargetOptions::data_read: data freed there leave every value and gradient as they were") {
    for (const Case& c : all_cases()) {
        INFO("model " << c.name);
        const Dataset kept = make_dataset(c.graph, c.rows);
        Dataset freed = kept;
        int calls = 0;
        const Target target(c.graph, kept);
        const Target after(c.graph, freed, TargetOptions{.data_read = [&] {
                               ++calls;
                               freed.drop_values();
                           }});
        CHECK(calls == 1);
        CHECK(freed.binary.empty());
        CHECK(freed.count.empty());
        Rng rng(606);
        for (int rep = 0; rep < 3; ++rep) {
            const Vec theta = random_theta(target.dim(), rng);
            CHECK(after.log_density(theta) == target.log_density(theta));
            Vec g1(target.dim()), g2(target.dim());
            target.log_density_gradient(theta, g1);
            after.log_density_gradient(theta, g2);
            CHECK(g1 == g2);
        }
    }
}

TEST_CASE("extreme weights |θ'f| ~ 1e3 give finite densities and gradients") {
    for (const Case& c : all_cases()) {
        INFO("model " << c.name);
        const Target target(c.graph, make_dataset(c.graph, c.rows));
        auto ws = target.make_workspace();
        Rng rng(606);
        for (double scale : {1e3, -1e3, 3e3}) {
            Vec theta(target.dim());
            for (int k = 0; k < target.dim(); ++k) theta[k] = scale * (rng.bernoulli(0.5) ? 1 : -1);
            Vec grad(target.dim());
            const double lp = target.log_density_gradient(theta, grad, ws);
            CHECK(std::isfinite(lp));
            CHECK(grad.allFinite());
            for (int b = 0; b < target.blocks(); ++b) {
                Vec gb(target.block_size(b));
                CHECK(std::isfinite(target.block_log_density_gradient(b, theta, gb, ws)));
                CHECK(gb.allFinite());
            }
            // Still exact: brute force in the same regime (log g evaluated stably there too).
            CHECK(lp + target.log_constant() == doctest::Approx(brute_log_joint(c.graph, c.rows, theta)).epsilon(1e-9));
        }
    }
}

TEST_CASE("a complete family at η = -1000 contributes log g(-1000) = -1000 and gradient y f") {
    ModelBuilder m;
    const int x = m.bernoulli("x", 0.5);
    m.logistic("y", false, 0.0, {}, {on(x)}, 0.0, 1.0);
    const std::vector<Row> rows{{1, -1}};
    const Target target(m.g, make_dataset(m.g, rows));
    Vec theta(1);
    theta << 1000;
    Vec grad(1);
    const double lp = target.log_density_gradient(theta, grad);
    CHECK(lp == doctest::Approx(-1000 - 0.5 * 1e6).epsilon(1e-14));
    CHECK(grad[0] == doctest::Approx(-1 - 1000).epsilon(1e-14));  // y f g(-y η) = -1 · 1, minus the prior's θ
}

TEST_CASE("an observed node missing in every row is summed out like a hidden node, with a note") {
    const Case c = multimodal();
    ModelBuilder m;
    m.g = c.graph;
    m.g.elements[0].hidden = false;  // h declared observed, but its column is all missing
    m.g.variables[0].hidden = false;
    std::vector<Row> rows = c.rows;
    for (auto& r : rows) r[0] = 0;
    const Target observed(m.g, make_dataset(m.g, rows));
    const Target hidden(c.graph, make_dataset(c.graph, c.rows));
    REQUIRE(observed.notes().size() == 1);
    CHECK(observed.notes()[0].find("'h'") != std::string::npos);
    CHECK(observed.notes()[0].find("missing in every row") != std::string::npos);
    CHECK(hidden.notes().empty());
    Rng rng(707);
    for (int rep = 0; rep < 3; ++rep) {
        const Vec theta = random_theta(2, rng);
        CHECK(observed.log_density(theta) == doctest::Approx(hidden.log_density(theta)).epsilon(1e-13));
    }
}

TEST_CASE("a component of 13 unobserved nodes is refused with the lines and a pointer to gibbs") {
    for (int hidden : {12, 13}) {
        ModelBuilder m;
        std::vector<ir::Feature> parents{bias()};
        for (int k = 0; k < hidden; ++k) parents.push_back(on(m.bernoulli("h[" + std::to_string(k + 1) + "]", 0.5, true)));
        m.logistic("v", false, 0.0, {}, parents, 0.0, 1.0);
        std::vector<Row> rows;
        for (int t = 0; t < 6; ++t) {
            Row r(sz(hidden + 1), 0.0);
            r.back() = t % 2 ? 1 : -1;
            rows.push_back(r);
        }
        const Dataset data = make_dataset(m.g, rows);
        if (hidden == 12) {
            const Target target(m.g, data);
            CHECK(target.families().largest_component == 12);
            CHECK(std::isfinite(target.log_density(Vec::Constant(target.dim(), 0.1))));
            continue;
        }
        try {
            const Target target(m.g, data);
            FAIL("expected a limit error");
        } catch (const Error& e) {
            const std::string msg = e.what();
            INFO(msg);
            CHECK(e.kind() == ErrorKind::limit);
            CHECK(e.line() == 2);
            CHECK(msg.find("lines 2, 3") != std::string::npos);
            CHECK(msg.find("13 unobserved nodes") != std::string::npos);
            CHECK(msg.find("--method gibbs") != std::string::npos);
        }
        TargetOptions more;
        more.max_enumerated = 13;
        CHECK(Target(m.g, data, more).families().largest_component == 13);
    }
}

TEST_CASE("bad input is refused with a clear error, not a crash") {
    const Case c = multimodal();
    const Target target(c.graph, make_dataset(c.graph, c.rows));
    CHECK_THROWS_AS(target.log_density(Vec::Zero(3)), Error);
    Vec g(1);
    CHECK_THROWS_AS(target.log_density_gradient(Vec::Zero(2), g), Error);
    CHECK_THROWS_AS(target.block_log_density(1, Vec::Zero(2)), Error);

    Dataset bad = make_dataset(c.graph, c.rows);
    bad.binary[0] = 3;
    try {
        Target t(c.graph, bad);
        FAIL("expected a data error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::data);
        CHECK(std::string(e.what()).find("line 2") != std::string::npos);
    }
    Dataset short_data = make_dataset(c.graph, c.rows);
    short_data.count.pop_back();
    CHECK_THROWS_AS(Target(c.graph, short_data), Error);

    ir::Graph not_spd = chain().graph;
    not_spd.blocks[1].prior_cov = {1, 2, 0, 2, 1, 0, 0, 0, 1};
    try {
        Target t(not_spd, make_dataset(not_spd, chain().rows));
        FAIL("expected a model error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::model);
        CHECK(std::string(e.what()).find("'b'") != std::string::npos);
    }
}

TEST_CASE("const evaluation from several threads with their own workspaces matches serial results") {
    const Case c = sbn(400);
    const Target target(c.graph, make_dataset(c.graph, c.rows));
    Rng rng(808);
    std::vector<Vec> thetas;
    for (int k = 0; k < 20; ++k) thetas.push_back(random_theta(target.dim(), rng));
    std::vector<double> serial;
    for (const auto& t : thetas) serial.push_back(target.log_density(t));
    std::vector<double> a(thetas.size()), b(thetas.size());
    auto run = [&](std::vector<double>& out) {
        auto ws = target.make_workspace();
        Vec grad(target.dim());
        for (int rep = 0; rep < 20; ++rep)
            for (std::size_t k = 0; k < thetas.size(); ++k) out[k] = target.log_density_gradient(thetas[k], grad, ws);
    };
    std::thread t1(run, std::ref(a)), t2(run, std::ref(b));
    t1.join();
    t2.join();
    for (std::size_t k = 0; k < thetas.size(); ++k) {
        CHECK(a[k] == serial[k]);
        CHECK(b[k] == serial[k]);
    }
}

TEST_CASE("TargetDensity exposes the target and its blocks to the samplers") {
    const Case c = chain();
    const Target target(c.graph, make_dataset(c.graph, c.rows));
    TargetDensityFactory factory(target);
    auto density = factory.make();
    REQUIRE(density->dim() == target.dim());
    REQUIRE(density->block_count() == 3);
    int covered = 0;
    for (int b = 0; b < density->block_count(); ++b) {
        CHECK(density->block(b).offset == covered);
        covered += density->block(b).size;
    }
    CHECK(covered == target.dim());
    Rng rng(909);
    const Vec theta = random_theta(target.dim(), rng);
    Vec grad;
    CHECK(density->log_density_gradient(theta, grad) == target.log_density(theta));
    CHECK(grad.size() == target.dim());
    CHECK(density->block_log_density(1, theta) == target.block_log_density(1, theta));
}

namespace {

// A model compiled from text and data read from CSV text, with the rows kept for the brute
// force (element-indexed, hidden entries 0).
struct Parsed {
    ir::Graph graph;
    Dataset data;
    std::vector<Row> rows;
};

Parsed parse_case(const std::string& model, const std::string& csv) {
    Parsed p{compile_model(model, "test.vbn"), {}, {}};
    std::istringstream in(csv);
    p.data = load_csv(p.graph, in, "test.csv");
    std::istringstream again(csv);
    std::string line;
    std::getline(again, line);
    std::vector<std::string> header;
    for (std::stringstream ss(line); std::getline(ss, line, ',');) header.push_back(line);
    while (std::getline(again, line)) {
        Row r(p.graph.elements.size(), 0.0);
        std::stringstream ss(line);
        for (const auto& name : header) {
            std::string field;
            std::getline(ss, field, ',');
            const auto it = std::find_if(p.graph.elements.begin(), p.graph.elements.end(),
                                         [&](const ir::Element& e) { return e.name == name; });
            REQUIRE(it != p.graph.elements.end());
            r[sz(static_cast<int>(it - p.graph.elements.begin()))] = field == "NA" ? 0.0 : std::stod(field);
        }
        p.rows.push_back(r);
    }
    return p;
}

}  // namespace

TEST_CASE("models from text and data from CSV: exact against brute force, gradient against differences") {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"node h hidden ~ bernoulli(0.6);\nnode o ~ bernoulli(0.5);\nnode y ~ logistic(2 + w * [h, o]);\n"
         "w ~ normal(3, sqrt(10));\n",
         "o,y\n1,1\n-1,1\nNA,-1\n1,NA\n1,1\n-1,-1\nNA,1\n"},
        {"node h[2] hidden ~ bernoulli(0.5);\nnode v[3] ~ logistic(b + W * h);\nb ~ normal(0, 3);\nW ~ normal(0, 2);\n",
         "v[1],v[2],v[3]\n1,1,-1\n-1,NA,1\n1,1,1\nNA,NA,-1\n-1,-1,-1\n1,-1,NA\n"},
        {"covariate z;\nnode a ~ logistic(ba);\nnode b ~ logistic(-0.3 - wb * [a, z]);\n"
         "node c ~ logistic(0.3 + 0.7 * a + bc - wc * b);\nnode d ~ logistic(0.5 + 1.5 * b);\n"
         "ba ~ normal(0, 1.5);\nwb ~ mvnormal([0.2, -0.1], [[1, 0.4], [0.4, 2]]);\nbc, wc ~ normal(0, 2);\n",
         "z,a,b,c,d\n0.5,1,NA,1,-1\n-1.25,NA,1,-1,1\n0.5,1,-1,1,1\n2,-1,NA,NA,1\n0.5,1,NA,1,-1\n0,NA,NA,1,NA\n"},
    };
    for (const auto& model_csv : cases) {
        // Named copies, not structured bindings: INFO captures them, which Clang before 16 rejects.
        const std::string& model = model_csv.first;
        const std::string& csv = model_csv.second;
        INFO(model);
        const Parsed p = parse_case(model, csv);
        const Target target(p.graph, p.data);
        auto ws = target.make_workspace();
        Rng rng(1001);
        for (int rep = 0; rep < 3; ++rep) {
            const Vec theta = random_theta(target.dim(), rng);
            CHECK(target.log_density(theta, ws) + target.log_constant() ==
                  doctest::Approx(brute_log_joint(p.graph, p.rows, theta)).epsilon(1e-9));
            Vec grad(target.dim());
            const double lp = target.log_density_gradient(theta, grad, ws);
            check_gradient(grad, numeric_gradient([&](const Vec& t) { return target.log_density(t, ws); }, theta),
                           std::abs(lp));
        }
    }
}

namespace {

std::vector<int> block_offsets(const ir::Graph& g) {
    std::vector<int> offsets;
    for (const auto& b : g.blocks) offsets.push_back(b.offset);
    return offsets;
}

// The families of component k alone, as if no other row had been read.
Families only_component(const Families& all, int k) {
    Families one;
    one.components = {all.components[sz(k)]};
    one.components_of_block.assign(all.components_of_block.size(), {});
    for (int b : all.components[sz(k)].blocks) one.components_of_block[sz(b)] = {0};
    return one;
}

}  // namespace

TEST_CASE("factor tables shared by components give each component's value and gradient as alone") {
    for (std::uint64_t seed : {41, 42, 43, 44, 45}) {
        const Case c = random_chain(seed, 80);
        INFO("model " << c.name);
        const Families fam = build_families(c.graph, make_dataset(c.graph, c.rows));
        const FactorTables shared(fam, block_offsets(c.graph));
        std::size_t factors = 0;
        for (const auto& comp : fam.components) factors += comp.factors.size();
        CHECK(sz(shared.tables()) < factors);  // tables are shared, or this tests nothing
        Rng rng(seed);
        const Vec theta = random_theta(c.graph.dim, rng);
        auto s = shared.make_scratch();
        shared.fill(nullptr, theta, true, s);
        Vec grad = Vec::Zero(c.graph.dim), alone_grad = Vec::Zero(c.graph.dim);
        std::vector<double> values;
        for (int k = 0; k < static_cast<int>(fam.components.size()); ++k) values.push_back(shared.component(k, true, -1, s));
        shared.gradient(nullptr, -1, grad.data(), s);
        for (int k = 0; k < static_cast<int>(fam.components.size()); ++k) {
            const FactorTables alone(only_component(fam, k), block_offsets(c.graph));
            auto a = alone.make_scratch();
            alone.fill(nullptr, theta, true, a);
            CHECK(alone.component(0, true, -1, a) == doctest::Approx(values[sz(k)]).epsilon(1e-13));
            alone.gradient(nullptr, -1, alone_grad.data(), a);
        }
        for (int i = 0; i < c.graph.dim; ++i) CHECK(grad[i] == doctest::Approx(alone_grad[i]).epsilon(1e-11).scale(1.0));
        // Block by block, from the block's tables alone: the same gradient.
        for (int b = 0; b < static_cast<int>(c.graph.blocks.size()); ++b) {
            const int off = c.graph.blocks[sz(b)].offset, n = c.graph.blocks[sz(b)].size;
            Vec gb = Vec::Zero(n);
            shared.fill(&shared.tables_of_block(b), theta, true, s);
            for (int k : fam.components_of_block[sz(b)]) shared.component(k, true, b, s);
            shared.gradient(&shared.tables_of_block(b), b, gb.data(), s);
            for (int i = 0; i < n; ++i) CHECK(gb[i] == doctest::Approx(grad[off + i]).epsilon(1e-11).scale(1.0));
        }
    }
}

// Found by fuzz_model_data: `logistic(b + 1.1e308)` over three rows with y = -1 summed
// log g(-1.1e308) to -inf, and the log density at θ = 0 was infinite. Numbers beyond ±1e100
// in a linear predictor are refused, naming the line and the node; 1e99 still evaluates.
TEST_CASE("a linear predictor beyond ±1e100 in a row is a data error naming the line") {
    const auto target_of = [](const std::string& model, const std::string& csv) {
        const ir::Graph g = compile_model(model, "test.vbn");
        std::istringstream in(csv);
        return Target(g, load_csv(g, in, "test.csv"));
    };
    const auto refused = [&](const std::string& model, const std::string& csv, const std::string& expected) {
        CAPTURE(model);
        try {
            (void)target_of(model, csv);
            FAIL("expected a data error");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::data);
            CHECK(std::string(e.what()).find(expected) != std::string::npos);
        }
    };
    const std::string ys = "y[1],y[2]\n1,-1\n-1,-1\n-1,-1\n-1,1\n1,\n";
    refused("node y[2] ~ logistic(b + 1.1e308);\nb ~ normal(0, 2);\n", ys,
            "test.csv: line 2: the linear predictor of node 'y[1]' has constant and fixed terms adding up to 1.1e+308");
    // A fixed weight on a covariate, and a learned weight on a product of covariates.
    refused("covariate x;\nnode y ~ logistic(b + 1e60 * x);\nb ~ normal(0, 2);\n", "x,y\n1,1\n1e50,0\n",
            "line 3: the linear predictor of node 'y' has constant and fixed terms adding up to 1e+110");
    refused("covariate x;\nnode y ~ logistic(b + w * x * x);\nb, w ~ normal(0, 2);\n", "x,y\n1,1\n1e60,0\n",
            "line 3: the linear predictor of node 'y' has a learned term's feature of 1e+120");
    // Within the limit the log density at θ = 0 is finite, as is its gradient.
    const Target t = target_of("node y[2] ~ logistic(b + 1e99);\nb ~ normal(0, 2);\n", ys);
    Vec grad(t.dim());
    CHECK(std::isfinite(t.log_density_gradient(Vec::Zero(t.dim()), grad)));
    CHECK(grad.allFinite());
}

// Hidden causes under three observed children, each child of all of them: every row's
// component has 2^causes configurations (six: past the unrolled and batched sizes; five: the
// largest batched).
Case hidden_causes(int causes, int rows = 60, std::uint64_t seed = 15) {
    ModelBuilder m;
    std::vector<ir::Feature> features{bias()};
    for (int k = 1; k <= causes; ++k)
        features.push_back(on(m.logistic("h" + std::to_string(k), true, 0.0, {}, {bias()}, 0.0, 1.5)));
    for (int j = 1; j <= 3; ++j) m.logistic("v" + std::to_string(j), false, 0.0, {}, features, 0.0, 2.0);
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(sz(causes + 3), 0.0);
        for (int j = causes; j < causes + 3; ++j) r[sz(j)] = rng.bernoulli(0.5) ? 1.0 : -1.0;
        data.push_back(r);
    }
    return {std::to_string(causes) + " hidden causes", m.g, data};
}

TEST_CASE("entries kept from construction give the bits of entries remade at each evaluation") {
    // Kept components of 2 to 32 configurations take unrolled loops, others a general one:
    // the chains (two or three hidden nodes and missing entries), mixed()'s hidden node and
    // hidden_causes(6) must reach both.
    std::set<int> sizes;
    for (std::uint64_t seed : {51, 52, 53, 0, 1}) {
        const Case c = seed > 1 ? random_chain(seed, 80) : seed == 0 ? mixed() : hidden_causes(6);
        INFO("model " << c.name);
        const Families fam = build_families(c.graph, make_dataset(c.graph, c.rows));
        for (const auto& comp : fam.components) sizes.insert(comp.size());
        const FactorTables all(fam, block_offsets(c.graph)), remade(fam, block_offsets(c.graph), nullptr, 0);
        const long full = all.entries_kept();
        REQUIRE(full > 1);
        CHECK(remade.entries_kept() == 0);
        // A limit below the total keeps some components whole and remakes the rest.
        const FactorTables some(fam, block_offsets(c.graph), nullptr, full / 2);
        CHECK(some.entries_kept() > 0);
        CHECK(some.entries_kept() <= full / 2);
        Rng rng(seed);
        const Vec theta = random_theta(c.graph.dim, rng);
        // Each component's value and log sum, then the gradient they accumulated.
        const auto evaluate = [&](const FactorTables& t) {
            auto sc = t.make_scratch();
            t.fill(nullptr, theta, true, sc);
            std::vector<double> out;
            for (int k = 0; k < static_cast<int>(fam.components.size()); ++k) {
                out.push_back(t.component(k, true, -1, sc));
                out.push_back(t.log_sum(k, sc));
            }
            Vec g = Vec::Zero(c.graph.dim);
            t.gradient(nullptr, -1, g.data(), sc);
            out.insert(out.end(), g.data(), g.data() + g.size());
            return out;
        };
        const std::vector<double> expected = evaluate(remade);
        CHECK(evaluate(all) == expected);
        CHECK(evaluate(some) == expected);
    }
    INFO("largest component: " << *sizes.rbegin() << " unobserved values");
    CHECK(sizes.count(1) == 1);
    CHECK(sizes.count(2) == 1);
    CHECK(*sizes.rbegin() > 5);
}

// One hidden class over ten yes/no items, a tenth of the answers missing: hundreds of
// distinct rows, each a component of the hidden value.
Case latent_class(int rows, std::uint64_t seed) {
    ModelBuilder m;
    const int h = m.logistic("h", true, 0.0, {}, {bias()}, 0.0, 1.5);
    for (int j = 0; j < 10; ++j) m.logistic("v" + std::to_string(j + 1), false, 0.0, {}, {bias(), on(h)}, 0.0, 2.0);
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(11, 0.0);
        for (int j = 1; j <= 10; ++j) r[sz(j)] = rng.bernoulli(0.1) ? 0.0 : (rng.bernoulli(0.5) ? 1.0 : -1.0);
        data.push_back(r);
    }
    return {"latent class", m.g, data};
}

// Occupancy: a hidden presence per site on the site's own covariate, four visits on it. Every
// row's presence factor is a table of its own (the covariate differs in every row), the
// visits' factors a few tables that every row shares.
Case occupancy(int rows, std::uint64_t seed) {
    ModelBuilder m;
    const int x = m.covariate("x");
    const int z = m.logistic("z", true, 0.0, {}, {bias(), on(x)}, 0.0, 1.5);
    for (int j = 0; j < 4; ++j) m.logistic("y" + std::to_string(j + 1), false, 0.0, {}, {bias(), on(z)}, 0.0, 2.0);
    Rng rng(seed);
    std::vector<Row> data;
    for (int t = 0; t < rows; ++t) {
        Row r(6, 0.0);
        r[0] = rng.normal();
        for (int j = 2; j < 6; ++j) r[sz(j)] = rng.bernoulli(0.05) ? 0.0 : (rng.bernoulli(0.4) ? 1.0 : -1.0);
        data.push_back(r);
    }
    return {"occupancy", m.g, data};
}

TEST_CASE("batched components give each component's value and gradient up to rounding") {
    std::size_t most = 0;  // batches are 256 components: some model must need two
    int dense = 0, sparse = 0;  // batches summed by their dense form (DenseBatch) and not
    for (std::uint64_t seed : {51, 52, 53, 0, 1, 2}) {
        const Case c = seed > 2    ? random_chain(seed, 300)
                       : seed == 0 ? latent_class(1000, 5)
                       : seed == 1 ? hidden_causes(5)
                                   : occupancy(600, 17);
        INFO("model " << c.name);
        const Families fam = build_families(c.graph, make_dataset(c.graph, c.rows));
        const FactorTables t(fam, block_offsets(c.graph));
        dense += t.dense_batches();
        sparse += t.batches() - t.dense_batches();
        // Each site's own table keeps its batch from the dense form over every pattern; the
        // patterns the sites share go through it, the others one by one (DenseBatch::make).
        if (seed == 2) CHECK(t.dense_batches() == t.batches());
        std::vector<int> batched;
        for (int k = 0; k < static_cast<int>(fam.components.size()); ++k)
            if (t.batched(k)) batched.push_back(k);
        REQUIRE(!batched.empty());
        most = std::max(most, batched.size());
        Rng rng(seed + 7);
        for (int rep = 0; rep < 3; ++rep) {
            const Vec theta = 2 * random_theta(c.graph.dim, rng);
            auto one = t.make_scratch(), many = t.make_scratch();
            t.fill(nullptr, theta, true, one);
            t.fill(nullptr, theta, true, many);
            double expected = 0;
            for (int k : batched) expected += t.component(k, true, -1, one);
            const double got = t.batched_sum(true, many);
            CHECK(got == doctest::Approx(expected).epsilon(1e-12));
            Vec g_one = Vec::Zero(c.graph.dim), g_many = Vec::Zero(c.graph.dim);
            t.gradient(nullptr, -1, g_one.data(), one);
            t.gradient(nullptr, -1, g_many.data(), many);
            CHECK((g_many - g_one).norm() <= 1e-12 * (1 + g_one.norm()));
            CHECK(t.batched_sum(false, many) == got);  // the value alone, without accumulating
        }
        // An η that overflows makes a table's log g −∞: the dense form's 0 × −∞ would be a
        // NaN where a component does not read that entry, so such batches are summed sparsely
        // and agree with the components one at a time. In the latent class θ[1] and θ[2] are
        // v1's bias and weight on h: at the largest double η = ∞ where h = 1, so a row with
        // v1 = −1 has one configuration at −∞, which drops out of its log-sum-exp, and a row
        // without v1 reads neither of v1's entries.
        Vec theta = random_theta(c.graph.dim, rng);
        theta[1] = theta[2] = std::numeric_limits<double>::max();
        auto one = t.make_scratch(), many = t.make_scratch();
        t.fill(nullptr, theta, false, one);
        t.fill(nullptr, theta, false, many);
        double expected = 0;
        for (int k : batched) expected += t.component(k, false, -1, one);
        const double got = t.batched_sum(false, many);
        if (seed == 0) REQUIRE(std::isfinite(expected));
        if (std::isfinite(expected)) CHECK(got == doctest::Approx(expected).epsilon(1e-12));
        else CHECK(std::isnan(got) == std::isnan(expected));
    }
    CHECK(most > 256);
    // The latent class's batches have few entry patterns (10 items × 2 answers and the
    // class's own), so they take the dense form; the random chains' mostly do not.
    CHECK(dense > 0);
    CHECK(sparse > 0);
}

TEST_CASE("a target whose every summed-out group is summed directly has no tables, and evaluates") {
    // The fuzzers' input: x missing in one row, its only factors its fixed prior and y's, so its
    // group is summed directly and no table is built (the vectorised fill once read past an
    // empty array there). p(y = 1) = 0.7 g(5.5 + w) + 0.3 g(5.5 − w).
    ModelBuilder m;
    const int x = m.bernoulli("x", 0.7);
    m.logistic("y", false, 5.5, {}, {on(x)}, 0.0, 10.0);
    const Target target(m.g, make_dataset(m.g, {{0, 1}}));
    REQUIRE(target.directly_summed_components() == 1);
    REQUIRE(target.tabulated_components() == 0);
    const double w = 0.8;
    const Vec theta = Vec::Constant(1, w);
    Vec grad(1);
    const double lp = target.log_density_gradient(theta, grad);
    auto g = [](double z) { return 1 / (1 + std::exp(-z)); };
    const double p = 0.7 * g(5.5 + w) + 0.3 * g(5.5 - w);
    const double dp = 0.7 * g(5.5 + w) * g(-5.5 - w) - 0.3 * g(5.5 - w) * g(-5.5 + w);
    auto ws = target.make_workspace();
    CHECK(target.log_likelihood(theta, ws) == doctest::Approx(std::log(p)).epsilon(1e-13));
    CHECK(std::isfinite(lp));
    CHECK(grad[0] == doctest::Approx(dp / p - w / 100).epsilon(1e-12));
}

TEST_CASE("a summed-out node at η = ±800: exact value and gradient, nothing overflows") {
    // h hidden ~ bernoulli(0.5), y ~ logistic(w1 + w2 h), y = +1, w = (800, 800): η = 1600 or 0,
    // p(y) = 0.5 · 1 + 0.5 · 0.5 = 0.75, p(h = -1 | y) = 1/3, and the likelihood's gradient is
    // E[g(-η) (1, h) | y] = (1/3 · 1/2) (1, -1); the N(0, 1) prior adds -w.
    ModelBuilder m;
    const int h = m.bernoulli("h", 0.5, true);
    m.logistic("y", false, 0.0, {}, {bias(), on(h)}, 0.0, 1.0);
    const Target target(m.g, make_dataset(m.g, {{0, 1}}));
    for (double sign : {1.0, -1.0}) {
        // w = -(800, 800): η = -1600 or 0, p(y) = 0.5 · 0.5, p(h = -1 | y) = 1, gradient g(0) (1, -1).
        const Vec theta = Vec::Constant(2, 800 * sign);
        Vec grad(2);
        const double lp = target.log_density_gradient(theta, grad);
        CHECK(std::isfinite(lp));
        auto ws = target.make_workspace();
        CHECK(target.log_likelihood(theta, ws) == doctest::Approx(std::log(sign > 0 ? 0.75 : 0.25)).epsilon(1e-14));
        const double r = sign > 0 ? 1.0 / 6 : 0.5;
        CHECK(grad[0] == doctest::Approx(r - 800 * sign).epsilon(1e-14));
        CHECK(grad[1] == doctest::Approx(-r - 800 * sign).epsilon(1e-14));
    }
}

TEST_CASE("components whose tables nobody shares are summed directly, the others from tables") {
    const Case c = mixed();
    const Target target(c.graph, make_dataset(c.graph, c.rows));
    // Every row missing a (distinct x) is a component of its own, summed directly; the rows of
    // h differ only in v, so they share h's prior table and are tabulated.
    int missing_a = 0;
    for (const Row& r : c.rows) missing_a += r[1] == 0 ? 1 : 0;
    CHECK(target.directly_summed_components() == missing_a);
    CHECK(target.tabulated_components() >= 2);
    CHECK(target.directly_summed_components() + target.tabulated_components() ==
          static_cast<int>(target.families().components.size()));
    // Both paths in one evaluation: exact against brute force, gradient against differences.
    auto ws = target.make_workspace();
    Rng rng(404);
    for (int rep = 0; rep < 3; ++rep) {
        const Vec theta = random_theta(target.dim(), rng);
        Vec grad(target.dim());
        const double lp = target.log_density_gradient(theta, grad, ws);
        CHECK(lp == target.log_density(theta, ws));
        CHECK(lp + target.log_constant() == doctest::Approx(brute_log_joint(c.graph, c.rows, theta)).epsilon(1e-9));
        check_gradient(grad, numeric_gradient([&](const Vec& t) { return target.log_density(t, ws); }, theta),
                       std::abs(lp));
    }
    // Without sharing anywhere (no h), every component is summed directly.
    ModelBuilder m;
    const int x = m.add("x", false, true);
    const int a = m.logistic("a", false, 0.0, {}, {bias(), on(x)});
    m.logistic("y", false, 0.0, {}, {bias(), on(a), on(x)});
    std::vector<Row> rows;
    for (int t = 0; t < 10; ++t) rows.push_back({0.1 * t, 0.0, t % 2 ? 1.0 : -1.0});
    const Target alone(m.g, make_dataset(m.g, rows));
    CHECK(alone.directly_summed_components() == 10);
    CHECK(alone.tabulated_components() == 0);
}

TEST_CASE("log_densities gives log_density's bits for every column") {
    // Real covariates over 2,500 rows (chunks of 256, products of up to 1,000 rows carried
    // between chunks), ±1 parents packed as signs, and a summed-out hidden parent.
    Rng rng(77);
    std::string real_csv = "z[1],z[2],z[3],y\n", sign_csv = "x[1],x[2],x[3],x[4],x[5],x[6],x[7],x[8],y\n";
    for (int t = 0; t < 2500; ++t) {
        for (int k = 0; k < 3; ++k) real_csv += fmt::format("{},", rng.normal());
        real_csv += rng.uniform() < 0.6 ? "1\n" : "-1\n";
        for (int k = 0; k < 9; ++k) sign_csv += std::string(rng.uniform() < 0.5 ? "1" : "-1") + (k < 8 ? "," : "\n");
    }
    const std::vector<std::pair<std::string, std::string>> cases{
        {"covariate z[3];\nnode y ~ logistic(0.2 + b + w * z);\nb ~ normal(0, 2);\nw ~ normal(0, 1);\n", real_csv},
        {"node x[8] ~ bernoulli(0.5);\nnode y ~ logistic(w * x);\nw ~ normal(0, 1);\n", sign_csv},
        {"node h hidden ~ bernoulli(0.6);\nnode o ~ bernoulli(0.5);\nnode y ~ logistic(2 + w * [h, o]);\n"
         "w ~ normal(3, sqrt(10));\n",
         "o,y\n1,1\n-1,1\nNA,-1\n1,NA\n1,1\n-1,-1\nNA,1\n"},
    };
    for (const auto& [model, csv] : cases) {
        const Parsed p = parse_case(model, csv);
        const Target target(p.graph, p.data);
        auto ws = target.make_workspace();
        Eigen::MatrixXd thetas(target.dim(), 7);
        for (int j = 0; j < thetas.cols(); ++j) thetas.col(j) = random_theta(target.dim(), rng, j == 6 ? 40.0 : 1.0);
        Vec batch(thetas.cols());
        target.log_densities(thetas, batch, ws);
        for (int j = 0; j < thetas.cols(); ++j) CHECK(batch[j] == target.log_density(thetas.col(j), ws));
        Vec wrong(3);
        CHECK_THROWS_AS(target.log_densities(thetas, wrong, ws), Error);
    }
}

// A family of ±1 parents: rows (y, a, 1, x_1 … x_10) differ only in sign bits. The tables
// index by the hash's low bits; a hash whose updates shift left loses the sign bit, and put
// all 2,048 such rows in one probe chain (the same 32 low bits for every row).
TEST_CASE("hash_doubles spreads rows of ±1 values over its low bits") {
    std::set<std::uint64_t> low12, low32;
    std::vector<double> row(13);
    for (int code = 0; code < 2048; ++code) {
        row[0] = code & 1024 ? 1.0 : -1.0;
        row[1] = 0.0;
        row[2] = 1.0;
        for (int k = 0; k < 10; ++k) row[sz(3 + k)] = code >> k & 1 ? 1.0 : -1.0;
        const auto h = static_cast<std::uint64_t>(hash_doubles(row.data(), row.size()));
        low12.insert(h & 4095);
        low32.insert(h & 0xffffffffULL);
    }
    // 2,048 random keys fill about 4,096 (1 − e^−½) = 1,612 of 4,096 buckets (sd about 15).
    CHECK(low12.size() > 1500);
    CHECK(low32.size() == 2048);
    // And a row table counts each of them once, with its weight.
    RowTable t(13);
    for (int rep = 0; rep < 2; ++rep)
        for (int code = 0; code < 2048; ++code) {
            double* c = t.candidate();
            c[0] = code & 1024 ? 1.0 : -1.0;
            c[1] = 0.0;
            c[2] = 1.0;
            for (int k = 0; k < 10; ++k) c[3 + k] = code >> k & 1 ? 1.0 : -1.0;
            CHECK(t.commit(1.0) == code);
        }
    REQUIRE(t.rows() == 2048);
    CHECK(t.weight(0) == 2.0);
    CHECK(t.weight(2047) == 2.0);
}

TEST_CASE("block_log_densities: block_log_density's values to rounding, for a block too large for cache") {
    // 20,000 rows of 3 real covariates (block of 4: 160,000 doubles, over kBatchMinEntries),
    // every row its own pattern; one value far out, where |η| passes 708.
    Rng rng(78);
    std::string csv = "z[1],z[2],z[3],y\n";
    for (int t = 0; t < 20000; ++t) {
        for (int k = 0; k < 3; ++k) csv += fmt::format("{},", rng.normal());
        csv += rng.uniform() < 0.6 ? "1\n" : "-1\n";
    }
    const Parsed p = parse_case("covariate z[3];\nnode y ~ logistic(0.2 + b + w * z);\nb ~ normal(0, 2);\nw ~ normal(0, 1);\n", csv);
    const Target target(p.graph, p.data);
    REQUIRE(target.block_batch(0) == Target::kBlockBatch);
    auto ws = target.make_workspace();
    for (const int n : {1, 5, 8, 9, 16}) {
        INFO(n << " values");
        Eigen::MatrixXd thetas(target.dim(), n);
        for (int j = 0; j < n; ++j) thetas.col(j) = random_theta(target.dim(), rng, j == 2 ? 400.0 : 1.0);
        Vec batch(n);
        target.block_log_densities(0, thetas, batch, ws);
        for (int j = 0; j < n; ++j) {
            const double single = target.block_log_density(0, thetas.col(j), ws);
            CHECK(std::abs(batch[j] - single) <= 1e-12 * std::abs(single));
        }
    }
    // log_densities sums the blocks' batched values (here one block): log_density to rounding,
    // each column's bits whatever columns share its pass (so the importance correction's
    // weights do not depend on how its draws are split over threads).
    REQUIRE(target.every_block_batches());
    Eigen::MatrixXd draws(target.dim(), 37);
    for (int j = 0; j < draws.cols(); ++j) draws.col(j) = random_theta(target.dim(), rng, 1.0);
    Vec all(draws.cols());
    target.log_densities(draws, all, ws);
    for (int j = 0; j < draws.cols(); ++j) {
        const double single = target.log_density(draws.col(j), ws);
        CHECK(std::abs(all[j] - single) <= 1e-12 * std::abs(single));
        Vec alone(1);
        target.log_densities(draws.col(j), alone, ws);
        CHECK(alone[0] == all[j]);
    }
    Eigen::MatrixXd too_many(target.dim(), Target::kBlockBatch + 1);
    too_many.setZero();
    Vec out(too_many.cols());
    CHECK_THROWS_AS(target.block_log_densities(0, too_many, out, ws), Error);
    // A small family stays in cache, and packed signs are read another way: one at a time.
    const Parsed small = parse_case("covariate z[3];\nnode y ~ logistic(b + w * z);\nb ~ normal(0, 2);\nw ~ normal(0, 1);\n",
                                    "z[1],z[2],z[3],y\n0.5,1,2,1\n-1,0.3,2,-1\n");
    const Target few(small.graph, small.data);
    CHECK(few.block_batch(0) == 1);
    auto few_ws = few.make_workspace();
    Eigen::MatrixXd one = Eigen::MatrixXd::Zero(few.dim(), 1);
    Vec one_out(1);
    CHECK_THROWS_AS(few.block_log_densities(0, one, one_out, few_ws), Error);
}

// Products of parents (interactions): a hidden or missing factor inside a product links the
// factor to several summed-out values at once. Every way of summing them out (enumeration,
// variable elimination, shared tables, the direct sum) must agree with the brute force over
// the full joint, and the analytic gradient with central differences.
TEST_CASE("products of parents with hidden and missing factors: exact against brute force, gradient too") {
    const std::vector<std::pair<std::string, std::string>> cases{
        // A hidden node in an interaction with an observed one, and a fixed scale.
        {"node h hidden ~ bernoulli(0.6);\nnode o ~ bernoulli(0.5);\n"
         "node y ~ logistic(w * [h, o, h * o]);\nnode z ~ logistic(b + 2 * u * h);\n"
         "w ~ normal(0, 2);\nb, u ~ normal(0, 1.5);\n",
         "o,y,z\n1,1,1\n-1,1,-1\nNA,-1,1\n1,NA,1\n1,1,-1\n-1,-1,-1\nNA,1,NA\n"},
        // Two hidden factors in one product, a covariate factor, fixed weights on a product.
        {"covariate x;\nnode h[2] hidden ~ bernoulli(0.5);\n"
         "node v[2] ~ logistic(c + W * [h[1], h[2], h[1] * h[2], h[2] * x] + 0.4 * h[1] * h[2] * x);\n"
         "node t ~ logistic([0.5, -0.7] * [v[1] * h[1], v[2]] + a * v[1] * v[2]);\n"
         "c, W ~ normal(0, 2);\na ~ normal(0, 1);\n",
         "x,v[1],v[2],t\n0.5,1,-1,1\n-1.5,1,1,-1\n0.5,NA,-1,1\n2,-1,NA,NA\n0,1,-1,-1\n0.5,1,-1,1\n"},
        // A chain of hidden nodes whose children read products of neighbours.
        {"node h1 hidden ~ bernoulli(0.5);\nnode h2 hidden ~ logistic(a2 * h1);\n"
         "node h3 hidden ~ logistic(a3 * h2 + 0.5 * h1 * h2);\nnode h4 hidden ~ logistic(a4 * [h3, h2 * h3]);\n"
         "node y1 ~ logistic(e1 * [h1, h1 * h2]);\nnode y2 ~ logistic(e2 * [h2 * h3, h4]);\n"
         "node y3 ~ logistic(e3 * [h3, h1 * h2 * h3 * h4]);\n"
         "a2, a3, a4, e1, e2, e3 ~ normal(0, 1.5);\n",
         "y1,y2,y3\n1,1,-1\n-1,1,1\nNA,-1,1\n1,NA,1\n1,1,1\n-1,-1,NA\n"},
    };
    for (const auto& model_csv : cases) {
        const std::string& model = model_csv.first;
        const std::string& csv = model_csv.second;
        INFO(model);
        const Parsed p = parse_case(model, csv);
        for (const Summation how : {Summation::automatic, Summation::enumerate, Summation::eliminate}) {
            INFO("summation " << static_cast<int>(how));
            TargetOptions options;
            options.summation = how;
            const Target target(p.graph, p.data, options);
            auto ws = target.make_workspace();
            Rng rng(1003);
            for (int rep = 0; rep < 3; ++rep) {
                const Vec theta = random_theta(target.dim(), rng);
                CHECK(target.log_density(theta, ws) + target.log_constant() ==
                      doctest::Approx(brute_log_joint(p.graph, p.rows, theta)).epsilon(1e-9));
                Vec grad(target.dim());
                const double lp = target.log_density_gradient(theta, grad, ws);
                check_gradient(grad, numeric_gradient([&](const Vec& t) { return target.log_density(t, ws); }, theta),
                               std::abs(lp));
            }
        }
    }
}

TEST_CASE("FamilyRowMemo: an entry per node and binary values; none with a covariate or past 11 members") {
    std::string many = "node p[12] ~ bernoulli(0.5);\nnode q ~ logistic(v * p);\n";
    const ir::Graph g = compile_model("covariate x;\nnode a ~ bernoulli(0.5);\nnode b ~ logistic(w * a);\n"
                                      "node c ~ logistic(u * x + t * a);\n" + many +
                                      "node r ~ logistic(s * p[1] * p[2]);\n"
                                      "w, u, t, v, s ~ normal(0, 1);\n",
                                      "memo.vbn");
    std::vector<std::vector<int>> parents(g.elements.size());
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].binary) parents[e] = g.parents(static_cast<int>(e));
    FamilyRowMemo memo(g, parents);
    auto element = [&](const std::string& name) {
        for (std::size_t e = 0; e < g.elements.size(); ++e)
            if (g.elements[e].name == name) return static_cast<int>(e);
        FAIL("no element " << name);
        return -1;
    };
    std::vector<double> x(g.elements.size(), 1.0);
    const int a = element("a"), b = element("b");
    int* first = memo.entry(b, x);
    REQUIRE(first != nullptr);
    CHECK(*first == -1);  // no row yet
    *first = 7;
    CHECK(*memo.entry(b, x) == 7);  // the same values: the same entry
    x[static_cast<std::size_t>(a)] = -1;
    CHECK(*memo.entry(b, x) == -1);  // the parent differs
    x[static_cast<std::size_t>(a)] = 1;
    x[static_cast<std::size_t>(b)] = -1;
    CHECK(*memo.entry(b, x) == -1);  // the node's own value differs
    CHECK(memo.entry(a, x) != nullptr);  // no parents: two entries
    CHECK(memo.entry(element("r"), x) != nullptr);  // a product of binary parents
    CHECK(memo.entry(element("c"), x) == nullptr);  // its row depends on a covariate
    CHECK(memo.entry(element("q"), x) == nullptr);  // 12 parents: 2^13 entries is past the cap
    CHECK(memo.entry(element("x"), x) == nullptr);  // not a node
}

// The memo's entries are capped over all nodes (FamilyRowMemo::budget); the nodes that come
// after the cap is spent are left to the table, whose rows are the same.
TEST_CASE("FamilyRowMemo: past its budget of entries, nodes are left to the table") {
    constexpr std::size_t per_node = std::size_t{2} << FamilyRowMemo::max_members;  // 11 parents
    constexpr std::size_t fit = FamilyRowMemo::budget / per_node;
    const std::string model = fmt::format("node p[{}] ~ bernoulli(0.5);\nnode q[{}] ~ logistic(W * p);\nW ~ normal(0, 1);\n",
                                          FamilyRowMemo::max_members, fit + 3);
    const ir::Graph g = compile_model(model, "budget.vbn");
    std::vector<std::vector<int>> parents(g.elements.size());
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].binary) parents[e] = g.parents(static_cast<int>(e));
    FamilyRowMemo memo(g, parents);
    const std::vector<double> x(g.elements.size(), 1.0);
    std::size_t memoised = 0, left = 0;
    for (std::size_t e = FamilyRowMemo::max_members; e < g.elements.size(); ++e) {
        REQUIRE(parents[e].size() == FamilyRowMemo::max_members);
        (memo.entry(static_cast<int>(e), x) ? memoised : left) += 1;
    }
    CHECK(memoised == fit);
    CHECK(left == 3);
    // A node given its entries keeps them once the budget is spent.
    CHECK(memo.entry(static_cast<int>(FamilyRowMemo::max_members), x) != nullptr);
}
