#include "runtime/sampling/symmetry_moves.hpp"

#include "inference/symmetry_jump.hpp"
#include "lang/symmetry.hpp"

#include <algorithm>
#include <set>

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

NamedMoves exact_generators(const ir::Graph& graph) { return exact_generators(graph, lang::find_symmetries(graph)); }

NamedMoves exact_generators(const ir::Graph& graph, const lang::Symmetries& s) {
    NamedMoves out;
    const auto name = [&](int e) { return graph.elements[static_cast<std::size_t>(e)].name; };
    for (int h : s.flips) {
        out.moves.push_back(inference::SignedPermutation::negation(lang::flip_coordinates(graph, h)));
        out.names.push_back(name(h) + " (exact)");
    }
    for (const auto& cls : s.exchangeable)
        for (std::size_t k = 0; k + 1 < cls.size(); ++k) {
            out.moves.push_back(inference::SignedPermutation::permutation(lang::swap_permutation(graph, cls[k], cls[k + 1])));
            out.names.push_back(name(cls[k]) + " <-> " + name(cls[k + 1]) + " (exact)");
        }
    return out;
}

bool normalizes(const std::vector<inference::SignedPermutation>& exact,
                const std::vector<inference::SignedPermutation>& approximate) {
    const inference::MoveSet set = inference::move_set(approximate, inference::max_enumerated_flips);
    if (!set.closed) return false;
    const std::set<inference::SignedPermutation> group(set.moves.begin(), set.moves.end());
    for (const auto& e : exact)
        for (const auto& a : approximate) {
            const auto c = inference::compose(e, inference::compose(a, inference::inverse(e)));
            if (!c.identity() && !group.count(c)) return false;
        }
    return true;
}

}  // namespace vbn
