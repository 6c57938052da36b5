#include "runtime/dataset.hpp"
#include "runtime/fit.hpp"
#include "runtime/model.hpp"

#include <doctest/doctest.h>

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
    // Fully observed, a block of 50 weights: NUTS.
    CHECK(chosen("unimodal_d50") == "nuts");
    // A hidden node in a 2-weight model: varmix with its search for the posterior's modes
    // (NUTS misses the sign-flipped mode; docs/experiments-multimodal.md, SBC).
    CHECK(chosen("multimodal") == "varmix");
    // Hidden units in a 32-weight network: the variational mixture.
    CHECK(chosen("sbn_3x8") == "varmix");
}
