#include "inference/symmetry_jump.hpp"

#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace vbn::inference {
namespace {

// The symmetric difference of two sorted coordinate sets: the coordinates their product negates.
std::vector<int> product(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> out;
    std::set_symmetric_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

std::vector<std::vector<int>> flip_set(std::vector<std::vector<int>> generators) {
    for (auto& g : generators) {
        std::sort(g.begin(), g.end());
        g.erase(std::unique(g.begin(), g.end()), g.end());
        if (g.empty()) throw std::invalid_argument("symmetry jump: a flip negates no coordinate");
    }
    if (generators.size() > max_enumerated_flips) return generators;
    std::vector<std::vector<int>> all;
    const std::size_t n = std::size_t{1} << generators.size();
    for (std::size_t mask = 1; mask < n; ++mask) {
        std::vector<int> g;
        for (std::size_t k = 0; k < generators.size(); ++k)
            if (mask & (std::size_t{1} << k)) g = product(g, generators[k]);
        if (!g.empty()) all.push_back(std::move(g));
    }
    return all;
}

}  // namespace

SymmetryJump::SymmetryJump(std::unique_ptr<Kernel> base, const std::vector<std::vector<int>>& generators)
    : base_(std::move(base)), flips_(flip_set(generators)) {
    if (!base_) throw std::invalid_argument("symmetry jump: the base kernel is missing");
    if (flips_.empty()) throw std::invalid_argument("symmetry jump: no flip");
    stats_.name = "symmetry jump";
}

SymmetryJump::SymmetryJump(const SymmetryJump& other)
    : Kernel(other),
      base_(other.base_->clone()),
      flips_(other.flips_),
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
    const std::vector<int>& g = flips_[static_cast<std::size_t>(rng.below(flips_.size()))];
    proposal_ = state.x;  // allocates only the first time
    for (int k : g) proposal_[k] = -proposal_[k];
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
    return fmt::format("{} + symmetry jump ({} flip{})", base_->name(), flips_.size(), flips_.size() == 1 ? "" : "s");
}

}  // namespace vbn::inference
