// libFuzzer target: the CSV reader and dataset builder against a fixed model with an
// array node, a scalar node, a hidden node and a covariate. Any CSV text must load or be
// refused with a vbn::Error naming the place; a loaded dataset must keep its invariants
// and give a finite log density at θ = 0. The reader must also see the same records, lines
// and error when the text is streamed in small chunks as when it is held in memory.
#include "fuzz/fuzz_common.hpp"
#include "runtime/data/csv.hpp"
#include "runtime/data/model.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

namespace {
// Every record with its line, or the error: from memory (chunk 0) or streamed.
std::string transcript(const std::string& text, std::size_t chunk) {
    std::string out, copy = text;
    std::istringstream in(text);
    try {
        std::unique_ptr<vbn::CsvReader> r = chunk == 0 ? std::make_unique<vbn::CsvReader>(copy, "f.csv")
                                                       : std::make_unique<vbn::CsvReader>(in, "f.csv", chunk);
        while (r->next()) {
            out += std::to_string(r->line()) + ":";
            for (std::string_view f : r->fields()) out += std::to_string(f.size()) + "[" + std::string(f) + "]";
            out += "\n";
        }
    } catch (const vbn::Error& e) {
        out += std::string("error ") + e.what();
    }
    return out;
}

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
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (transcript(text, 0) != transcript(text, 1 + size % 13)) vbn::fuzz::finding("streamed records differ from in-memory ones");
    std::istringstream in(text);
    try {
        vbn::LoadNotes notes;
        const vbn::Dataset d = vbn::load_csv(graph, in, "fuzz.csv", &notes);
        vbn::fuzz::check_dataset(d);
        vbn::fuzz::check_target(graph, d);
    } catch (const vbn::Error&) {
    }
    return 0;
}
