#include "lang/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace vbn::lang {

namespace {
// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours each cost one, the usual typos.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::size_t> d((n + 1) * (m + 1));
    auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
    for (std::size_t i = 0; i <= n; ++i) at(i, 0) = i;
    for (std::size_t j = 0; j <= m; ++j) at(0, j) = j;
    for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
        }
    return at(n, m);
}
}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
    // A one-letter name is one edit away from every other one-letter name: only suggest
    // when most of the name survives.
    const std::size_t allowed = name.size() <= 3 ? 1 : name.size() <= 6 ? 2 : 3;
    auto lower = [](std::string t) {
        for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return t;
    };
    for (const auto& c : candidates)
        if (lower(c) == lower(name)) return c;
    std::string best;
    std::size_t best_distance = allowed + 1;
    for (const auto& c : candidates) {
        const std::size_t d = edit_distance(name, c);
        if (d < best_distance && d < name.size() && d < c.size()) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

}  // namespace vbn::lang
