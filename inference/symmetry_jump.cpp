#include "inference/symmetry_jump.hpp"

#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace vbn::inference {
namespace {

std::vector<SignedPermutation> negations(const std::vector<std::vector<int>>& generators) {
    std::vector<SignedPermutation> out;
    for (const auto& g : generators) out.push_back(SignedPermutation::negation(g));
    return out;
}

std::vector<SignedPermutation> checked_moves(const std::vector<SignedPermutation>& generators) {
    for (const auto& g : generators)
        if (g.identity()) throw std::invalid_argument("symmetry jump: a move changes no coordinate");
    return move_set(generators, max_enumerated_flips).moves;
}

}  // namespace

SymmetryJump::SymmetryJump(std::unique_ptr<Kernel> base, const std::vector<std::vector<int>>& generators)
    : SymmetryJump(std::move(base), negations(generators)) {}

SymmetryJump::SymmetryJump(std::unique_ptr<Kernel> base, const std::vector<SignedPermutation>& generators)
    : base_(std::move(base)), moves_(checked_moves(generators)) {
    if (!base_) throw std::invalid_argument("symmetry jump: the base kernel is missing");
    if (moves_.empty()) throw std::invalid_argument("symmetry jump: no move");
    stats_.name = "symmetry jump";
}

SymmetryJump::SymmetryJump(const SymmetryJump& other)
    : Kernel(other),
      base_(other.base_->clone()),
      moves_(other.moves_),
      stats_(other.stats_),
      proposal_(other.proposal_),
      own_(other.own_),
      seeded_(other.seeded_) {}

void SymmetryJump::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    base_->step(state, target, rng, info);
    jump(state, target, rng);
}

double SymmetryJump::jump(State& state, Density& target, Rng& chain_rng) {
    require_finite_current(state.lp, "symmetry jump");
    if (!seeded_) {
        Rng copy = chain_rng;  // the chain's own stream is left where it is
        own_.reseed(copy(), 0x6a756d70);  // stream "jump"
        seeded_ = true;
    }
    Rng& rng = own_;
    const SignedPermutation& g = moves_[static_cast<std::size_t>(rng.below(moves_.size()))];
    g.apply(state.x, proposal_);  // allocates only the first time
    const double lp = proposal_log_density(target.log_density(proposal_));
    const MetropolisDecision d = metropolis(lp - state.lp, rng);
    ++stats_.proposed;
    if (d.accept) {
        ++stats_.accepted;
        state.x.swap(proposal_);
        state.lp = lp;
    }
    return d.probability;
}

std::unique_ptr<Kernel> SymmetryJump::clone() const { return std::make_unique<SymmetryJump>(*this); }

void SymmetryJump::collect_stats(std::vector<KernelStats>& out) const {
    base_->collect_stats(out);
    out.push_back(stats_);
}

std::string SymmetryJump::name() const {
    const bool flips = std::all_of(moves_.begin(), moves_.end(), [](const SignedPermutation& g) { return g.negation_only(); });
    return fmt::format("{} + symmetry jump ({} {}{})", base_->name(), moves_.size(), flips ? "flip" : "move",
                       moves_.size() == 1 ? "" : "s");
}

}  // namespace vbn::inference
