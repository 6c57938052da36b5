// Symmetry jumps: after each step of a base kernel, a Metropolis–Hastings move to the state's
// image under a signed permutation of its coordinates: a sign flip of some of them, an exchange
// of two blocks, or a product of such (docs/methods.md, "Symmetry jumps").
//
// Each move g is linear with |det| = 1 (inference/signed_permutation.hpp). The jump picks g
// uniformly from a set G closed under inverses, proposes x' = g x and accepts with
// min(1, p(x') / p(x)). The proposal is symmetric, q(x → g x) = 1/|G| = q(g x → x) (the move
// back is g⁻¹, also in G, and no g appears twice), and g preserves volume, so the move
// satisfies detailed balance with respect to p (Green 1995, deterministic proposals; Tierney
// 1998), and so does the cycle base kernel then jump. Where the moves map one mode of p onto
// another, the chain moves between them in proportion to their mass, which a local kernel
// cannot do.
//
// The jump draws its random numbers from a stream of its own, seeded once per chain from a copy
// of the chain's generator (which it does not advance): a jump that is never accepted leaves
// the base kernel's draws exactly as they would be without it.
//
// G is move_set(generators): with k ≤ max_enumerated_flips generators, the group they generate
// (for sign flips, which commute and are involutions, the 2^k − 1 non-empty products) while it
// has at most 255 elements besides the identity; otherwise the generators and their inverses.
#pragma once

#include "inference/kernel.hpp"
#include "inference/signed_permutation.hpp"

#include <memory>
#include <string>
#include <vector>

namespace vbn::inference {

constexpr std::size_t max_enumerated_flips = 8;

class SymmetryJump : public Kernel {
public:
    // `generators`: each the coordinates one flip negates (non-empty); `base` steps first.
    SymmetryJump(std::unique_ptr<Kernel> base, const std::vector<std::vector<int>>& generators);
    // `generators`: signed permutations (none the identity), flips and exchanges alike.
    SymmetryJump(std::unique_ptr<Kernel> base, const std::vector<SignedPermutation>& generators);
    SymmetryJump(const SymmetryJump& other);
    SymmetryJump& operator=(const SymmetryJump&) = delete;

    // The base kernel's step, with its TransitionInfo (the CSV's sampler columns describe it),
    // then one jump.
    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    // One jump alone: propose a uniform move of G; returns min(1, p(g x) / p(x)).
    double jump(State& state, Density& target, Rng& rng);

    void begin_warmup(int iterations) override { base_->begin_warmup(iterations); }
    void end_warmup() override { base_->end_warmup(); }
    std::unique_ptr<Kernel> clone() const override;
    // The base kernel's leaves, then the jump's counters.
    void collect_stats(std::vector<KernelStats>& out) const override;
    int leaf_count() const override { return base_->leaf_count() + 1; }
    std::string name() const override;

    const std::vector<SignedPermutation>& moves() const { return moves_; }

private:
    std::unique_ptr<Kernel> base_;
    std::vector<SignedPermutation> moves_;  // G
    KernelStats stats_;
    Eigen::VectorXd proposal_;             // scratch, sized at the first jump
    Rng own_{0, 0};                        // the jump's stream (seeded at the first jump)
    bool seeded_ = false;
};

}  // namespace vbn::inference
