// Signed permutations of coordinates: x' = g x with x'_k = ±x_p for the coordinates g moves or
// negates, every other coordinate unchanged. Sign flips of hidden nodes (negate a set) and
// exchanges of hidden nodes (swap two blocks) are such maps; so is every product of them. Each
// is linear with |det| = 1, so a deterministic proposal x → g x needs no Jacobian, and a set of
// them closed under inverses, one picked uniformly, is a symmetric proposal
// (inference/symmetry_jump.hpp).
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <vector>

namespace vbn::inference {

struct SignedPermutation {
    // x'_to = (negate ? −1 : 1) x_from, sorted by `to`; a coordinate listed nowhere is unchanged.
    struct Entry {
        int to = 0;
        int from = 0;
        bool negate = false;
        bool operator==(const Entry&) const = default;
        auto operator<=>(const Entry&) const = default;
    };
    std::vector<Entry> entries;

    bool operator==(const SignedPermutation&) const = default;
    auto operator<=>(const SignedPermutation&) const = default;

    // The map that negates `coordinates` (any order, repeats count once).
    static SignedPermutation negation(std::vector<int> coordinates);
    // The map with x'_k = x_{perm[k]} (perm a permutation of 0 … n−1).
    static SignedPermutation permutation(const std::vector<int>& perm);

    bool identity() const { return entries.empty(); }
    bool negation_only() const;  // every entry has to == from
    // out = g x (out and x distinct; out is resized to x's size).
    void apply(const Eigen::VectorXd& x, Eigen::VectorXd& out) const;
    // The coordinates g moves or negates, ascending.
    std::vector<int> support() const;
};

// g ∘ h: (g h) x = g (h x).
SignedPermutation compose(const SignedPermutation& g, const SignedPermutation& h);
SignedPermutation inverse(const SignedPermutation& g);

// The moves a symmetry jump proposes from `generators`, each with the generators it is the
// product of, so that a report can name it: word (a, b, …) is g_a g_b … (the last applied
// first), and an entry −(k + 1) stands for g_k's inverse:
// - with at most max_generators generators, every product of a non-empty subset in the order of
//   the subsets' bit masks (products that are the identity left out; for commuting involutions,
//   sign flips, that is the whole group), then the rest of the group they generate, breadth
//   first, while it has at most max_elements elements besides the identity;
// - otherwise (more generators, or a larger group), the generators and their inverses.
// `closed` says whether the set is the whole group (then it is closed under products).
struct MoveSet {
    std::vector<SignedPermutation> moves;
    std::vector<std::vector<int>> words;  // per move, the generators' indices
    bool closed = false;
};
MoveSet move_set(const std::vector<SignedPermutation>& generators, std::size_t max_generators = 8,
                 std::size_t max_elements = 255);

}  // namespace vbn::inference
