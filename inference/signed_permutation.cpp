#include "inference/signed_permutation.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>

namespace vbn::inference {
namespace {

// The entry of g for coordinate k: where x'_k is read from and with which sign.
SignedPermutation::Entry lookup(const SignedPermutation& g, int k) {
    const auto it = std::lower_bound(g.entries.begin(), g.entries.end(), k,
                                     [](const SignedPermutation::Entry& e, int v) { return e.to < v; });
    if (it != g.entries.end() && it->to == k) return *it;
    return {k, k, false};
}

// Entries that change nothing dropped, so that equal maps compare equal.
SignedPermutation canonical(std::vector<SignedPermutation::Entry> entries) {
    std::erase_if(entries, [](const SignedPermutation::Entry& e) { return e.to == e.from && !e.negate; });
    std::sort(entries.begin(), entries.end());
    return SignedPermutation{std::move(entries)};
}

}  // namespace

SignedPermutation SignedPermutation::negation(std::vector<int> coordinates) {
    std::sort(coordinates.begin(), coordinates.end());
    coordinates.erase(std::unique(coordinates.begin(), coordinates.end()), coordinates.end());
    std::vector<Entry> e;
    for (int k : coordinates) e.push_back({k, k, true});
    return SignedPermutation{std::move(e)};
}

SignedPermutation SignedPermutation::permutation(const std::vector<int>& perm) {
    std::vector<bool> seen(perm.size(), false);
    std::vector<Entry> e;
    for (std::size_t k = 0; k < perm.size(); ++k) {
        const int p = perm[k];
        if (p < 0 || static_cast<std::size_t>(p) >= perm.size() || seen[static_cast<std::size_t>(p)])
            throw std::invalid_argument("signed permutation: not a permutation");
        seen[static_cast<std::size_t>(p)] = true;
        e.push_back({static_cast<int>(k), p, false});
    }
    return canonical(std::move(e));
}

bool SignedPermutation::negation_only() const {
    return std::all_of(entries.begin(), entries.end(), [](const Entry& e) { return e.to == e.from; });
}

void SignedPermutation::apply(const Eigen::VectorXd& x, Eigen::VectorXd& out) const {
    out = x;  // allocates only when out's size differs
    for (const Entry& e : entries) out[e.to] = e.negate ? -x[e.from] : x[e.from];
}

std::vector<int> SignedPermutation::support() const {
    std::vector<int> out;
    for (const Entry& e : entries) out.push_back(e.to);
    return out;  // entries are sorted by `to`
}

SignedPermutation compose(const SignedPermutation& g, const SignedPermutation& h) {
    // (g h x)_k = s_g(k) (h x)_{p_g(k)} = s_g(k) s_h(p_g(k)) x_{p_h(p_g(k))}, for k that g or h moves.
    std::vector<int> touched = g.support();
    for (int k : h.support()) touched.push_back(k);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    std::vector<SignedPermutation::Entry> out;
    for (int k : touched) {
        const auto a = lookup(g, k);
        const auto b = lookup(h, a.from);
        out.push_back({k, b.from, a.negate != b.negate});
    }
    return canonical(std::move(out));
}

SignedPermutation inverse(const SignedPermutation& g) {
    // x'_to = s x_from  ⇔  x_from = s x'_to.
    std::vector<SignedPermutation::Entry> out;
    for (const auto& e : g.entries) out.push_back({e.from, e.to, e.negate});
    return canonical(std::move(out));
}

MoveSet move_set(const std::vector<SignedPermutation>& generators, std::size_t max_generators, std::size_t max_elements) {
    MoveSet out;
    std::map<SignedPermutation, std::size_t> index;
    const auto add = [&](SignedPermutation g, std::vector<int> word) {
        if (g.identity() || index.count(g)) return;
        index.emplace(g, out.moves.size());
        out.moves.push_back(std::move(g));
        out.words.push_back(std::move(word));
    };
    const std::size_t n = generators.size();
    if (n <= max_generators) {
        for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
            SignedPermutation g;
            std::vector<int> word;
            for (std::size_t k = 0; k < n; ++k)
                if (mask & (std::size_t{1} << k)) {
                    g = compose(g, generators[k]);
                    word.push_back(static_cast<int>(k));
                }
            add(std::move(g), std::move(word));
        }
        // Breadth first: each element found times each generator, until nothing is new.
        bool too_many = false;
        for (std::size_t i = 0; i < out.moves.size() && !too_many; ++i)
            for (std::size_t k = 0; k < n; ++k) {
                std::vector<int> word = out.words[i];
                word.push_back(static_cast<int>(k));
                add(compose(out.moves[i], generators[k]), std::move(word));
                if (out.moves.size() > max_elements) {
                    too_many = true;
                    break;
                }
            }
        if (!too_many) {
            out.closed = true;
            return out;
        }
        out = MoveSet{};
        index.clear();
    }
    for (std::size_t k = 0; k < n; ++k) add(generators[k], {static_cast<int>(k)});
    for (std::size_t k = 0; k < n; ++k) add(inverse(generators[k]), {-static_cast<int>(k) - 1});
    return out;
}

}  // namespace vbn::inference
