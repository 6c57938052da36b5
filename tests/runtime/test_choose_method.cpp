#include "runtime/data/dataset.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/data/model.hpp"
#include "tests/runtime/fit_options.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace vbn;

namespace {
std::string chosen(const std::string& example) {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
    const ir::Graph g = load_model(dir + example + ".vbn");
    const Dataset data = load_csv(g, dir + example + ".csv");
    std::string why;
    const std::string m = choose_method(g, data, &why);
    CHECK_FALSE(why.empty());
    return m;
}
}  // namespace

TEST_CASE("auto: the method by the model's shape (docs/methods.md, Choosing a method)") {
    // Fully observed, blocks of 1 to 20 weights: block independence MH.
    CHECK(chosen("unimodal_d1") == "varblock");
    CHECK(chosen("unimodal_d10") == "varblock");
    CHECK(chosen("unimodal_d20") == "varblock");
    // Fully observed, a block of 50 weights: still block independence MH, its proposal skewed
    // by the triangular map (at most 64 weights).
    CHECK(chosen("unimodal_d50") == "varblock");
    // A block of 65 weights, more than the map takes: NUTS.
    {
        const ir::Graph g = compile_model("node x[65] ~ bernoulli(0.5); node y ~ logistic(0.5 + w * x); w ~ normal(0, 10);",
                                          "d65.vbn");
        std::string csv;
        for (int j = 1; j <= 65; ++j) csv += "x[" + std::to_string(j) + "],";
        csv += "y\n";
        for (int r = 0; r < 20; ++r) {
            for (int j = 1; j <= 65; ++j) csv += (r + j) % 3 ? "1," : "-1,";
            csv += r % 2 ? "1\n" : "-1\n";
        }
        std::istringstream in(csv);
        const Dataset data = load_csv(g, in, "d65.csv");
        std::string why;
        CHECK(choose_method(g, data, &why) == "nuts");
        CHECK(why.find("65 weights") != std::string::npos);
    }
    // A hidden node in a 2-weight model: varmix with its search for the posterior's modes
    // (NUTS misses the sign-flipped mode; docs/experiments-multimodal.md, SBC).
    CHECK(chosen("multimodal") == "varmix");
    // Hidden units in a 32-weight network: choose_method's first choice is the variational
    // mixture, which fit() then replaces by NUTS, the summed-out values coupling the blocks
    // (the next case).
    CHECK(chosen("sbn_3x8") == "varmix");
}

// Above 10 weights, where summed-out values couple the blocks so that no exact block proposal
// exists, varmix would move one block at a time from the variational fit: `auto` takes NUTS
// without running the variational proposal's pilot. On tests/corpus/naive_bayes at seed 2 that
// pilot's k-hat was 0.20, and auto used to keep varmix: min ESS 471 in 2.1 s against NUTS's
// 2,851 in 0.7 s (and at seed 4 on tests/corpus/responder_trial, R-hat 1.018).
TEST_CASE("auto with coupled blocks above 10 weights: NUTS, not block moves from the variational fit") {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/tests/corpus/naive_bayes/";
    const ir::Graph g = load_model(dir + "model.vbn");
    REQUIRE(g.dim == 21);
    const Dataset data = load_csv(g, dir + "data.csv");
    const FitResult r = fit(g, data, test::short_run("auto", 2, 100, 100, 2));
    CHECK(r.method == "nuts");
    REQUIRE_FALSE(r.notes.empty());
    CHECK(r.notes[0].rfind("method auto chose nuts: hidden or missing values and more than 10 weights", 0) == 0);
    for (const auto& n : r.notes) CHECK(n.find("pilot k-hat") == std::string::npos);

    // Missing values of nodes without children drop out of the likelihood and leave every
    // block complete: varmix keeps its exact proposal per block (14 weights here).
    const ir::Graph leaf = compile_model("node x[6] ~ bernoulli(0.5); node y ~ logistic(a + u * x); "
                                         "node z ~ logistic(b + v * x); a, u, b, v ~ normal(0, 2.5);",
                                         "leaf.vbn");
    std::string csv = "x[1],x[2],x[3],x[4],x[5],x[6],y,z\n";
    for (int i = 0; i < 120; ++i) {
        for (int j = 1; j <= 6; ++j) csv += (i * j + i / 7) % 3 ? "1," : "-1,";
        csv += i % 4 == 0 ? "," : (i % 5 < 2 ? "1," : "-1,");
        csv += (i + i / 3) % 2 ? "1\n" : "-1\n";
    }
    std::istringstream in(csv);
    const Dataset leaf_data = load_csv(leaf, in, "leaf.csv");
    const FitResult kept = fit(leaf, leaf_data, test::short_run("auto", 2, 100, 100, 2));
    CHECK(kept.method == "varmix");
    bool exact = false;
    for (const auto& n : kept.notes) exact = exact || n.rfind("independence proposal: t(30) per block at the exact", 0) == 0;
    CHECK(exact);
}
