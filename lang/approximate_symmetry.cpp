// Flips of hidden components that only a fixed offset or the prior breaks
// (lang/approximate_symmetry.hpp).
#include "lang/approximate_symmetry.hpp"

#include "lang/symmetry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace vbn::lang {
namespace {

std::size_t at(int i) { return static_cast<std::size_t>(i); }

bool hidden_binary(const ir::Graph& g, int e) {
    const ir::Element& el = g.elements[at(e)];
    return el.binary && el.hidden;
}

int find_root(std::vector<int>& parent, int i) {
    while (parent[at(i)] != i) {
        parent[at(i)] = parent[at(parent[at(i)])];
        i = parent[at(i)];
    }
    return i;
}

// Hidden elements joined by fixed-weight terms share a root; a component with a fixed term
// to an observed node or a covariate is pinned (it cannot flip).
struct Components {
    std::vector<int> root;
    std::vector<char> pinned;  // by root
};

Components fixed_term_components(const ir::Graph& g) {
    const int n = static_cast<int>(g.elements.size());
    Components c;
    c.root.resize(at(n));
    std::iota(c.root.begin(), c.root.end(), 0);
    std::vector<std::pair<int, int>> pins;  // (hidden element, other end not hidden)
    for (int i = 0; i < n && at(i) < g.cpds.size(); ++i) {
        for (const ir::FixedTerm& t : g.cpds[at(i)].fixed) {
            if (!t.also.empty()) {
                // A fixed weight on a product of parents: kept simple, it pins every hidden
                // element it involves (some flips of several of them would keep it).
                if (hidden_binary(g, i)) pins.emplace_back(i, 0);
                if (hidden_binary(g, t.element)) pins.emplace_back(t.element, 0);
                for (int e : t.also)
                    if (hidden_binary(g, e)) pins.emplace_back(e, 0);
                continue;
            }
            const bool hi = hidden_binary(g, i), he = hidden_binary(g, t.element);
            if (hi && he)
                c.root[at(find_root(c.root, i))] = find_root(c.root, t.element);
            else if (hi || he)
                pins.emplace_back(hi ? i : t.element, 0);
        }
    }
    for (int i = 0; i < n; ++i) c.root[at(i)] = find_root(c.root, i);
    c.pinned.assign(at(n), 0);
    for (const auto& p : pins) c.pinned[at(c.root[at(p.first)])] = 1;
    return c;
}

double cov(const ir::Block& b, int k, int l) { return b.prior_cov[at(k * b.size + l)]; }

// N(μ, Σ) of block b is unchanged by negating the entries flagged in `neg` (local indices);
// so is a Student-t entry's prior (ir::Block::prior_df), symmetric about a location of 0.
bool prior_unchanged(const ir::Block& b, const std::vector<char>& neg) {
    for (int k = 0; k < b.size; ++k) {
        if (!neg[at(k)]) continue;
        if (b.prior_mean[at(k)] != 0) return false;
        for (int l = 0; l < b.size; ++l)
            if (!neg[at(l)] && cov(b, k, l) != 0) return false;
    }
    return true;
}

// The entries of θ the flip of `in_s` negates; `exact` says whether prior × likelihood is
// unchanged (every offset in S is 0 and every touched block's prior is symmetric).
// `tangled` is set when a weight that a declared parameter shares would have to change sign
// for one term and not another: no change of θ then follows the flip.
std::vector<int> negated_entries(const ir::Graph& g, const std::vector<char>& in_s, bool& exact, bool& tangled) {
    std::vector<int> out;
    exact = true;
    tangled = false;
    for (const ir::Block& b : g.blocks) {
        std::vector<char> neg(at(b.size), 0), seen(at(b.size), 0);
        for (int e : b.elements) {
            const bool own = in_s[at(e)] != 0;
            for (const ir::Feature& f : g.cpds[at(e)].features) {
                // A product of parents flips when an odd number of its factors do.
                bool parent = f.element >= 0 && in_s[at(f.element)] != 0;
                for (int a : f.also) parent = parent != (in_s[at(a)] != 0);
                const char flips = own != parent;
                if (seen[at(f.weight)] && neg[at(f.weight)] != flips) tangled = true;
                seen[at(f.weight)] = 1;
                neg[at(f.weight)] = flips;
            }
        }
        for (int k = 0; k < b.size; ++k)
            if (neg[at(k)]) out.push_back(b.offset + k);
        if (!prior_unchanged(b, neg)) exact = false;
    }
    for (std::size_t e = 0; e < in_s.size() && e < g.cpds.size(); ++e)
        if (in_s[e] && g.cpds[e].offset != 0) exact = false;
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<ApproximateFlip> find_approximate_flips(const ir::Graph& g) {
    const int n = static_cast<int>(g.elements.size());
    const Components c = fixed_term_components(g);
    std::vector<ApproximateFlip> out;
    for (int r = 0; r < n; ++r) {
        if (!hidden_binary(g, r) || c.root[at(r)] != r || c.pinned[at(r)]) continue;
        ApproximateFlip f;
        std::vector<char> in_s(at(n), 0);
        for (int e = 0; e < n; ++e)
            if (hidden_binary(g, e) && c.root[at(e)] == r) {
                in_s[at(e)] = 1;
                f.elements.push_back(e);
            }
        bool exact = false, tangled = false;
        f.negated = negated_entries(g, in_s, exact, tangled);
        if (exact || tangled || f.negated.empty()) continue;
        f.name = describe_flip(g, f);
        out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](const ApproximateFlip& a, const ApproximateFlip& b) { return a.elements < b.elements; });
    return out;
}

std::vector<ApproximateSwap> find_approximate_swaps(const ir::Graph& g) {
    const int n = static_cast<int>(g.elements.size());
    // Nodes an exact symmetry moves are left out where its labelings are too many for the
    // jumps and the report to take them along (runtime/sampling/symmetry_moves.hpp).
    const Symmetries exact = find_symmetries(g);
    std::vector<bool> labelled(at(n), false);
    if (!exact.labelings || *exact.labelings > max_labelings_with_exchanges) {
        for (int e : exact.flips) labelled[at(e)] = true;
        for (const auto& cls : exact.exchangeable)
            for (int e : cls) labelled[at(e)] = true;
    }
    std::vector<int> hidden;
    for (int e = 0; e < n; ++e)
        if (hidden_binary(g, e) && !labelled[at(e)]) hidden.push_back(e);
    const auto moves_theta = [](const std::vector<int>& perm) {
        for (std::size_t k = 0; k < perm.size(); ++k)
            if (perm[k] != static_cast<int>(k)) return true;
        return false;
    };
    // Having the same form is an equivalence (each condition is an equality), as for the exact
    // classes of lang/symmetry.cpp: comparing with a class's first member suffices.
    std::vector<ApproximateSwap> out;
    std::vector<bool> placed(at(n), false);
    for (std::size_t a = 0; a < hidden.size(); ++a) {
        if (placed[at(hidden[a])]) continue;
        std::vector<int> cls{hidden[a]};
        for (std::size_t b = a + 1; b < hidden.size(); ++b)
            if (!placed[at(hidden[b])] && moves_theta(structural_swap_permutation(g, hidden[a], hidden[b]))) {
                cls.push_back(hidden[b]);
                placed[at(hidden[b])] = true;
            }
        for (std::size_t k = 0; k + 1 < cls.size(); ++k) {
            const int i = cls[k], j = cls[k + 1];
            if (!swap_permutation(g, i, j).empty()) continue;  // exact: a labeling
            ApproximateSwap s{i, j, structural_swap_permutation(g, i, j), {}};
            s.name = g.elements[at(i)].name + " <-> " + g.elements[at(j)].name;
            out.push_back(std::move(s));
        }
    }
    return out;
}

std::string describe_flip(const ir::Graph& g, const ApproximateFlip& flip) {
    std::string out;
    const std::size_t n = flip.elements.size();
    for (std::size_t k = 0; k < n; ++k) {
        if (k == 3 && n > 4) return out + fmt::format(" and {} more", n - k);
        out += (k ? ", " : "") + g.elements[at(flip.elements[k])].name;
    }
    return out;
}

}  // namespace vbn::lang
