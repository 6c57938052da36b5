// libFuzzer target: the CSV reader and dataset builder against a fixed model with an
// array node, a scalar node, a hidden node and a covariate. Any CSV text must load or be
// refused with a vbn::Error naming the place; a loaded dataset must keep its invariants
// and give a finite log density at θ = 0.
#include "fuzz/fuzz_common.hpp"
#include "runtime/model.hpp"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

namespace {
const char* const model_text = R"(
node h hidden ~ bernoulli(0.3);
covariate x;
node a ~ bernoulli(0.5);
node v[3] ~ logistic(b + W * [h, a]);
node y ~ logistic(c0 + c1 * x + c2 * v[2]);
b ~ normal(0, 2);
W ~ normal(0, 1);
c0, c1, c2 ~ normal(0, 3);
)";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const vbn::ir::Graph graph = vbn::compile_model(model_text, "fixed.vbn");
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    try {
        vbn::LoadNotes notes;
        const vbn::Dataset d = vbn::load_csv(graph, in, "fuzz.csv", &notes);
        vbn::fuzz::check_dataset(d);
        vbn::fuzz::check_target(graph, d);
    } catch (const vbn::Error&) {
    }
    return 0;
}
