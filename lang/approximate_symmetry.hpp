// Approximate symmetries of a model's posterior: sign flips of sets of hidden nodes that the
// likelihood would allow, with the matching change of θ, but that a fixed offset (a root's
// probability ≠ 1/2, a fixed bias) or a prior not symmetric in the weights partly breaks. The
// flipped copy of a mode is then a real minor mode, not an equivalent labeling: it must be
// sampled in proportion to its mass, not relabelled away (docs/methods.md, "Symmetry jumps").
//
// A flip of a set S of hidden elements maps h → −h for h in S, and θ to g(θ): an entry of
// θ_i (node i's block) is negated when exactly one of "i in S" and "its feature's element in
// S" holds (a learned bias counts as a feature outside S). Each node of S then has its logit
// negated but for its fixed offset, and every node outside S sees the same logit. g is a
// linear involution with |det| = 1, whatever the priors: a valid deterministic proposal for
// Metropolis–Hastings with acceptance min(1, p(g θ | x) / p(θ | x)).
//
// S must hold both ends of every fixed-weight term between hidden elements (a fixed weight
// cannot change sign with θ), and no fixed term may join S to an observed node or a
// covariate: the sets are the connected components of the hidden elements under fixed terms
// (examples/chain: h1 … h20 linked by fixed weights 3 flip together).
//
// An exchange of two hidden elements i and j of the same form (the same children through the
// same kind of terms, the same own predictor) maps θ by swapping their weights entry by entry
// (lang/symmetry.hpp, structural_swap_permutation). Where their offsets or the priors of the
// swapped weights differ, it is not an exact symmetry but its copy of a mode is a minor mode,
// like a flipped copy: the map is a permutation and its own inverse, again a valid proposal.
#pragma once

#include "lang/ir.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vbn::lang {

struct ApproximateFlip {
    std::vector<int> elements;  // the hidden elements flipped together, in element order
    std::vector<int> negated;   // the entries of θ that g negates, sorted
    std::string name;           // describe_flip: "d1", "h1, h2, h3 and 17 more"
};

// The flips of components whose map moves θ and is not an exact symmetry (a component whose
// flip is exact is an equivalent labeling, lang/symmetry.hpp), in element order.
std::vector<ApproximateFlip> find_approximate_flips(const ir::Graph& graph);

struct ApproximateSwap {
    int first = 0, second = 0;  // the hidden elements exchanged, first < second
    std::vector<int> perm;      // θ'_k = θ_perm[k], an involution that moves θ
    std::string name;           // "d1 <-> d2"
};

// Exchanges that are not exact: hidden elements of the same form fall into classes, in element
// order; within each, the pairs of neighbours whose exchange is not exact, which with the exact
// ones generate every permutation of it. Where the model has more than
// max_labelings_with_exchanges exact labelings, the nodes they move are left out.
constexpr std::uint64_t max_labelings_with_exchanges = 256;
std::vector<ApproximateSwap> find_approximate_swaps(const ir::Graph& graph);

// "d1" or "h1, h2, h3 and 17 more" (the elements of the flip).
std::string describe_flip(const ir::Graph& graph, const ApproximateFlip& flip);

}  // namespace vbn::lang
