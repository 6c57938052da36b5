// Lowering: the IR graphs of small models, field by field (docs/design.md §1 canonical form).
#include "lang/frontend.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace vbn;

namespace {

ir::Graph compile_ok(const std::string& text) {
    lang::Source source{"t.vbn", text};
    lang::Diagnostics diag{source};
    auto graph = lang::compile(source, diag);
    INFO(diag.format());
    REQUIRE(graph.has_value());
    CHECK(diag.error_count() == 0);
    return std::move(*graph);
}

lang::Diagnostics compile_bad(const lang::Source& source) {
    lang::Diagnostics diag{source};
    const auto graph = lang::compile(source, diag);
    CHECK(!graph.has_value());
    return diag;
}

double logit(double p) { return std::log(p / (1 - p)); }

const ir::Cpd& cpd(const ir::Graph& g, const std::string& element) {
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == element) return g.cpds[e];
    FAIL("no element ", element);
    return g.cpds.front();
}

int element_index(const ir::Graph& g, const std::string& name) {
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == name) return static_cast<int>(e);
    return -1;
}

const ir::Parameter& param(const ir::Graph& g, const std::string& name) {
    for (const auto& p : g.parameters)
        if (p.name == name) return p;
    FAIL("no parameter ", name);
    return g.parameters.front();
}

}  // namespace

TEST_CASE("the multimodal model of docs/design.md lowers to two fixed roots and one block of two weights") {
    const ir::Graph g = compile_ok(
        "node h hidden ~ bernoulli(0.6);\n"
        "node o        ~ bernoulli(0.5);\n"
        "node y        ~ logistic(2 + w * [h, o]);\n"
        "w ~ normal(3, sqrt(10));\n");
    CHECK(g.name == "t.vbn");
    REQUIRE(g.variables.size() == 3);
    CHECK(g.variables[0].name == "h");
    CHECK(g.variables[0].hidden);
    CHECK(g.variables[0].kind == ir::VariableKind::binary);
    CHECK(!g.variables[0].is_array);
    CHECK(g.variables[0].loc.line == 1);
    CHECK(g.variables[0].loc.column == 6);
    CHECK(!g.variables[1].hidden);
    CHECK(g.variables[2].first_element == 2);
    REQUIRE(g.elements.size() == 3);
    CHECK(g.elements[0].name == "h");
    CHECK(g.elements[0].hidden);
    CHECK(g.elements[2].binary);
    CHECK(g.elements[2].variable == 2);

    CHECK(!g.cpds[0].logistic);
    CHECK(g.cpds[0].offset == doctest::Approx(logit(0.6)).epsilon(1e-14));
    CHECK(g.cpds[0].block == -1);
    CHECK(g.cpds[1].offset == doctest::Approx(0.0));
    const ir::Cpd& y = g.cpds[2];
    CHECK(y.logistic);
    CHECK(y.offset == 2.0);
    CHECK(y.fixed.empty());
    REQUIRE(y.features.size() == 2);
    CHECK(y.features[0].element == 0);
    CHECK(y.features[1].element == 1);
    CHECK(y.features[0].sign == 1.0);
    CHECK(y.block == 0);

    REQUIRE(g.blocks.size() == 1);
    CHECK(g.blocks[0].element == 2);
    CHECK(g.blocks[0].offset == 0);
    CHECK(g.blocks[0].size == 2);
    CHECK(g.blocks[0].prior_mean == std::vector<double>{3, 3});
    REQUIRE(g.blocks[0].prior_cov.size() == 4);
    CHECK(g.blocks[0].prior_cov[0] == doctest::Approx(10.0).epsilon(1e-14));
    CHECK(g.blocks[0].prior_cov[1] == 0.0);
    CHECK(g.blocks[0].prior_cov[2] == 0.0);
    CHECK(g.blocks[0].prior_cov[3] == doctest::Approx(10.0).epsilon(1e-14));
    CHECK(g.blocks[0].prior_diagonal);
    CHECK(g.dim == 2);

    REQUIRE(g.parameters.size() == 1);
    CHECK(g.parameters[0].name == "w");
    CHECK(g.parameters[0].shape == std::vector<int>{2});
    CHECK(g.parameters[0].theta_index == std::vector<int>{0, 1});
    CHECK(g.parameters[0].prior == "normal(3, 3.16228)");
    CHECK(g.parameters[0].loc.line == 3);
    CHECK(g.parameters[0].loc.column == 30);
    CHECK(g.topological_order == std::vector<int>{0, 1, 2});
    CHECK(g.theta_name(0) == "w[1]");
    CHECK(g.theta_csv_name(1) == "w.2");
}

TEST_CASE("a 3x8 sigmoid belief network has 8 blocks of bias plus 3 weights") {
    const ir::Graph g = compile_ok(
        "node h[3] hidden ~ bernoulli(0.5);\n"
        "node v[8]        ~ logistic(b + W * h);\n"
        "b ~ normal(0, 3);\n"
        "W ~ normal(0, 2);\n");
    REQUIRE(g.elements.size() == 11);
    CHECK(g.elements[1].name == "h[2]");
    CHECK(g.elements[1].index == 1);
    CHECK(g.elements[10].name == "v[8]");
    CHECK(g.variables[1].is_array);
    CHECK(g.variables[1].size == 8);
    CHECK(g.variables[1].first_element == 3);
    CHECK(g.topological_order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});

    const ir::Parameter& b = param(g, "b");
    const ir::Parameter& W = param(g, "W");
    CHECK(g.parameters[0].name == "b");
    CHECK(b.shape == std::vector<int>{8});
    CHECK(W.shape == std::vector<int>{8, 3});
    CHECK(b.prior == "normal(0, 3)");
    CHECK(W.prior == "normal(0, 2)");
    REQUIRE(g.blocks.size() == 8);
    CHECK(g.dim == 32);
    for (int k = 0; k < 8; ++k) {
        const ir::Block& blk = g.blocks[static_cast<std::size_t>(k)];
        CHECK(blk.element == 3 + k);
        CHECK(blk.offset == 4 * k);
        CHECK(blk.size == 4);
        CHECK(blk.prior_diagonal);
        CHECK(blk.prior_mean == std::vector<double>{0, 0, 0, 0});
        CHECK(blk.prior_cov == std::vector<double>{9, 0, 0, 0, 0, 4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 4});
        const ir::Cpd& c = g.cpds[static_cast<std::size_t>(3 + k)];
        CHECK(c.block == k);
        REQUIRE(c.features.size() == 4);
        CHECK(c.features[0].element == -1);
        CHECK(c.features[1].element == 0);
        CHECK(c.features[2].element == 1);
        CHECK(c.features[3].element == 2);
        CHECK(b.theta_index[static_cast<std::size_t>(k)] == 4 * k);
        for (int p = 0; p < 3; ++p) CHECK(W.theta_index[static_cast<std::size_t>(3 * k + p)] == 4 * k + 1 + p);
    }
    CHECK(g.theta_name(4 * 1 + 3) == "W[2,3]");
    CHECK(g.theta_csv_name(4 * 1 + 3) == "W.2.3");
    CHECK(g.theta_name(4 * 7) == "b[8]");
    CHECK(g.parents(3) == std::vector<int>{0, 1, 2});
    CHECK(g.children(0) == std::vector<int>{3, 4, 5, 6, 7, 8, 9, 10});
    CHECK(g.children(3).empty());
    CHECK(g.has_hidden());
}

TEST_CASE("a covariate regression has real-valued parents outside the topological order") {
    const ir::Graph g = compile_ok(
        "covariate dist100;\n"
        "covariate arsenic;\n"
        "node switched ~ logistic(a + b * [dist100, arsenic]);\n"
        "a ~ normal(0, 10);\n"
        "b ~ normal(0, 10);\n");
    CHECK(g.variables[0].kind == ir::VariableKind::covariate);
    CHECK(!g.elements[0].binary);
    CHECK(!g.elements[1].binary);
    CHECK(g.topological_order == std::vector<int>{2});
    const ir::Cpd& s = cpd(g, "switched");
    REQUIRE(s.features.size() == 3);
    CHECK(s.features[0].element == -1);
    CHECK(s.features[1].element == 0);
    CHECK(s.features[2].element == 1);
    REQUIRE(g.blocks.size() == 1);
    CHECK(g.blocks[0].size == 3);
    CHECK(param(g, "a").shape.empty());
    CHECK(param(g, "a").theta_index == std::vector<int>{0});
    CHECK(param(g, "b").theta_index == std::vector<int>{1, 2});
    CHECK(g.theta_name(0) == "a");
    CHECK(g.theta_csv_name(0) == "a");
    CHECK(g.parents(2) == std::vector<int>{0, 1});
    CHECK(g.children(0) == std::vector<int>{2});
    CHECK(!g.has_hidden());
}

TEST_CASE("an mvnormal prior gives a full covariance within its parameter, block-diagonal against others") {
    const ir::Graph g = compile_ok(
        "node x[2] ~ bernoulli(0.5);\n"
        "node y ~ logistic(c + w * x);\n"
        "c ~ normal(1, 2);\n"
        "w ~ mvnormal([0, 1], [[1, 0.5], [0.5, 2]]);\n");
    REQUIRE(g.blocks.size() == 1);
    const ir::Block& b = g.blocks[0];
    CHECK(b.size == 3);
    CHECK(b.prior_mean == std::vector<double>{1, 0, 1});
    CHECK(b.prior_cov == std::vector<double>{4, 0, 0, 0, 1, 0.5, 0, 0.5, 2});
    CHECK(!b.prior_diagonal);
    CHECK(param(g, "w").prior == "mvnormal([0, 1], [[1, 0.5], [0.5, 2]])");
    CHECK(param(g, "c").prior == "normal(1, 2)");
}

TEST_CASE("an mvnormal prior on a scalar parameter and normal priors given as vectors") {
    const ir::Graph g = compile_ok(
        "node x ~ bernoulli(0.5);\n"
        "node z ~ bernoulli(0.5);\n"
        "node y ~ logistic(c * x + w * [x2, z]);\n"
        "node x2 ~ bernoulli(0.5);\n"
        "c ~ mvnormal([0.5], [[4]]);\n"
        "w ~ normal([1, 2], [1, 3]);\n");
    const ir::Block& b = g.blocks.at(0);
    CHECK(b.prior_mean == std::vector<double>{0.5, 1, 2});
    CHECK(b.prior_cov == std::vector<double>{4, 0, 0, 0, 1, 0, 0, 0, 9});
    CHECK(b.prior_diagonal);
    CHECK(param(g, "w").prior == "normal([1, 2], [1, 3])");
}

TEST_CASE("a matrix parameter accepts a matrix literal of its shape for its prior") {
    const ir::Graph g = compile_ok(
        "node h[2] hidden ~ bernoulli(0.5);\n"
        "node v[2] ~ logistic(W * h);\n"
        "W ~ normal([[1, 2], [3, 4]], 1);\n");
    REQUIRE(g.blocks.size() == 2);
    CHECK(g.blocks[0].prior_mean == std::vector<double>{1, 2});
    CHECK(g.blocks[1].prior_mean == std::vector<double>{3, 4});
    CHECK(param(g, "W").prior == "normal([[1, 2], [3, 4]], 1)");
}

TEST_CASE("constants add to the offset, CONST * PARENTS gives fixed terms, subtracted terms flip signs") {
    const ir::Graph g = compile_ok(
        "node a ~ bernoulli(0.3);\n"
        "node b ~ bernoulli(0.5);\n"
        "node c ~ bernoulli(0.5);\n"
        "node y ~ logistic(1.5 - 0.5 - 0.25 * a + log(4) / 2 * [b] - w * [b2, c] - d + e);\n"
        "node b2 ~ bernoulli(0.5);\n"
        "w ~ normal(0, 1);\n"
        "d ~ normal(0, 1);\n"
        "e ~ normal(0, 1);\n");
    const ir::Cpd& y = cpd(g, "y");
    CHECK(y.offset == doctest::Approx(1.0).epsilon(1e-14));
    REQUIRE(y.fixed.size() == 2);
    CHECK(y.fixed[0].element == element_index(g, "a"));
    CHECK(y.fixed[0].coef == -0.25);
    CHECK(y.fixed[1].element == element_index(g, "b"));
    CHECK(y.fixed[1].coef == doctest::Approx(std::log(2.0)).epsilon(1e-14));
    REQUIRE(y.features.size() == 4);
    CHECK(y.features[0].element == element_index(g, "b2"));
    CHECK(y.features[0].sign == -1.0);
    CHECK(y.features[1].element == element_index(g, "c"));
    CHECK(y.features[1].sign == -1.0);
    CHECK(y.features[2].element == -1);
    CHECK(y.features[2].sign == -1.0);
    CHECK(y.features[3].element == -1);
    CHECK(y.features[3].sign == 1.0);
    // Fixed and learned parents alike, in order of appearance.
    const int yi = element_index(g, "y");
    CHECK(g.parents(yi) == std::vector<int>{element_index(g, "a"), element_index(g, "b"), element_index(g, "b2"),
                                            element_index(g, "c")});
    CHECK(g.children(element_index(g, "a")) == std::vector<int>{yi});
    CHECK(g.parameters.size() == 3);
    CHECK(g.parameters[0].name == "w");
    CHECK(g.parameters[1].name == "d");
    CHECK(g.parameters[2].name == "e");
}

TEST_CASE("constant expressions follow the usual precedence and functions") {
    const ir::Graph g = compile_ok(
        "node a ~ bernoulli(inv_logit(2 + 3 * 4 - 8 / 2 - 9));\n"
        "node b ~ bernoulli(inv_logit(-(2 - 5) * 2));\n"
        "node c ~ bernoulli(exp(log(0.25)));\n"
        "node d ~ bernoulli(inv_logit(logit(0.125)));\n"
        "node e ~ bernoulli(sqrt(0.0625) + 1e-1);\n");
    CHECK(cpd(g, "a").offset == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(cpd(g, "b").offset == doctest::Approx(6.0).epsilon(1e-12));
    CHECK(cpd(g, "c").offset == doctest::Approx(logit(0.25)).epsilon(1e-12));
    CHECK(cpd(g, "d").offset == doctest::Approx(logit(0.125)).epsilon(1e-12));
    CHECK(cpd(g, "e").offset == doctest::Approx(logit(0.35)).epsilon(1e-12));
}

TEST_CASE("declaration order is free: a child may come before its parents and priors before use") {
    const ir::Graph g = compile_ok(
        "w ~ normal(0, 1);\n"
        "node y ~ logistic(w * [h, o]);\n"
        "node h hidden ~ bernoulli(0.6);\n"
        "node o ~ bernoulli(0.5);\n");
    CHECK(g.elements[0].name == "y");
    CHECK(g.topological_order == std::vector<int>{1, 2, 0});
    REQUIRE(g.blocks.size() == 1);
    CHECK(g.blocks[0].element == 0);
    CHECK(cpd(g, "y").features[0].element == 1);
}

TEST_CASE("topological order breaks ties by declaration order and orders the blocks") {
    const ir::Graph g = compile_ok(
        "node c ~ logistic(u * b);\n"
        "node a ~ bernoulli(0.5);\n"
        "node b ~ logistic(v * a);\n"
        "node d ~ bernoulli(0.5);\n"
        "u ~ normal(0, 1);\n"
        "v ~ normal(0, 2);\n");
    CHECK(g.topological_order == std::vector<int>{1, 2, 0, 3});
    REQUIRE(g.blocks.size() == 2);
    CHECK(g.blocks[0].element == 2);
    CHECK(g.blocks[1].element == 0);
    CHECK(g.parameters[0].name == "u");
    CHECK(g.parameters[0].theta_index == std::vector<int>{1});
    CHECK(g.parameters[1].theta_index == std::vector<int>{0});
    CHECK(g.theta_name(0) == "v");
    CHECK(g.blocks[0].prior_cov == std::vector<double>{4});
}

TEST_CASE("array nodes apply every term element-wise; an indexed parent is one element") {
    const ir::Graph g = compile_ok(
        "node h ~ bernoulli(0.5);\n"
        "node v[3] ~ logistic(b + w * h);\n"
        "node z ~ logistic(u * [v[2], h]);\n"
        "node s[2] ~ logistic(1 + 0.5 * v[3]);\n"
        "b, w ~ normal(0, 1);\n"
        "u ~ normal(0, 1);\n");
    CHECK(param(g, "b").shape == std::vector<int>{3});
    CHECK(param(g, "w").shape == std::vector<int>{3});
    CHECK(param(g, "u").shape == std::vector<int>{2});
    CHECK(param(g, "b").theta_index == std::vector<int>{0, 2, 4});
    CHECK(param(g, "w").theta_index == std::vector<int>{1, 3, 5});
    CHECK(param(g, "u").theta_index == std::vector<int>{6, 7});
    CHECK(cpd(g, "z").features[0].element == element_index(g, "v[2]"));
    for (const char* s : {"s[1]", "s[2]"}) {
        const ir::Cpd& c = cpd(g, s);
        CHECK(c.logistic);
        CHECK(c.offset == 1.0);
        REQUIRE(c.fixed.size() == 1);
        CHECK(c.fixed[0].element == element_index(g, "v[3]"));
        CHECK(c.fixed[0].coef == 0.5);
        CHECK(c.block == -1);
    }
    CHECK(g.dim == 8);
}

TEST_CASE("weights of a scalar node on one parent are a scalar, of an array node on several a matrix") {
    const ir::Graph g = compile_ok(
        "node x[1] ~ bernoulli(0.5);\n"
        "node y ~ logistic(0.5 + w * x);\n"
        "node q[2] ~ bernoulli(0.5);\n"
        "node r[3] ~ logistic(M * [q, y]);\n"
        "w ~ normal(0, 10);\n"
        "M ~ normal(0, 1);\n");
    CHECK(param(g, "w").shape.empty());
    CHECK(param(g, "M").shape == std::vector<int>{3, 3});
    CHECK(g.theta_name(param(g, "M").theta_index[5]) == "M[2,3]");
}

TEST_CASE("a hidden node without children is a warning, not an error") {
    lang::Source source{"t.vbn", "node h hidden ~ bernoulli(0.5);\nnode y ~ bernoulli(0.5);\n"};
    lang::Diagnostics diag{source};
    const auto g = lang::compile(source, diag);
    REQUIRE(g.has_value());
    REQUIRE(diag.items().size() == 1);
    CHECK(diag.items()[0].severity == lang::Severity::warning);
    CHECK(diag.items()[0].location.line == 1);
}

TEST_CASE("every error of a model is reported in one run, in the order of the text") {
    lang::Source source{"t.vbn",
                        "node y ~ logistic(w * q);\n"
                        "node z ~ bernoulli(1.5);\n"
                        "node y ~ bernoulli(0.5);\n"
                        "v ~ normal(0, -1);\n"};
    const auto diag = compile_bad(source);
    INFO(diag.format());
    // unknown parent, probability, duplicate, sd, unused prior, missing prior of w
    REQUIRE(diag.error_count() == 6);
    int last = 0;
    for (const auto& d : diag.items()) {
        CHECK(d.location.line >= last);
        last = d.location.line;
    }
}

TEST_CASE("lower() reports nothing and builds the graph from a parsed program") {
    lang::Source source{"t.vbn", "node o ~ bernoulli(0.25);\n"};
    lang::Diagnostics diag{source};
    ast::program program;
    lang::SourceMap map{source};
    REQUIRE(lang::parse(source, program, map, diag));
    const auto g = lang::lower(program, map, diag);
    REQUIRE(g.has_value());
    CHECK(diag.items().empty());
    CHECK(g->cpds[0].offset == doctest::Approx(logit(0.25)));
    CHECK(g->blocks.empty());
    CHECK(g->dim == 0);
}

TEST_CASE("smaller limits refuse a model the language's limits accept, with the same message") {
    // 300 x 300 fixed weights and 300 + 300 elements: within the defaults, over these.
    const std::string text = "node g[300] ~ bernoulli(0.5);\nnode h[300] ~ logistic(b + 0.3 * g);\nb ~ normal(0, 2);\n";
    lang::Source source{"t.vbn", text};
    lang::Diagnostics fine{source};
    CHECK(lang::compile(source, fine).has_value());
    lang::Limits fixed;
    fixed.fixed_terms = 89'999;
    lang::Diagnostics refused{source};
    CHECK(!lang::compile(source, refused, fixed).has_value());
    CHECK(refused.format().find("it has 90000 fixed weights, and at most 89999 fit") != std::string::npos);
    lang::Limits elements;
    elements.elements = 599;
    lang::Diagnostics few{source};
    CHECK(!lang::compile(source, few, elements).has_value());
    CHECK(few.format().find("at most 599 node and covariate elements") != std::string::npos);
}

// Lowering indexes θ (ir::Graph::theta_owner) so that naming every entry is linear in θ; the
// names must be those the search of the parameters gives, which is what a graph without the
// index (or with one out of date) falls back to.
TEST_CASE("every θ entry's name from the index is the name the search of the parameters gives") {
    const ir::Graph g = compile_ok(
        "covariate x[2];\n"
        "param c;\n"
        "node z[2] hidden ~ logistic(a + u * x);\n"
        "node y[3] ~ logistic(c + W * z + b);\n"
        "a, u, c ~ normal(0, 2.5);\n"
        "W ~ normal(0, 1);\n"
        "b ~ normal(0, tau);\n"
        "tau ~ half_normal(1);\n");
    REQUIRE(g.theta_owner.size() == static_cast<std::size_t>(g.dim));
    ir::Graph searched = g;
    searched.theta_owner.clear();
    ir::Graph stale = g;
    std::reverse(stale.theta_owner.begin(), stale.theta_owner.end());
    bool tied = false;
    for (int k = 0; k < g.dim; ++k) {
        CAPTURE(k);
        CHECK(g.theta_name(k) == searched.theta_name(k));
        CHECK(g.theta_csv_name(k) == searched.theta_csv_name(k));
        CHECK(stale.theta_name(k) == searched.theta_name(k));
        tied = tied || g.theta_name(k) == "c";
    }
    CHECK(tied);
    CHECK(g.theta_name(g.dim - 1) == "tau");
    CHECK(g.theta_name(g.dim) == searched.theta_name(g.dim));  // past θ: "theta[dim + 1]"
}
