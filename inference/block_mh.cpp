#include "inference/block_mh.hpp"

#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace vbn::inference {

BlockIndependenceMH::BlockIndependenceMH(GaussianProposal joint) : joint_(std::move(joint)) { stats_.name = name(); }

BlockIndependenceMH::BlockIndependenceMH(std::vector<GaussianProposal> per_block) : given_(std::move(per_block)) {
    if (given_.empty()) throw std::invalid_argument("block independence mh: no block proposals given");
    stats_.name = name();
}

void BlockIndependenceMH::setup(const Density& target) {
    const int d = target.dim();
    const int nb = target.block_count();
    if (given_.empty() && joint_.dim() != d) {
        throw std::invalid_argument(
            fmt::format("block independence mh: the proposal has {} dimensions but the target has {}", joint_.dim(), d));
    }
    if (!given_.empty() && static_cast<int>(given_.size()) != nb) {
        throw std::invalid_argument(
            fmt::format("block independence mh: {} block proposals given but the target has {} blocks", given_.size(), nb));
    }
    blocks_.clear();
    for (int b = 0; b < nb; ++b) {
        const BlockRange r = target.block(b);
        Block block;
        block.offset = r.offset;
        block.size = r.size;
        if (given_.empty()) {
            block.q = joint_.marginal(r.offset, r.size);
        } else {
            block.q = given_[static_cast<std::size_t>(b)];
            if (block.q.dim() != r.size) {
                throw std::invalid_argument(fmt::format(
                    "block independence mh: the proposal for block {} has {} dimensions but the block has {}", b,
                    block.q.dim(), r.size));
            }
        }
        block.cached_x.setZero(r.size);
        blocks_.push_back(std::move(block));
    }
    proposal_.setZero(d);
    current_.reset(nb);
    ready_ = true;
}

// One MH move of block b against its exact conditional; returns min(1, ratio).
double BlockIndependenceMH::move(int b, State& state, Density& target, Rng& rng) {
    Block& block = blocks_[static_cast<std::size_t>(b)];
    const auto current_x = state.x.segment(block.offset, block.size);
    if (!block.cached || current_x != block.cached_x) {
        block.cached_x = current_x;
        block.cached_log_q = block.q.log_density(current_x);
        block.cached = true;
    }
    auto seg = proposal_.segment(block.offset, block.size);
    block.q.sample(rng, seg);
    const double log_q = block.q.log_density(seg);

    const double current = current_.current(target, b, {block.offset, block.size}, state.x);
    require_finite_current(current, "block independence mh");
    const double proposed = proposal_log_density(target.block_log_density(b, proposal_));
    // Fig. 6: MH for block j with invariant p(θ_j | θ_-j); the conditional's normaliser cancels.
    const MetropolisDecision decision = metropolis((proposed - log_q) - (current - block.cached_log_q), rng);
    ++block.proposed;
    ++stats_.proposed;
    if (decision.accept) {
        ++block.accepted;
        ++stats_.accepted;
        state.x.segment(block.offset, block.size) = seg;
        state.lp += proposed - current;
        block.cached_x = seg;
        block.cached_log_q = log_q;
        current_.store(target, b, state.x, proposed);
    } else {
        seg = current_x;
    }
    return decision.probability;
}

void BlockIndependenceMH::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    if (!ready_) setup(target);
    if (state.x.size() != proposal_.size()) {
        throw std::invalid_argument(fmt::format("block independence mh: the state has {} entries but the target has {}",
                                                state.x.size(), proposal_.size()));
    }
    require_finite_current(state.lp, "block independence mh");
    proposal_ = state.x;
    info.accept_stat = sweep_blocks(blocks_, [&](int b) { return move(b, state, target, rng); });
    info.kernel = 0;
}

std::unique_ptr<Kernel> BlockIndependenceMH::clone() const { return std::make_unique<BlockIndependenceMH>(*this); }

void BlockIndependenceMH::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

std::vector<double> BlockIndependenceMH::block_acceptance() const {
    return block_acceptance_rates(blocks_);
}

}  // namespace vbn::inference
