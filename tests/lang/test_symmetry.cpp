// Exact posterior symmetries found from the graph (lang/symmetry.hpp): the counts and members
// on models that have them, and the single change that breaks each one.
#include "lang/frontend.hpp"
#include "lang/symmetry.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace vbn;

namespace {

lang::Symmetries symmetries(const std::string& text, ir::Graph* out = nullptr) {
    lang::Source source{"t.vbn", text};
    lang::Diagnostics diag{source};
    auto graph = lang::compile(source, diag);
    INFO(diag.format());
    REQUIRE(graph.has_value());
    if (out) *out = *graph;
    return lang::find_symmetries(*graph);
}

std::uint64_t labelings(const std::string& text) {
    const lang::Symmetries s = symmetries(text);
    REQUIRE(s.labelings.has_value());
    return *s.labelings;
}

const std::string sbn_3x8 = "node h[3] hidden ~ bernoulli(0.5);\n"
                            "node v[8] ~ logistic(b + W * h);\n"
                            "b ~ normal(0, sqrt(10));\nW ~ normal(0, sqrt(10));\n";

// One hidden class h with observed answers y[1..4].
const std::string latent_class = "node h hidden ~ bernoulli(0.5);\n"
                                 "node y[4] ~ logistic(b + w * h);\n"
                                 "b ~ normal(0, 2);\nw ~ normal(0, 3);\n";

}  // namespace

TEST_CASE("sbn_3x8: three flips and one class of three, 2^3 * 3! = 48 labelings") {
    ir::Graph g;
    const lang::Symmetries s = symmetries(sbn_3x8, &g);
    CHECK(s.flips == std::vector<int>{0, 1, 2});
    REQUIRE(s.exchangeable.size() == 1);
    CHECK(s.exchangeable[0] == std::vector<int>{0, 1, 2});
    CHECK(s.labelings == std::uint64_t{48});
    CHECK(lang::describe_symmetries(g, s) ==
          "48 equivalent labelings: each of h[1], h[2], h[3] flips sign with its weights; "
          "h[1], h[2], h[3] are exchangeable");
}

TEST_CASE("a latent-class model with a fair hidden root has two labelings") {
    ir::Graph g;
    const lang::Symmetries s = symmetries(latent_class, &g);
    CHECK(s.flips == std::vector<int>{0});
    CHECK(s.exchangeable.empty());
    CHECK(s.labelings == std::uint64_t{2});
    CHECK(lang::describe_symmetries(g, s) == "2 equivalent labelings: h flips sign with its weights");
}

TEST_CASE("two hidden roots with the same children and iid weights are exchangeable") {
    // p = 0.3: no flips, only the swap.
    const std::string text = "node a hidden ~ bernoulli(0.3);\nnode c hidden ~ bernoulli(0.3);\n"
                             "node y[3] ~ logistic(b + u * a + v * c);\n"
                             "b ~ normal(0, 2);\nu, v ~ normal(1, 3);\n";
    const lang::Symmetries s = symmetries(text);
    CHECK(s.flips.empty());
    REQUIRE(s.exchangeable.size() == 1);
    CHECK(s.exchangeable[0] == std::vector<int>{0, 1});
    CHECK(s.labelings == std::uint64_t{2});
}

TEST_CASE("a logistic hidden node with a zero-mean prior flips with its own weights") {
    const std::string text = "covariate x;\nnode h hidden ~ logistic(a + c * x);\n"
                             "node y ~ logistic(b + w * h);\na, c, b, w ~ normal(0, 1);\n";
    CHECK(labelings(text) == 2);
    // A learned weight on h beside other terms of the child is fine: only it changes sign.
    CHECK(labelings("node h hidden ~ bernoulli(0.5);\nnode o ~ bernoulli(0.2);\n"
                    "node y ~ logistic(1 + 2 * o + w * h);\nw ~ normal(0, 1);\n") == 2);
}

TEST_CASE("each broken condition removes the symmetry") {
    CHECK(!symmetries("node h hidden ~ bernoulli(0.6);\nnode y[4] ~ logistic(b + w * h);\n"
                      "b ~ normal(0, 2);\nw ~ normal(0, 3);\n").any());
    // A prior mean of 0.5 on one child weight.
    CHECK(!symmetries("node h hidden ~ bernoulli(0.5);\nnode y[2] ~ logistic(b + w * h);\n"
                      "b ~ normal(0, 2);\nw ~ normal([0, 0.5], [3, 3]);\n").any());
    // A fixed weight on h.
    CHECK(!symmetries("node h hidden ~ bernoulli(0.5);\nnode y ~ logistic(b + w * h);\n"
                      "node z ~ logistic(0.5 * h);\nb ~ normal(0, 2);\nw ~ normal(0, 3);\n").any());
    // Correlated prior between h's weight and the bias of the same child.
    CHECK(!symmetries("node h hidden ~ bernoulli(0.5);\nnode o ~ bernoulli(0.5);\nnode y ~ logistic(w * [h, o]);\n"
                      "w ~ mvnormal([0, 0], [[1, 0.5], [0.5, 1]]);\n").any());
    // The same with zero correlation flips.
    CHECK(labelings("node h hidden ~ bernoulli(0.5);\nnode o ~ bernoulli(0.5);\nnode y ~ logistic(w * [h, o]);\n"
                    "w ~ mvnormal([0, 0], [[1, 0], [0, 1]]);\n") == 2);
    // A logistic hidden node with an offset or a nonzero prior mean on its own weights.
    CHECK(!symmetries("node h hidden ~ logistic(1 + a);\nnode y ~ logistic(w * h);\na, w ~ normal(0, 1);\n").any());
    CHECK(!symmetries("node h hidden ~ logistic(a);\nnode y ~ logistic(w * h);\na ~ normal(1, 1);\nw ~ normal(0, 1);\n")
               .any());
}

TEST_CASE("exchangeability needs the same children and the same priors") {
    // Different children.
    CHECK(!symmetries("node a hidden ~ bernoulli(0.3);\nnode c hidden ~ bernoulli(0.3);\n"
                      "node y ~ logistic(u * [a, c]);\nnode z ~ logistic(v * a);\nu, v ~ normal(1, 1);\n")
               .any());
    // Different prior sds on the two weights.
    CHECK(!symmetries("node a hidden ~ bernoulli(0.3);\nnode c hidden ~ bernoulli(0.3);\n"
                      "node y ~ logistic(u * [a, c]);\nu ~ normal([1, 1], [1, 2]);\n").any());
    // Different root probabilities.
    CHECK(!symmetries("node a hidden ~ bernoulli(0.3);\nnode c hidden ~ bernoulli(0.4);\n"
                      "node y ~ logistic(u * [a, c]);\nu ~ normal(1, 1);\n").any());
    // Equal sds but unequal covariance with a third weight.
    CHECK(!symmetries("node a hidden ~ bernoulli(0.3);\nnode c hidden ~ bernoulli(0.3);\nnode o ~ bernoulli(0.5);\n"
                      "node y ~ logistic(u * [a, c, o]);\n"
                      "u ~ mvnormal([1, 1, 0], [[1, 0, 0.3], [0, 1, 0], [0.3, 0, 1]]);\n").any());
}

TEST_CASE("huge counts are reported as more than 10^18") {
    ir::Graph g;
    const lang::Symmetries s = symmetries("node h[25] hidden ~ bernoulli(0.5);\nnode v[2] ~ logistic(W * h);\n"
                                          "W ~ normal(0, 1);\n", &g);
    CHECK(s.flips.size() == 25);
    CHECK(!s.labelings.has_value());
    CHECK(lang::describe_symmetries(g, s).rfind("more than 10^18 equivalent labelings: each of h[1], ", 0) == 0);
}
