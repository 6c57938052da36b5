// Exact symmetries of a model's posterior, read off the IR graph and its priors: relabellings
// of the hidden nodes that, with the matching change of θ, leave prior × likelihood equal for
// every data set. Samplers started apart may settle in different labelings, so R-hat and the
// means of the parameters such a relabelling changes mix them (docs/methods.md, "Symmetric
// labelings").
#pragma once

#include "lang/ir.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vbn::lang {

struct Symmetries {
    // Hidden elements h whose flip h → −h is exact: θ's entries that multiply h in h's
    // children, and all of h's own block, change sign.
    std::vector<int> flips;
    // Classes (size ≥ 2) of exchangeable hidden elements, each in element order.
    std::vector<std::vector<int>> exchangeable;
    // 2^flips · Π m! over the classes, the size of the group they generate; empty when it is
    // more than 10^18.
    std::optional<std::uint64_t> labelings;

    bool any() const { return !flips.empty() || !exchangeable.empty(); }
};

Symmetries find_symmetries(const ir::Graph& graph);

// The entries of θ that the flip of element h negates (empty if it touches none).
std::vector<int> flip_coordinates(const ir::Graph& graph, int h);
// True when that flip leaves prior × likelihood unchanged.
bool flip_is_exact(const ir::Graph& graph, int h);
// The permutation of θ's entries that goes with swapping elements i and j (perm[k] is the
// entry θ'_k is read from), or empty when the swap is not exact.
std::vector<int> swap_permutation(const ir::Graph& graph, int i, int j);
// The same permutation where i and j may also differ in their offsets and in the priors of the
// weights the swap exchanges: the map of θ that goes with the swap, a symmetry of prior ×
// likelihood but for those (lang/approximate_symmetry.hpp); empty when the two differ in form.
std::vector<int> structural_swap_permutation(const ir::Graph& graph, int i, int j);

// "48 equivalent labelings: each of h[1], h[2] flips sign with its weights; h[1], h[2] are
// exchangeable"; empty when there is no symmetry.
std::string describe_symmetries(const ir::Graph& graph, const Symmetries& s);

}  // namespace vbn::lang
