#include "runtime/target/family_memo.hpp"

#include <algorithm>

namespace vbn {

FamilyRowMemo::FamilyRowMemo(const ir::Graph& g, const std::vector<std::vector<int>>& parents) : nodes_(g.elements.size()) {
    for (std::size_t e = 0; e < g.elements.size(); ++e) {
        const std::vector<int>& ps = parents[e];
        const bool binary = std::all_of(ps.begin(), ps.end(), [&](int p) { return g.elements[static_cast<std::size_t>(p)].binary; });
        if (g.elements[e].binary && binary && ps.size() <= max_members) nodes_[e].members = &ps;
    }
}

int* FamilyRowMemo::entry(int e, const std::vector<double>& x) {
    Node& n = nodes_[static_cast<std::size_t>(e)];
    if (!n.members) return nullptr;
    if (n.rows.empty()) {
        const std::size_t size = std::size_t{2} << n.members->size();
        if (size > left_) {
            n.members = nullptr;
            return nullptr;
        }
        left_ -= size;
        n.rows.assign(size, -1);
    }
    std::size_t code = x[static_cast<std::size_t>(e)] > 0;
    for (int p : *n.members) code = code << 1 | static_cast<std::size_t>(x[static_cast<std::size_t>(p)] > 0);
    return &n.rows[code];
}

}  // namespace vbn
