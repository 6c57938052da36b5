// Approximate symmetries (lang/approximate_symmetry.hpp): the flips a fixed offset or the
// prior partly breaks, with the entries of θ each negates; exact flips and flips a fixed
// weight pins are not among them.
#include "lang/approximate_symmetry.hpp"
#include "lang/frontend.hpp"
#include "lang/symmetry.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include <string>
#include <vector>

using namespace vbn;

namespace {

ir::Graph graph_of(const std::string& text) {
    lang::Source source{"t.vbn", text};
    lang::Diagnostics diag{source};
    auto graph = lang::compile(source, diag);
    INFO(diag.format());
    REQUIRE(graph.has_value());
    return *graph;
}

// The θ indices of a parameter's elements, in its storage order.
std::vector<int> theta_of(const ir::Graph& g, const std::string& name) {
    for (const auto& p : g.parameters)
        if (p.name == name) return p.theta_index;
    FAIL("no parameter " << name);
    return {};
}

std::vector<int> sorted(std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_CASE("diagnosis: each disease flips alone; the prevalences break both flips") {
    const ir::Graph g = graph_of("node d1 hidden ~ bernoulli(0.1);\nnode d2 hidden ~ bernoulli(0.3);\n"
                                 "node s[6] ~ logistic(b + u * d1 + v * d2);\nb, u, v ~ normal(0, 2.5);\n");
    CHECK_FALSE(lang::find_symmetries(g).any());
    const auto flips = lang::find_approximate_flips(g);
    REQUIRE(flips.size() == 2);
    CHECK(flips[0].elements == std::vector<int>{0});
    CHECK(flips[0].negated == sorted(theta_of(g, "u")));
    CHECK(flips[1].negated == sorted(theta_of(g, "v")));
    CHECK(lang::describe_flip(g, flips[1]) == "d2");
}

TEST_CASE("occupancy: the hidden node's own block and its children's weights on it") {
    const ir::Graph g = graph_of("covariate x[2];\nnode z hidden ~ logistic(a + u * x);\n"
                                 "node y[4] ~ logistic(c + v * z);\na, u, c ~ normal(0, 2.5);\nv ~ normal(1.5, 1);\n");
    const auto flips = lang::find_approximate_flips(g);
    REQUIRE(flips.size() == 1);
    std::vector<int> expect = theta_of(g, "a");
    for (int k : theta_of(g, "u")) expect.push_back(k);
    for (int k : theta_of(g, "v")) expect.push_back(k);
    CHECK(flips[0].negated == sorted(expect));
    // With v ~ normal(0, 1) the flip is exact: a labeling, not a minor mode.
    const ir::Graph exact = graph_of("covariate x[2];\nnode z hidden ~ logistic(a + u * x);\n"
                                     "node y[4] ~ logistic(c + v * z);\na, u, c, v ~ normal(0, 2.5);\n");
    CHECK(lang::find_symmetries(exact).flips == std::vector<int>{2});
    CHECK(lang::find_approximate_flips(exact).empty());
}

TEST_CASE("a hidden chain with fixed weights flips as one; a learned link keeps its sign") {
    // h1 … h3 joined by fixed weights: one flip of all three, broken by P(h1 = +1) = 0.7 alone.
    const ir::Graph chain = graph_of("node h1 hidden ~ bernoulli(0.7);\nnode h2 hidden ~ logistic(3 * h1);\n"
                                     "node h3 hidden ~ logistic(3 * h2);\nnode o[3] ~ logistic(w * [h1, h2, h3]);\n"
                                     "w ~ normal(0, 2);\n");
    const auto flips = lang::find_approximate_flips(chain);
    REQUIRE(flips.size() == 1);
    CHECK(flips[0].elements.size() == 3);
    CHECK(flips[0].negated == sorted(theta_of(chain, "w")));
    CHECK(lang::describe_flip(chain, flips[0]) == "h1, h2, h3");
    // At P(h1 = +1) = 0.5 the chain's flip is exact (no offset, a symmetric prior): not listed.
    const ir::Graph fair = graph_of("node h1 hidden ~ bernoulli(0.5);\nnode h2 hidden ~ logistic(3 * h1);\n"
                                    "node o[2] ~ logistic(w * [h1, h2]);\nw ~ normal(0, 2);\n");
    CHECK(lang::find_approximate_flips(fair).empty());
    // chain_hmm: learned links; flipping h2 negates its bias t1 and the emissions e2, keeps p1's
    // sign only when h1 flips too (a separate flip, so p1 is negated by each alone).
    const ir::Graph hmm = graph_of("node h1 hidden ~ bernoulli(0.5);\nnode h2 hidden ~ logistic(t1 + p1 * h1);\n"
                                   "node y1[2] ~ logistic(b1 + e1 * h1);\nnode y2[2] ~ logistic(b2 + e2 * h2);\n"
                                   "t1, p1, b1, b2 ~ normal(0, 2.5);\ne1, e2 ~ normal(1.5, 1);\n");
    const auto hf = lang::find_approximate_flips(hmm);
    REQUIRE(hf.size() == 2);
    std::vector<int> h1 = theta_of(hmm, "p1");
    for (int k : theta_of(hmm, "e1")) h1.push_back(k);
    CHECK(hf[0].negated == sorted(h1));
    std::vector<int> h2 = theta_of(hmm, "t1");
    for (int k : theta_of(hmm, "p1")) h2.push_back(k);
    for (int k : theta_of(hmm, "e2")) h2.push_back(k);
    CHECK(hf[1].negated == sorted(h2));
}

TEST_CASE("a fixed weight from a hidden node to an observed one pins its flip") {
    const ir::Graph g = graph_of("node h hidden ~ bernoulli(0.6);\nnode y ~ logistic(2 * h);\n"
                                 "node z[2] ~ logistic(w * h);\nw ~ normal(1, 1);\n");
    CHECK(lang::find_approximate_flips(g).empty());
    // A fixed offset of the child is no obstacle: the paper's multimodal model.
    const ir::Graph paper = graph_of("node h hidden ~ bernoulli(0.6);\nnode o ~ bernoulli(0.5);\n"
                                     "node y ~ logistic(2 + w * [h, o]);\nw ~ normal(3, sqrt(10));\n");
    const auto flips = lang::find_approximate_flips(paper);
    REQUIRE(flips.size() == 1);
    CHECK(flips[0].negated == std::vector<int>{theta_of(paper, "w")[0]});
}

TEST_CASE("exact symmetries only: sbn_3x8 has no approximate flip") {
    const ir::Graph g = graph_of("node h[3] hidden ~ bernoulli(0.5);\nnode v[8] ~ logistic(b + W * h);\n"
                                 "b ~ normal(0, sqrt(10));\nW ~ normal(0, sqrt(10));\n");
    CHECK(lang::find_approximate_flips(g).empty());
}

TEST_CASE("exchanges: hidden nodes of the same form whose offsets or priors differ") {
    // Biases of different priors: exchanging d1 and d2 swaps a and c.
    const ir::Graph rival = graph_of("node d1 hidden ~ logistic(a);\nnode d2 hidden ~ logistic(c);\n"
                                     "node s[5] ~ logistic(-1 + 2 * d1 + 2 * d2);\na ~ normal(1, 1);\nc ~ normal(0, 1);\n");
    const auto swaps = lang::find_approximate_swaps(rival);
    REQUIRE(swaps.size() == 1);
    CHECK(swaps[0].name == "d1 <-> d2");
    const int a = theta_of(rival, "a")[0], c = theta_of(rival, "c")[0];
    CHECK(swaps[0].perm[static_cast<std::size_t>(a)] == c);
    CHECK(swaps[0].perm[static_cast<std::size_t>(c)] == a);
    CHECK(lang::find_approximate_flips(rival).empty());  // the fixed weights pin both flips
    CHECK(lang::find_symmetries(rival).exchangeable.empty());

    // The same with equal priors is exact (relabelled, not jumped).
    const ir::Graph twins = graph_of("node d1 hidden ~ logistic(a);\nnode d2 hidden ~ logistic(c);\n"
                                     "node s[5] ~ logistic(-1 + 2 * d1 + 2 * d2);\na, c ~ normal(0, 1);\n");
    CHECK(lang::find_approximate_swaps(twins).empty());
    CHECK(lang::find_symmetries(twins).exchangeable.size() == 1);

    // Prevalences that differ, effects' weights of one prior: exchanging the diseases (u with v)
    // is approximate, as is flipping each.
    const ir::Graph diagnosis = graph_of("node d1 hidden ~ bernoulli(0.1);\nnode d2 hidden ~ bernoulli(0.3);\n"
                                         "node s[6] ~ logistic(b + u * d1 + v * d2);\nb, u, v ~ normal(0, 2.5);\n");
    const auto ds = lang::find_approximate_swaps(diagnosis);
    REQUIRE(ds.size() == 1);
    const std::vector<int> u = theta_of(diagnosis, "u"), v = theta_of(diagnosis, "v");
    for (std::size_t k = 0; k < u.size(); ++k) {
        CHECK(ds[0].perm[static_cast<std::size_t>(u[k])] == v[k]);
        CHECK(ds[0].perm[static_cast<std::size_t>(v[k])] == u[k]);
    }
    for (int b : theta_of(diagnosis, "b")) CHECK(ds[0].perm[static_cast<std::size_t>(b)] == b);

    // Not of the same form: different fixed weights, or different children.
    CHECK(lang::find_approximate_swaps(graph_of("node d1 hidden ~ logistic(a);\nnode d2 hidden ~ logistic(c);\n"
                                                "node s[5] ~ logistic(-1 + 2 * d1 + 3 * d2);\na, c ~ normal(0, 1);\n"))
              .empty());
    CHECK(lang::find_approximate_swaps(graph_of("node d1 hidden ~ bernoulli(0.1);\nnode d2 hidden ~ bernoulli(0.3);\n"
                                                "node s ~ logistic(u * d1);\nnode t ~ logistic(v * d2);\nu, v ~ normal(0, 1);\n"))
              .empty());

    // Three of one form, the first two exactly exchangeable: one approximate exchange, of the
    // neighbours h2 and h3 (with the exact h1 <-> h2 it generates every permutation).
    const ir::Graph three = graph_of("node h1 hidden ~ bernoulli(0.5);\nnode h2 hidden ~ bernoulli(0.5);\n"
                                     "node h3 hidden ~ bernoulli(0.2);\n"
                                     "node y[4] ~ logistic(b + p * h1 + q * h2 + r * h3);\nb, p, q, r ~ normal(0, 1);\n");
    const auto ts = lang::find_approximate_swaps(three);
    REQUIRE(ts.size() == 1);
    CHECK(ts[0].name == "h2 <-> h3");
    // Three of one form, all prevalences different: the neighbours' exchanges.
    const ir::Graph rivals = graph_of("node h1 hidden ~ bernoulli(0.6);\nnode h2 hidden ~ bernoulli(0.4);\n"
                                      "node h3 hidden ~ bernoulli(0.2);\n"
                                      "node y[4] ~ logistic(b + p * h1 + q * h2 + r * h3);\nb, p, q, r ~ normal(0, 1);\n");
    const auto rs = lang::find_approximate_swaps(rivals);
    REQUIRE(rs.size() == 2);
    CHECK(rs[0].name == "h1 <-> h2");
    CHECK(rs[1].name == "h2 <-> h3");
}
