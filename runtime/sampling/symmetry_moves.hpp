// The moves the symmetry jumps start from (inference/symmetry_jump.hpp), read off the model's
// approximate symmetries (lang/approximate_symmetry.hpp): each flip's negation of θ's entries,
// then each exchange's permutation of them. The jumps propose move_set of these, and the
// report of the minor modes (runtime/report/mode_masses.hpp) names the same set of copies.
//
// An approximate exchange may involve a node that an exact symmetry also moves (two exactly
// exchangeable causes and a third of the same form but another prevalence). The approximate
// moves alone then miss copies: exchanging the third with the first is reached only through a
// labeling. Where conjugating the approximate generators by the exact ones leaves their group,
// the jumps take the exact generators too (each accepted with ratio 1: it changes the labeling,
// which relabelling undoes), so that every copy is reached.
#pragma once

#include "inference/signed_permutation.hpp"
#include "lang/approximate_symmetry.hpp"
#include "lang/ir.hpp"
#include "lang/symmetry.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace vbn {

std::vector<inference::SignedPermutation> symmetry_generators(const std::vector<lang::ApproximateFlip>& flips,
                                                               const std::vector<lang::ApproximateSwap>& swaps);
// The generators' names in the same order: each flip's, then each swap's ("d1 <-> d2").
std::vector<std::string> symmetry_generator_names(const std::vector<lang::ApproximateFlip>& flips,
                                                  const std::vector<lang::ApproximateSwap>& swaps);

// The exact labelings' generators, from which runtime/report/relabel.cpp builds their group:
// each exact flip's negation, then the exchanges of neighbours in each exchangeable class;
// with names ("h1 (exact)", "h1 <-> h2 (exact)").
struct NamedMoves {
    std::vector<inference::SignedPermutation> moves;
    std::vector<std::string> names;
};
NamedMoves exact_generators(const ir::Graph& graph, const lang::Symmetries& exact);
NamedMoves exact_generators(const ir::Graph& graph);  // of lang::find_symmetries(graph)

// Whether every e a e⁻¹ (e in `exact`, a in `approximate`) lies in the group the approximate
// moves generate (false where that group is not enumerated).
bool normalizes(const std::vector<inference::SignedPermutation>& exact,
                const std::vector<inference::SignedPermutation>& approximate);

}  // namespace vbn
