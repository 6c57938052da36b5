#include "runtime/target/elimination_order.hpp"

#include "runtime/index.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vbn {

namespace {

// The graph being eliminated: sorted neighbour lists of the variables still in it.
struct Graph {
    std::vector<std::vector<int>> nb;

    bool linked(int a, int b) const { return std::binary_search(nb[sz(a)].begin(), nb[sz(a)].end(), b); }
    void link(int a, int b) {
        auto& n = nb[sz(a)];
        const auto it = std::lower_bound(n.begin(), n.end(), b);
        if (it == n.end() || *it != b) n.insert(it, b);
    }
    // Links that eliminating v would add between its neighbours.
    long fill(int v) const {
        const auto& n = nb[sz(v)];
        long missing = 0;
        for (std::size_t i = 0; i < n.size(); ++i)
            for (std::size_t j = i + 1; j < n.size(); ++j) missing += linked(n[i], n[j]) ? 0 : 1;
        return missing;
    }
    // Takes v out, linking its neighbours pairwise.
    void eliminate(int v) {
        const std::vector<int> n = std::move(nb[sz(v)]);
        nb[sz(v)].clear();
        for (int a : n) {
            auto& na = nb[sz(a)];
            na.erase(std::lower_bound(na.begin(), na.end(), v));
            for (int b : n)
                if (b != a) link(a, b);
        }
    }
};

}  // namespace

EliminationOrder min_fill_order(int m, const std::vector<std::vector<int>>& scopes, int limit) {
    Graph g;
    g.nb.resize(sz(m));
    for (const auto& s : scopes)
        for (int a : s)
            for (int b : s)
                if (a != b) g.link(a, b);
    EliminationOrder out;
    std::vector<char> gone(sz(m), 0);
    for (int step = 0; step < m; ++step) {
        int best = -1;
        long best_fill = 0;
        int smallest = std::numeric_limits<int>::max();  // the smallest clique left, for the refusal
        for (int v = 0; v < m; ++v) {
            if (gone[sz(v)]) continue;
            const int clique = static_cast<int>(g.nb[sz(v)].size()) + 1;
            smallest = std::min(smallest, clique);
            if (clique > limit) continue;  // never chosen: no need to count its fill
            const long f = g.fill(v);
            if (best < 0 || f < best_fill || (f == best_fill && clique < static_cast<int>(g.nb[sz(best)].size()) + 1)) {
                best = v;
                best_fill = f;
            }
        }
        if (best < 0) {
            out.width = std::max(out.width, smallest);
            return out;
        }
        const int clique = static_cast<int>(g.nb[sz(best)].size()) + 1;
        out.width = std::max(out.width, clique);
        out.cost += std::ldexp(1.0, clique);
        out.order.push_back(best);
        gone[sz(best)] = 1;
        g.eliminate(best);
    }
    return out;
}

}  // namespace vbn
