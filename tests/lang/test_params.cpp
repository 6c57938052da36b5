// Declared parameters (`param d;`, docs/language.md "Shared weights"): shapes, ties and the
// blocks they merge, and the errors of their misuse.
#include "lang/frontend.hpp"
#include "lang/symmetry.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace vbn;

namespace {

ir::Graph lower_tied(const std::string& text) {
    lang::Source source{"t.vbn", text};
    lang::Diagnostics diag{source};
    auto graph = lang::compile(source, diag);
    INFO(diag.format());
    REQUIRE(graph.has_value());
    CHECK(diag.error_count() == 0);
    return std::move(*graph);
}

std::string lower_error(const std::string& text) {
    lang::Source source{"t.vbn", text};
    lang::Diagnostics diag{source};
    CHECK(!lang::compile(source, diag).has_value());
    return diag.format();
}

int element_named(const ir::Graph& g, const std::string& name) {
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == name) return static_cast<int>(e);
    FAIL("no element ", name);
    return -1;
}

const ir::Cpd& tied_cpd(const ir::Graph& g, const std::string& name) { return g.cpds[static_cast<std::size_t>(element_named(g, name))]; }

// θ's names of an element's features, in feature order.
std::vector<std::string> weights_of(const ir::Graph& g, const std::string& name) {
    const ir::Cpd& c = tied_cpd(g, name);
    std::vector<std::string> out;
    for (const auto& f : c.features)
        out.push_back(g.theta_name(g.blocks[static_cast<std::size_t>(c.block)].offset + f.weight));
    return out;
}

using WeightNames = std::vector<std::string>;

}  // namespace

TEST_CASE("a declared scalar weights every element of an array node: one block for all of them") {
    const ir::Graph g = lower_tied(
        "covariate x[2];\n"
        "param c;\n"
        "param v;\n"
        "node z hidden ~ logistic(a + u * x);\n"
        "node y[4] ~ logistic(c + v * z);\n"
        "a, u, c ~ normal(0, 2.5);\n"
        "v ~ normal(1.5, 1);\n");
    CHECK(g.dim == 5);
    REQUIRE(g.blocks.size() == 2);
    const ir::Block& b = g.blocks[1];
    CHECK(b.size == 2);
    CHECK(b.elements == std::vector<int>{element_named(g, "y[1]"), element_named(g, "y[2]"), element_named(g, "y[3]"), element_named(g, "y[4]")});
    for (const char* y : {"y[1]", "y[2]", "y[3]", "y[4]"}) {
        CHECK(tied_cpd(g, y).block == 1);
        CHECK(weights_of(g, y) == WeightNames{"c", "v"});
    }
    CHECK(b.prior_mean == std::vector<double>{0.0, 1.5});
    CHECK(b.prior_cov == std::vector<double>{6.25, 0.0, 0.0, 1.0});
}

TEST_CASE("a declared vector shared by the elements, beside an undeclared bias per element") {
    const ir::Graph g = lower_tied(
        "node d hidden ~ bernoulli(0.3);\n"
        "node t ~ logistic(b + s * d);\n"
        "param r[2];\n"
        "node q[3] ~ logistic(c + r * [d, t]);\n"
        "b, s, c, r ~ normal(0, 2);\n");
    REQUIRE(g.blocks.size() == 2);
    CHECK(g.blocks[1].size == 5);
    CHECK(weights_of(g, "q[1]") == WeightNames{"c[1]", "r[1]", "r[2]"});
    CHECK(weights_of(g, "q[2]") == WeightNames{"c[2]", "r[1]", "r[2]"});
    CHECK(weights_of(g, "q[3]") == WeightNames{"c[3]", "r[1]", "r[2]"});
    CHECK(g.dim == 7);
}

TEST_CASE("a declared parameter used by two nodes ties their blocks together") {
    const ir::Graph g = lower_tied(
        "node d hidden ~ bernoulli(0.3);\n"
        "param s;\n"
        "node t1 ~ logistic(b1 + s * d);\n"
        "node t2 ~ logistic(b2 + s * d);\n"
        "node u ~ logistic(e * d);\n"
        "b1, b2, e ~ normal(0, 2);\n"
        "s ~ normal(1, 1);\n");
    REQUIRE(g.blocks.size() == 2);
    CHECK(g.blocks[0].elements == std::vector<int>{element_named(g, "t1"), element_named(g, "t2")});
    CHECK(weights_of(g, "t1") == WeightNames{"b1", "s"});
    CHECK(weights_of(g, "t2") == WeightNames{"b2", "s"});
    CHECK(g.theta_name(g.blocks[0].offset + 2) == "b2");
    CHECK(weights_of(g, "u") == WeightNames{"e"});
    CHECK(g.blocks[1].elements == std::vector<int>{element_named(g, "u")});
}

TEST_CASE("declared shapes that keep one weight per element tie nothing, like undeclared ones") {
    const ir::Graph declared = lower_tied(
        "node x[2] ~ bernoulli(0.5);\n"
        "param b[3];\n"
        "param W[3, 2];\n"
        "node y[3] ~ logistic(b + W * x);\n"
        "b, W ~ normal(0, 1);\n");
    const ir::Graph inferred = lower_tied(
        "node x[2] ~ bernoulli(0.5);\n"
        "node y[3] ~ logistic(b + W * x);\n"
        "b, W ~ normal(0, 1);\n");
    REQUIRE(declared.blocks.size() == 3);
    REQUIRE(inferred.blocks.size() == 3);
    for (const char* y : {"y[1]", "y[2]", "y[3]"}) CHECK(weights_of(declared, y) == weights_of(inferred, y));
    CHECK(weights_of(declared, "y[2]") == WeightNames{"b[2]", "W[2,1]", "W[2,2]"});
}

TEST_CASE("a declared scalar on several parents of one node is one weight on their sum") {
    const ir::Graph g = lower_tied(
        "node a ~ bernoulli(0.5);\n"
        "node b ~ bernoulli(0.5);\n"
        "param w;\n"
        "node y ~ logistic(w * [a, b]);\n"
        "w ~ normal(0, 1);\n");
    CHECK(g.dim == 1);
    CHECK(weights_of(g, "y") == WeightNames{"w", "w"});
}

TEST_CASE("a flip stays exact when the tied weights all flip with it, and is refused when a tie crosses it") {
    // Every weight on h is the shared v: flipping h negates v in all four children at once.
    const ir::Graph kept = lower_tied(
        "node h hidden ~ logistic(a);\n"
        "param v;\n"
        "node y[4] ~ logistic(c + v * h);\n"
        "a, c, v ~ normal(0, 1);\n");
    // w weights h in y and the observed o in z: negating it for h would change z's term.
    const ir::Graph crossed = lower_tied(
        "node h hidden ~ logistic(a);\n"
        "node o ~ bernoulli(0.5);\n"
        "param w;\n"
        "node y ~ logistic(w * h);\n"
        "node z ~ logistic(w * o);\n"
        "a, w ~ normal(0, 1);\n");
    CHECK(lang::flip_is_exact(kept, element_named(kept, "h")));
    CHECK(lang::flip_coordinates(kept, element_named(kept, "h")).size() == 2);  // a and v
    CHECK_FALSE(lang::flip_is_exact(crossed, element_named(crossed, "h")));
}

TEST_CASE("tied blocks are held to the limits on block size and on prior covariance entries") {
    CHECK(lower_error("node x ~ bernoulli(0.5);\nparam w;\nnode y[2100] ~ logistic(b + w * x);\nb, w ~ normal(0, 1);\n")
              .find("t.vbn:3:29: error: too many learned weights in one block: the declared parameters tie 2100 node "
                    "elements with 2101 weights together, and one block holds at most 2048") != std::string::npos);
    // Six tied blocks of 2,001 weights: 6 × 2001² prior covariance entries exceed the 20 million.
    std::string text = "node x ~ bernoulli(0.5);\n";
    for (int k = 1; k <= 6; ++k)
        text += "param w" + std::to_string(k) + ";\nnode y" + std::to_string(k) + "[2000] ~ logistic(b" + std::to_string(k) +
                " + w" + std::to_string(k) + " * x);\nb" + std::to_string(k) + ", w" + std::to_string(k) + " ~ normal(0, 1);\n";
    CHECK(lower_error(text).find("error: the model is too large: with this tied block the prior covariances") !=
          std::string::npos);
}

TEST_CASE("misused declarations are located errors") {
    CHECK(lower_error("node x ~ bernoulli(0.5);\nparam w[3];\nnode y[4] ~ logistic(w * x);\nw ~ normal(0, 1);\n")
              .find("t.vbn:3:22: error: parameter 'w' is declared vector[3] on line 2, but this term of 'y' (4 elements, "
                    "1 parent) needs a scalar (shared by the elements of 'y') or a vector[4] (one per element)") != std::string::npos);
    CHECK(lower_error("param w;\nparam w;\nnode y ~ logistic(w);\nw ~ normal(0, 1);\n")
              .find("t.vbn:2:7: error: parameter 'w' is already declared on line 1") != std::string::npos);
    CHECK(lower_error("node y ~ bernoulli(0.5);\nparam y;\nnode z ~ logistic(b);\nb ~ normal(0, 1);\n")
              .find("t.vbn:2:7: error: duplicate name 'y'") != std::string::npos);
    CHECK(lower_error("param w;\nnode y ~ logistic(b);\nb, w ~ normal(0, 1);\n")
              .find("t.vbn:1:7: error: parameter 'w' is declared but no predictor uses it") != std::string::npos);
    CHECK(lower_error("param w[0];\nnode y ~ logistic(w);\nw ~ normal(0, 1);\n")
              .find("t.vbn:1:9: error: a parameter's sizes must be at least 1, found 0") != std::string::npos);
    CHECK(lower_error("node x ~ bernoulli(0.5);\nnode y ~ logistic(w * x);\nnode z ~ logistic(w * x);\nw ~ normal(0, 1);\n")
              .find("declare 'param w;' to share one weight") != std::string::npos);
    CHECK(lower_error("node x ~ bernoulli(0.5);\nparam w[2];\nnode y[2] ~ logistic(w * x);\nw ~ mvnormal([0, 0], [[1, 0.5], [0.5, 1]]);\n")
              .find("mvnormal needs a parameter of one scalar node") != std::string::npos);
}
