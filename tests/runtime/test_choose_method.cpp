#include "runtime/data/dataset.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/data/model.hpp"

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
    // Hidden units in a 32-weight network: the variational mixture.
    CHECK(chosen("sbn_3x8") == "varmix");
}
