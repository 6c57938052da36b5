// The moves the symmetry jumps start from (inference/symmetry_jump.hpp), read off the model's
// approximate symmetries (lang/approximate_symmetry.hpp): each flip's negation of θ's entries,
// then each exchange's permutation of them. The jumps propose move_set of these, and the
// report of the minor modes (runtime/report/mode_masses.hpp) names the same set of copies.
#pragma once

#include "inference/signed_permutation.hpp"
#include "lang/approximate_symmetry.hpp"

#include <string>
#include <vector>

namespace vbn {

std::vector<inference::SignedPermutation> symmetry_generators(const std::vector<lang::ApproximateFlip>& flips,
                                                               const std::vector<lang::ApproximateSwap>& swaps);
// The generators' names in the same order: each flip's, then each swap's ("d1 <-> d2").
std::vector<std::string> symmetry_generator_names(const std::vector<lang::ApproximateFlip>& flips,
                                                  const std::vector<lang::ApproximateSwap>& swaps);

}  // namespace vbn
