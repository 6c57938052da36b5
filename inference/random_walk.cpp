#include "inference/random_walk.hpp"

#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vbn::inference {

namespace {

// Keeps s within a range where s L z stays finite whatever the warmup saw.
constexpr double max_abs_log_scale = 30.0;

}  // namespace

RandomWalk::RandomWalk(const Eigen::MatrixXd& covariance, RandomWalkOptions options) : options_(options) {
    // Validates symmetry and positive definiteness now, where the caller can see it.
    if (covariance.size() > 0) shape_ = GaussianProposal(Eigen::VectorXd::Zero(covariance.rows()), covariance);
    check_options();
}

RandomWalk::RandomWalk(const std::vector<Eigen::MatrixXd>& block_covariances, RandomWalkOptions options) : options_(options) {
    Eigen::Index d = 0;
    for (const Eigen::MatrixXd& b : block_covariances) d += b.rows();
    if (d > 0) shape_ = GaussianProposal(Eigen::VectorXd::Zero(d), block_covariances);
    check_options();
}

void RandomWalk::check_options() {
    if (options_.initial_scale < 0 || !std::isfinite(options_.initial_scale)) {
        throw std::invalid_argument(fmt::format("random walk: initial scale must be positive, got {}", options_.initial_scale));
    }
    if (options_.target_accept < 0 || options_.target_accept >= 1) {
        throw std::invalid_argument(
            fmt::format("random walk: target acceptance must be in (0, 1), got {}", options_.target_accept));
    }
    stats_.name = name();
}

std::string RandomWalk::name() const { return options_.mode == BlockMode::whole ? "rwm" : "block rwm"; }

void RandomWalk::setup(const Density& target) {
    const int d = target.dim();
    if (shape_.dim() > 0 && shape_.dim() != d) {
        throw std::invalid_argument(fmt::format("random walk: the step covariance is {}x{} but the target has {} parameters",
                                                shape_.dim(), shape_.dim(), d));
    }
    // Without a covariance, the identity as d independent coordinates (no d × d matrix).
    if (shape_.dim() == 0)
        identity_ = GaussianProposal(Eigen::VectorXd::Zero(d),
                                     std::vector<Eigen::MatrixXd>(static_cast<std::size_t>(d), Eigen::MatrixXd::Identity(1, 1)));
    std::vector<BlockRange> ranges;
    if (options_.mode == BlockMode::whole) {
        ranges.push_back({0, d});
    } else {
        for (int b = 0; b < target.block_count(); ++b) ranges.push_back(target.block(b));
    }
    blocks_.clear();
    for (const BlockRange& r : ranges) {
        Block block;
        block.offset = r.offset;
        block.size = r.size;
        if (r.size > 0) {
            // Per block, each block's steps are made when it first moves (move()): a walk over
            // the blocks another kernel leaves in place (inference/warmup_walk.hpp), or over
            // flagged ones only, moves few of 10^5 blocks.
            if (options_.mode == BlockMode::whole) block.steps = steps_source();
            const double s = options_.initial_scale > 0 ? options_.initial_scale : 2.38 / std::sqrt(static_cast<double>(r.size));
            block.log_scale = std::log(s);
            block.target_accept = options_.target_accept > 0 ? options_.target_accept : (r.size == 1 ? 0.44 : 0.234);
        }
        blocks_.push_back(std::move(block));
    }
    proposal_.resize(d);
    current_.reset(static_cast<int>(ranges.size()));
    ready_ = true;
}

void RandomWalk::begin_warmup(int iterations) {
    (void)iterations;
    adapting_ = options_.adapt;
    adapt_iterations_ = 0;
}

void RandomWalk::end_warmup() { adapting_ = false; }

void RandomWalk::adapt(Block& block, double accept_prob) {
    // Robbins–Monro with gains n^-0.6: Σ γ_n = ∞ reaches the target, Σ γ_n² < ∞ settles.
    const double gain = std::pow(static_cast<double>(adapt_iterations_), -0.6);
    block.log_scale = std::clamp(block.log_scale + gain * (accept_prob - block.target_accept), -max_abs_log_scale,
                                 max_abs_log_scale);
}

// One Metropolis move of block b (of everything in whole mode); returns min(1, ratio).
double RandomWalk::move(int b, State& state, Density& target, Rng& rng) {
    Block& block = blocks_[static_cast<std::size_t>(b)];
    if (block.steps.dim() == 0) block.steps = steps_source().marginal(block.offset, block.size);
    auto seg = proposal_.segment(block.offset, block.size);
    block.steps.sample(rng, seg);
    seg *= std::exp(block.log_scale);
    seg += state.x.segment(block.offset, block.size);

    const bool whole = options_.mode == BlockMode::whole;
    const double current = whole ? state.lp : current_.current(target, b, {block.offset, block.size}, state.x);
    require_finite_current(current, "block random walk");
    const double proposed = proposal_log_density(whole ? target.log_density(proposal_) : target.block_log_density(b, proposal_));
    const MetropolisDecision decision = metropolis(proposed - current, rng);
    ++block.proposed;
    ++stats_.proposed;
    if (decision.accept) {
        ++block.accepted;
        ++stats_.accepted;
        state.x.segment(block.offset, block.size) = seg;
        // Per block, lp moves by the block's difference (density.hpp's block contract).
        state.lp = whole ? proposed : state.lp + (proposed - current);
        if (!whole) current_.store(target, b, state.x, proposed);
    } else {
        seg = state.x.segment(block.offset, block.size);
    }
    if (adapting_) adapt(block, decision.probability);
    return decision.probability;
}

void RandomWalk::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    if (!ready_) setup(target);
    if (state.x.size() != proposal_.size()) {
        throw std::invalid_argument(
            fmt::format("random walk: the state has {} entries but the target has {}", state.x.size(), proposal_.size()));
    }
    require_finite_current(state.lp, "random walk");
    if (adapting_) ++adapt_iterations_;
    proposal_ = state.x;
    const std::vector<char>& only = options_.only;
    if (!only.empty() && only.size() != blocks_.size())
        throw std::invalid_argument(fmt::format("random walk: {} block flags for a target of {} blocks", only.size(), blocks_.size()));
    // sweep_blocks over the flagged blocks
    double accept_sum = 0;
    int moves = 0;
    for (int b = 0; b < static_cast<int>(blocks_.size()); ++b) {
        if (blocks_[static_cast<std::size_t>(b)].size == 0 || (!only.empty() && !only[static_cast<std::size_t>(b)])) continue;
        accept_sum += move(b, state, target, rng);
        ++moves;
    }
    info.accept_stat = moves > 0 ? accept_sum / moves : 1.0;
    info.kernel = 0;
}

std::unique_ptr<Kernel> RandomWalk::clone() const { return std::make_unique<RandomWalk>(*this); }

void RandomWalk::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

std::vector<double> RandomWalk::scales() const {
    std::vector<double> s;
    for (const Block& b : blocks_) s.push_back(std::exp(b.log_scale));
    return s;
}

std::vector<double> RandomWalk::block_acceptance() const {
    return block_acceptance_rates(blocks_);
}

}  // namespace vbn::inference
