// libFuzzer target: a model and its data together. The input is the model text, a line
// holding only "%%", then the CSV. When both load, the dataset's invariants and a finite
// log density at θ = 0 are checked, so the fuzzer explores the data paths of every shape
// of model the language allows (arrays, covariates, hidden nodes, fixed offsets).
#include "fuzz/fuzz_common.hpp"
#include "runtime/data/model.hpp"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const std::size_t sep = input.find("\n%%\n");
    if (sep == std::string::npos) return 0;
    try {
        const vbn::ir::Graph graph = vbn::compile_model(input.substr(0, sep), "fuzz.vbn", nullptr,
                                                            vbn::fuzz::small_limits());
        if (graph.elements.size() > 64) return 0;  // keep one input cheap
        std::istringstream in(input.substr(sep + 4));
        const vbn::Dataset d = vbn::load_csv(graph, in, "fuzz.csv");
        vbn::fuzz::check_dataset(d);
        vbn::fuzz::check_target(graph, d);
    } catch (const vbn::Error&) {
    }
    return 0;
}
