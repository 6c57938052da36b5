#include "runtime/target/describe_summation.hpp"

#include "runtime/index.hpp"
#include "runtime/target/families.hpp"

#include <fmt/format.h>

namespace vbn {

namespace {

std::string lines_of(const std::vector<long>& lines) {
    std::string out;
    for (std::size_t k = 0; k < lines.size(); ++k) out += (k ? ", " : "") + std::to_string(lines[k]);
    return fmt::format("{} {}", lines.size() == 1 ? "line" : "lines", out);
}

}  // namespace

std::string describe_summation(const ir::Graph& graph, const Dataset& data, int max_enumerated) {
    FamilyOptions o;
    o.max_enumerated = max_enumerated;
    o.refuse_too_wide = false;
    o.complete_rows = false;  // only the components are described
    const Families f = build_families(graph, data, o);
    const TooWide& t = f.too_wide;
    if (f.components.empty() && t.width == 0) return {};
    int eliminated = 0;
    for (const auto& c : f.components) eliminated += c.eliminated() ? 1 : 0;
    std::string out = "\nsummed out row by row (the exact target):\n";
    if (!f.components.empty()) {
        out += fmt::format("  largest group  {} (line {})\n",
                           f.largest_component == 1 ? "1 unobserved value"
                                                    : fmt::format("{} unobserved values linked", f.largest_component),
                           f.largest_line);
        out += fmt::format("  widest         {} summed together (line {}); the limit is {}\n", f.widest_component,
                           f.widest_line, max_enumerated);
        out += fmt::format("  groups         {} distinct: {} enumerated, {} by variable elimination\n",
                           f.components.size(), f.components.size() - sz(eliminated), eliminated);
    }
    if (t.width > 0)
        out += fmt::format(
            "  too wide       {} row{} ({}): {} unobserved values linked, {} summed together, over the limit {}; "
            "`vbn fit --method gibbs` samples them instead\n",
            t.rows, t.rows == 1 ? "" : "s", lines_of(t.lines), t.size, t.width, max_enumerated);
    return out;
}

}  // namespace vbn
