#include "runtime/data/describe_data.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vbn {

std::string describe_data(const ir::Graph& g, const Dataset& d) {
    std::string out = fmt::format("data {}: {} row{}, {} distinct pattern{}\n", d.name, d.rows, d.rows == 1 ? "" : "s",
                                  d.patterns, d.patterns == 1 ? "" : "s");
    std::size_t width = 4;
    for (const auto& el : g.elements) width = std::max(width, el.name.size());
    out += "\nobserved nodes:\n";
    for (std::size_t e = 0; e < g.elements.size(); ++e) {
        const ir::Element& el = g.elements[e];
        if (!el.binary || el.hidden) continue;
        const int c = d.column_of[e];
        if (c < 0) continue;
        long plus = 0, minus = 0;
        for (int p = 0; p < d.patterns; ++p) {
            const auto v = d.value(p, c);
            const auto n = static_cast<long>(d.count[static_cast<std::size_t>(p)]);
            if (v > 0) plus += n;
            else if (v < 0) minus += n;
        }
        const long missing = d.missing[static_cast<std::size_t>(c)];
        out += fmt::format("  {:<{}}  +1: {:<8} -1: {:<8} missing: {}{}\n", el.name, width, plus, minus, missing,
                           missing == d.rows && d.rows > 0 ? "  (never observed)" : "");
    }
    return out;
}

}  // namespace vbn
