#include "runtime/sampling/symmetry_moves.hpp"

namespace vbn {

std::vector<inference::SignedPermutation> symmetry_generators(const std::vector<lang::ApproximateFlip>& flips,
                                                               const std::vector<lang::ApproximateSwap>& swaps) {
    std::vector<inference::SignedPermutation> out;
    for (const auto& f : flips) out.push_back(inference::SignedPermutation::negation(f.negated));
    for (const auto& s : swaps) out.push_back(inference::SignedPermutation::permutation(s.perm));
    return out;
}

std::vector<std::string> symmetry_generator_names(const std::vector<lang::ApproximateFlip>& flips,
                                                  const std::vector<lang::ApproximateSwap>& swaps) {
    std::vector<std::string> out;
    for (const auto& f : flips) out.push_back(f.name);
    for (const auto& s : swaps) out.push_back(s.name);
    return out;
}

}  // namespace vbn
