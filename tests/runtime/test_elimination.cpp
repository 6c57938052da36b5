// Summing out by variable elimination (runtime/target/elimination.hpp) against enumeration
// over all 2^m configurations: value, gradient and per-pattern terms on random networks, and
// a 20-node hidden chain that enumeration refuses.
#include "runtime/target/elimination_order.hpp"
#include "runtime/target/target.hpp"

#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"
#include "tests/support/graph_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace vbn;
using inference::Rng;
using test::bias;
using test::on;
using test::Row;
using Vec = Eigen::VectorXd;

int logistic(test::GraphBuilder& m, const std::string& name, bool hidden, double offset,
             std::vector<ir::FixedTerm> fixed, std::vector<ir::Feature> features) {
    const std::size_t n = features.size();
    return m.logistic_block(name, hidden, offset, std::move(fixed), std::move(features), "w_" + name,
                            {static_cast<int>(n)}, std::vector<double>(n, 0.0),
                            test::diagonal_cov(std::vector<double>(n, 1.5)), true);
}

struct Net {
    ir::Graph graph;
    std::vector<Row> rows;
};

// A random DAG of 6 to 10 nodes: each on up to 3 earlier nodes (learned weights of either
// sign, sometimes a fixed term as well), about a third hidden, a quarter of the observed
// cells missing. Its rows' components range from one value to the whole network.
Net random_net(std::uint64_t seed) {
    Rng rng(seed);
    test::GraphBuilder m;
    const int n = 6 + static_cast<int>(rng.uniform() * 5);
    std::vector<int> nodes;
    for (int i = 0; i < n; ++i) {
        std::vector<ir::Feature> features{bias()};
        std::vector<ir::FixedTerm> fixed;
        for (int p : nodes) {
            if (features.size() < 4 && rng.bernoulli(0.45)) features.push_back(on(p, rng.bernoulli(0.5) ? 1.0 : -1.0));
            else if (fixed.empty() && rng.bernoulli(0.1)) fixed.push_back({p, 0.7});
        }
        const bool hidden = i < n - 2 && rng.bernoulli(0.35);
        nodes.push_back(logistic(m, "x" + std::to_string(i + 1), hidden, 0.2 * rng.normal(), fixed, features));
    }
    Net net{m.g, {}};
    for (int t = 0; t < 40; ++t) {
        Row r(sz(n), 0.0);
        for (int e = 0; e < n; ++e)
            if (!m.g.elements[sz(e)].hidden && !rng.bernoulli(0.25)) r[sz(e)] = rng.bernoulli(0.5) ? 1 : -1;
        net.rows.push_back(r);
    }
    return net;
}

Target make(const Net& net, Summation how, int limit = 12) {
    TargetOptions o;
    o.summation = how;
    o.max_enumerated = limit;
    o.pattern_terms = true;
    return Target(net.graph, test::make_dataset(net.graph, net.rows), o);
}

void check_close(double a, double b) {
    CHECK(std::abs(a - b) <= 1e-10 * std::max(1.0, std::abs(b)));
}

void check_close(const Vec& a, const Vec& b) {
    REQUIRE(a.size() == b.size());
    for (int k = 0; k < a.size(); ++k) {
        INFO("entry " << k << ": " << a[k] << " against " << b[k]);
        check_close(a[k], b[k]);
    }
}

// Value, gradient, every pattern's term and (with blocks) every block's value and gradient:
// the same by elimination as by enumeration.
void compare(const Target& elim, const Target& enumerated, const Vec& theta, bool blocks = true) {
    Vec g1(elim.dim()), g2(elim.dim());
    check_close(elim.log_density_gradient(theta, g1), enumerated.log_density_gradient(theta, g2));
    check_close(g1, g2);
    check_close(elim.log_density(theta), enumerated.log_density(theta));
    for (int b = 0; b < elim.blocks() && blocks; ++b) {
        Vec b1(elim.block_size(b)), b2(elim.block_size(b));
        check_close(elim.block_log_density_gradient(b, theta, b1), enumerated.block_log_density_gradient(b, theta, b2));
        check_close(b1, b2);
    }
    auto ws1 = elim.make_workspace();
    auto ws2 = enumerated.make_workspace();
    Vec p1(elim.patterns()), p2(enumerated.patterns());
    elim.pattern_log_likelihoods(theta, p1, ws1);
    enumerated.pattern_log_likelihoods(theta, p2, ws2);
    check_close(p1, p2);
}

// h[1] on a learned bias, h[i] on h[i−1] by a learned weight, each h[i] with one observed
// child o[i]: a chain of `length` hidden values in every row, width 2. Rows simulated from
// fixed weights at the given seed.
Net hidden_chain(int length, int rows, std::uint64_t seed) {
    test::GraphBuilder m;
    std::vector<int> h;
    for (int i = 0; i < length; ++i) {
        const std::string k = std::to_string(i + 1);
        h.push_back(i == 0 ? logistic(m, "h" + k, true, 0.0, {}, {bias()})
                           : logistic(m, "h" + k, true, 0.0, {}, {bias(), on(h.back())}));
        logistic(m, "o" + k, false, 0.0, {}, {bias(), on(h.back())});
    }
    Rng rng(seed);
    Net net{m.g, {}};
    for (int t = 0; t < rows; ++t) {
        Row r(sz(2 * length), 0.0);
        double prev = 0;
        for (int i = 0; i < length; ++i) {
            const double hi = rng.bernoulli(1 / (1 + std::exp(-(0.3 + 2.0 * prev)))) ? 1 : -1;
            r[sz(2 * i + 1)] = rng.bernoulli(1 / (1 + std::exp(-(-0.2 + 1.5 * hi)))) ? 1 : -1;
            prev = hi;
        }
        net.rows.push_back(r);
    }
    return net;
}

Vec random_theta(int dim, Rng& rng) {
    Vec t(dim);
    for (int k = 0; k < dim; ++k) t[k] = 1.5 * rng.normal();
    return t;
}

}  // namespace

TEST_CASE("min-fill: a chain has width 2 whatever its length, a clique its size, ties by index") {
    std::vector<std::vector<int>> chain;
    for (int i = 0; i < 30; ++i) chain.push_back(i == 0 ? std::vector<int>{0} : std::vector<int>{i - 1, i});
    const EliminationOrder c = min_fill_order(30, chain, 12);
    CHECK(c.order.size() == 30);
    CHECK(c.width == 2);
    CHECK(c.order.front() == 0);  // both ends cost nothing; the lower index goes first
    CHECK(c.cost == doctest::Approx(29 * 4 + 2));
    // 13 variables in one factor: every clique is 13, over the limit, so nothing is ordered.
    std::vector<int> all(13);
    for (int i = 0; i < 13; ++i) all[sz(i)] = i;
    const EliminationOrder k = min_fill_order(13, {all}, 12);
    CHECK(k.width == 13);
    CHECK(k.order.empty());
    CHECK(min_fill_order(13, {all}, 13).width == 13);
    // A 4-cycle needs one fill link: width 3.
    CHECK(min_fill_order(4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}, 12).width == 3);
}

TEST_CASE("elimination equals enumeration on random networks: value, gradient, blocks, patterns") {
    Rng rng(2031);
    int eliminated = 0, widest = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        const Net net = random_net(seed);
        INFO("network seed " << seed);
        const Target elim = make(net, Summation::eliminate);
        const Target enumerated = make(net, Summation::enumerate);
        CHECK(enumerated.eliminated_components() == 0);
        eliminated += elim.eliminated_components();
        widest = std::max(widest, elim.families().widest_component);
        CHECK(elim.families().widest_component <= elim.families().largest_component);
        for (int rep = 0; rep < 2; ++rep) compare(elim, enumerated, random_theta(elim.dim(), rng));
    }
    CHECK(eliminated > 100);  // the comparison is not vacuous
    CHECK(widest >= 3);       // and covers cliques beyond pairs
}

TEST_CASE("elimination keeps far-out weights finite and exact: |eta| ~ 500") {
    const Net net = random_net(7);
    const Target elim = make(net, Summation::eliminate);
    const Target enumerated = make(net, Summation::enumerate);
    REQUIRE(elim.eliminated_components() > 0);
    Rng rng(5);
    const Vec theta = 300 * random_theta(elim.dim(), rng);
    Vec g(elim.dim());
    CHECK(std::isfinite(elim.log_density_gradient(theta, g)));
    CHECK(g.allFinite());
    compare(elim, enumerated, theta);
}

TEST_CASE("a 20-node hidden chain: refused by enumeration, summed by elimination at width 2") {
    const Net net = hidden_chain(20, 3, 20);
    try {
        make(net, Summation::enumerate);
        FAIL("expected a limit error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::limit);
        CHECK(std::string(e.what()).find("20 unobserved nodes") != std::string::npos);
    }
    const Target automatic = make(net, Summation::automatic);
    CHECK(automatic.families().largest_component == 20);
    CHECK(automatic.families().widest_component == 2);
    CHECK(automatic.eliminated_components() == 3);
    // Against all 2^20 configurations per row (enumeration allowed up to 20 for the check).
    const Target enumerated = make(net, Summation::enumerate, 20);
    Rng rng(77);
    compare(automatic, enumerated, random_theta(automatic.dim(), rng), false);
}

TEST_CASE("automatic summation enumerates small components and eliminates long chains") {
    const Net small = hidden_chain(6, 20, 3);
    const Target a = make(small, Summation::automatic);
    CHECK(a.eliminated_components() == 0);  // 2^6 terms against 22: enumeration is as cheap
    // 2^8 against 30 terms (more than 4 times fewer): elimination, 4.6 times faster in
    // bench_target's BM_Chain*/8/1.
    const Target eight = make(hidden_chain(8, 20, 3), Summation::automatic);
    CHECK(eight.eliminated_components() == static_cast<int>(eight.families().components.size()));
    const Net long_chain = hidden_chain(12, 20, 3);
    const Target b = make(long_chain, Summation::automatic);
    CHECK(b.eliminated_components() == static_cast<int>(b.families().components.size()));
    // The limit now bounds the width: a 30-node chain with limit 2 is summed, limit 1 refused.
    const Net chain30 = hidden_chain(30, 4, 9);
    CHECK(make(chain30, Summation::automatic, 2).families().widest_component == 2);
    CHECK_THROWS_AS(make(chain30, Summation::automatic, 1), Error);
}
