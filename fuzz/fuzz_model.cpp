// libFuzzer target: the model front end (parse, lower, check) on arbitrary text.
//
// Any model text must either compile or be refused with diagnostics; a crash, a sanitizer
// report, a hang, a leak or an exception other than vbn::Error is a finding. Diagnostics
// are also formatted, since quoting the line under a caret is code that sees the raw text.
#include "fuzz/fuzz_common.hpp"
#include "lang/describe.hpp"
#include "runtime/error.hpp"
#include "runtime/data/model.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        std::string warnings;
        const vbn::ir::Graph graph = vbn::compile_model(text, "fuzz.vbn", &warnings, vbn::fuzz::small_limits());
        (void)vbn::lang::describe(graph);
        (void)vbn::lang::to_dot(graph);
    } catch (const vbn::Error&) {
        // Refused with a message: the expected outcome for most inputs.
    }
    return 0;
}
