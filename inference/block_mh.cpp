#include "inference/block_mh.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace vbn::inference {

namespace {
// A re-centring needs at least this many warmup draws (a kernel inside a mixture may get few).
constexpr long min_centre_draws = 20;

void check_split(const BlockSplit& s) {
    if (s.above < 0 || (s.above > 0 && s.max_size < 1) || !(s.df >= 0) || !(s.scale > 0) || !std::isfinite(s.scale)) {
        throw std::invalid_argument(fmt::format(
            "block independence mh: invalid sub-block split (above {}, max_size {}, df {}, scale {})", s.above,
            s.max_size, s.df, s.scale));
    }
}

void check_overrelax(const std::vector<double>& alphas) {
    for (const double alpha : alphas)
        if (!(alpha > -1 && alpha < 1))
            throw std::invalid_argument(
                fmt::format("block independence mh: overrelaxation must lie strictly between -1 and 1, got {}", alpha));
}

void check_recentre(const BlockRecentre& r) {
    if (!(r.prior_draws >= 0) || !std::isfinite(r.prior_draws)) {
        throw std::invalid_argument(
            fmt::format("block independence mh: invalid block re-centring (prior draws {})", r.prior_draws));
    }
}
}  // namespace

int BlockSplit::parts(int size) const { return splits(size) ? (size + max_size - 1) / max_size : 1; }

std::string BlockSplit::describe() const {
    const std::string family = df == 0 ? "the block proposal's t" : std::isinf(df) ? "Gaussian" : fmt::format("t({})", df);
    return fmt::format("sub-blocks of at most {} whitened coordinates ({}, scale x {}{})", max_size, family, scale,
                       recentre ? ", re-centred in warmup" : "");
}

std::string BlockRecentre::describe() const {
    return fmt::format("re-centred in warmup on each chain's own draws (the initial centre counted as {} draws)", prior_draws);
}

BlockIndependenceMH::BlockIndependenceMH(GaussianProposal joint, BlockSplit split, BlockRecentre recentre, double overrelax)
    : joint_(std::move(joint)), split_(split), whole_recentre_(recentre), overrelax_{overrelax} {
    check_split(split_);
    check_recentre(whole_recentre_);
    check_overrelax(overrelax_);
    stats_.name = name();
}

BlockIndependenceMH::BlockIndependenceMH(std::vector<GaussianProposal> per_block, BlockSplit split, BlockRecentre recentre,
                                         std::vector<double> overrelax)
    : given_(std::move(per_block)), split_(split), whole_recentre_(recentre), overrelax_(std::move(overrelax)) {
    if (given_.empty()) throw std::invalid_argument("block independence mh: no block proposals given");
    if (!overrelax_.empty() && overrelax_.size() != given_.size())
        throw std::invalid_argument(fmt::format("block independence mh: {} overrelaxation factors for {} block proposals",
                                                overrelax_.size(), given_.size()));
    check_split(split_);
    check_recentre(whole_recentre_);
    check_overrelax(overrelax_);
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
    whitened_.clear();
    centres_.clear();
    int widest = 0;
    for (int b = 0; b < nb; ++b) {
        const BlockRange r = target.block(b);
        Block block;
        block.target_block = b;
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
        if (!split_.splits(block.q)) {
            block.cached_x.setZero(r.size);
            block.overrelax = overrelax_.empty() ? 0 : overrelax_[given_.empty() ? 0 : static_cast<std::size_t>(b)];
            if (block.overrelax != 0) {
                block.cached_u.setZero(r.size);
                block.proposed_u.setZero(r.size);
            }
            block.batch = target.block_batch(b);
            if (block.batch > 1) {
                block.ahead_x.setZero(r.size, block.batch);
                if (block.overrelax != 0) block.ahead_u.setZero(r.size, block.batch);
                block.ahead_log_q.setZero(block.batch);
                block.ahead_value.setZero(block.batch);
                block.at.setZero(r.size, 1);
                block.at_value.setZero(1);
            }
            if (whole_recentre_.applies(b)) {
                block.centre = static_cast<int>(centres_.size());
                centres_.push_back(
                    Centre{WelfordMean(r.size), block.q.mean(), block.q.cholesky(), Eigen::VectorXd::Zero(r.size)});
            }
            blocks_.push_back(std::move(block));
            continue;
        }
        Whitened w;
        w.offset = r.offset;
        w.size = r.size;
        w.mean = block.q.mean();
        w.lower = block.q.cholesky();
        w.z.setZero(r.size);
        w.proposed.setZero(r.size);
        w.cached_x.setZero(r.size);
        w.z_sum.setZero(r.size);
        widest = std::max(widest, r.size);
        // Sub-blocks as equal as possible: the first (size mod parts) one coordinate larger.
        const double df = split_.df > 0 ? split_.df : block.q.df();
        const int parts = split_.parts(r.size);
        for (int k = 0, first = 0; k < parts; ++k) {
            const int n = r.size / parts + (k < r.size % parts ? 1 : 0);
            Block s;
            s.target_block = b;
            s.offset = r.offset;
            s.size = n;
            s.whitened = static_cast<int>(whitened_.size());
            s.sub_offset = first;
            s.q = GaussianProposal(Eigen::VectorXd::Zero(n), split_.scale * split_.scale * Eigen::MatrixXd::Identity(n, n), df);
            blocks_.push_back(std::move(s));
            first += n;
        }
        whitened_.push_back(std::move(w));
    }
    shift_.setZero(widest);
    centre_draws_ = 0;
    proposal_.setZero(d);
    current_.reset(nb);
    ready_ = true;
}

MetropolisDecision BlockIndependenceMH::decide(Block& block, State& state, Density& target, Rng& rng, double log_q_new,
                                               double log_q_now) {
    const int b = block.target_block;
    const BlockRange r = target.block(b);
    const double current = current_.current(target, b, r, state.x);
    require_finite_current(current, "block independence mh");
    const double proposed = proposal_log_density(target.block_log_density(b, proposal_));
    // Fig. 6: MH for block j with invariant p(θ_j | θ_-j); the conditional's normaliser cancels.
    const MetropolisDecision decision = metropolis((proposed - log_q_new) - (current - log_q_now), rng);
    ++block.proposed;
    ++stats_.proposed;
    if (decision.accept) {
        ++block.accepted;
        ++stats_.accepted;
        state.x.segment(r.offset, r.size) = proposal_.segment(r.offset, r.size);
        state.lp += proposed - current;
        current_.store(target, b, state.x, proposed);
    } else {
        proposal_.segment(r.offset, r.size) = state.x.segment(r.offset, r.size);
    }
    return decision;
}

bool BlockIndependenceMH::sync_cache(Block& block, const Eigen::Ref<const Eigen::VectorXd>& x, bool overrelaxed) {
    if (block.cached && x == block.cached_x) return false;
    block.cached_x = x;
    block.cached_log_q = overrelaxed ? block.q.whiten(x, block.cached_u) : block.q.log_density(x);
    block.cached = true;
    return true;
}

// One MH move of blocks_[b] against its exact conditional; returns min(1, ratio).
double BlockIndependenceMH::move(int b, State& state, Density& target, Rng& rng) {
    Block& block = blocks_[static_cast<std::size_t>(b)];
    if (block.whitened >= 0) return move_whitened(block, state, target, rng);
    if (block.batch > 1) return move_ahead(block, state, target, rng);
    const auto current_x = state.x.segment(block.offset, block.size);
    // (The warmup does not overrelax, so a cache filled there has no cached_u: end_warmup
    // clears it.)
    const bool overrelaxed = block.overrelax != 0 && !in_warmup_;
    sync_cache(block, current_x, overrelaxed);
    auto seg = proposal_.segment(block.offset, block.size);
    const double log_q = overrelaxed ? block.q.sample_overrelaxed(rng, block.overrelax, block.cached_u, seg, block.proposed_u)
                                     : block.q.sample_log_density(rng, seg);
    const MetropolisDecision decision = decide(block, state, target, rng, log_q, block.cached_log_q);
    if (decision.accept) {
        block.cached_x = seg;
        block.cached_log_q = log_q;
        if (overrelaxed) block.cached_u.swap(block.proposed_u);
    }
    return decision.probability;
}

// move() with the block's proposals drawn ahead and evaluated together (see the header).
double BlockIndependenceMH::move_ahead(Block& block, State& state, Density& target, Rng& rng) {
    const auto current_x = state.x.segment(block.offset, block.size);
    const bool overrelaxed = block.overrelax != 0 && !in_warmup_;
    if (sync_cache(block, current_x, overrelaxed)) {
        block.has_value = false;
        if (overrelaxed) block.used = block.ahead;  // they started from another point
    }
    if (!block.has_value) {
        block.at.col(0) = current_x;
        target.block_log_densities(block.target_block, block.at, block.at_value);
        block.has_value = true;
    }
    require_finite_current(block.at_value[0], "block independence mh");
    if (block.used == block.ahead) draw_ahead(block, target, rng, overrelaxed);
    const int k = block.used++;
    const double proposed = proposal_log_density(block.ahead_value[k]);
    const double log_q = block.ahead_log_q[k];
    // Fig. 6, as in decide().
    const MetropolisDecision decision =
        metropolis((proposed - log_q) - (block.at_value[0] - block.cached_log_q), rng);
    ++block.proposed;
    ++stats_.proposed;
    if (!decision.accept) {
        if (overrelaxed) block.used = block.ahead;  // the rest started from the rejected point
        return decision.probability;
    }
    ++block.accepted;
    ++stats_.accepted;
    state.x.segment(block.offset, block.size) = block.ahead_x.col(k);
    proposal_.segment(block.offset, block.size) = block.ahead_x.col(k);
    state.lp += proposed - block.at_value[0];
    block.at_value[0] = proposed;
    block.cached_x = block.ahead_x.col(k);
    block.cached_log_q = log_q;
    if (overrelaxed) block.cached_u = block.ahead_u.col(k);
    return decision.probability;
}

void BlockIndependenceMH::draw_ahead(Block& block, Density& target, Rng& rng, bool overrelaxed) {
    const int n = block.batch;
    for (int k = 0; k < n; ++k) {
        auto x = block.ahead_x.col(k);
        if (!overrelaxed) {
            block.ahead_log_q[k] = block.q.sample_log_density(rng, x);
            continue;
        }
        // Each from the one before, as if it were accepted.
        auto u = block.ahead_u.col(k);
        const double chi_square = block.q.overrelax_noise(rng, u);
        block.ahead_log_q[k] = k == 0 ? block.q.overrelaxed_from(block.overrelax, block.cached_u, u, chi_square, x, u)
                                      : block.q.overrelaxed_from(block.overrelax, block.ahead_u.col(k - 1), u, chi_square, x, u);
    }
    target.block_log_densities(block.target_block, block.ahead_x.leftCols(n), block.ahead_value.head(n));
    block.ahead = n;
    block.used = 0;
}

void BlockIndependenceMH::discard_ahead() {
    for (Block& block : blocks_) block.ahead = block.used = 0;
}

// One move of a whitened sub-block S: z*_S from its standard proposal, the rest of z kept,
// θ*_j = μ_j + L z*.
double BlockIndependenceMH::move_whitened(Block& block, State& state, Density& target, Rng& rng) {
    Whitened& w = whitened_[static_cast<std::size_t>(block.whitened)];
    const auto current_x = state.x.segment(w.offset, w.size);
    if (!w.cached || current_x != w.cached_x) {
        w.cached_x = current_x;
        w.z = current_x - w.mean;
        w.lower.triangularView<Eigen::Lower>().solveInPlace(w.z);
        w.proposed = w.z;
        w.cached = true;
    }
    auto z_new = w.proposed.segment(block.sub_offset, block.size);
    const auto z_now = w.z.segment(block.sub_offset, block.size);
    const double log_q_new = block.q.sample_log_density(rng, z_new);
    const double log_q_now = block.q.log_density(z_now);
    auto seg = proposal_.segment(w.offset, w.size);
    seg.noalias() = w.lower.triangularView<Eigen::Lower>() * w.proposed;
    seg += w.mean;
    const MetropolisDecision decision = decide(block, state, target, rng, log_q_new, log_q_now);
    if (decision.accept) {
        w.z.segment(block.sub_offset, block.size) = z_new;
        w.cached_x = seg;
    } else {
        z_new = z_now;
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
    if (warmup_step_ >= 0) {
        // After a sweep every split block's z is the state's. Two windows: [T/10, T/5), whose
        // mean becomes the centre at step T/5, and [T/2, T), at the end of warmup.
        const int i = warmup_step_++, t = warmup_total_;
        if (split_.recentre) {
            if ((i >= t / 10 && i < t / 5) || i >= t / 2) {
                for (Whitened& w : whitened_) w.z_sum += w.z;
                ++centre_draws_;
            }
            if (i + 1 == t / 5) recentre();
        }
        if (whole_recentre_.enabled && i >= t / 10) {
            // Whole blocks: every draw from the tenth on, re-centred halfway and at the end.
            for (const Block& block : blocks_) {
                if (block.centre < 0) continue;
                Centre& c = centres_[static_cast<std::size_t>(block.centre)];
                c.x = state.x.segment(block.offset, block.size);
                c.draws.add(c.x);
            }
            if (i + 1 == t / 2) recentre_whole();
        }
    }
}

void BlockIndependenceMH::begin_warmup(int iterations) {
    in_warmup_ = true;
    if (!split_.recentre && !whole_recentre_.enabled) return;
    warmup_step_ = 0;
    warmup_total_ = iterations;
    centre_draws_ = 0;
    for (Whitened& w : whitened_) w.z_sum.setZero();
    for (Centre& c : centres_) c.draws.restart();
}

void BlockIndependenceMH::end_warmup() {
    in_warmup_ = false;
    discard_ahead();  // drawn as independence proposals, from the warmup's centre
    for (Block& block : blocks_)
        if (block.overrelax != 0) block.cached = false;  // the overrelaxed moves need cached_u
    if (warmup_step_ < 0) return;
    warmup_step_ = -1;
    if (split_.recentre) recentre();
    if (whole_recentre_.enabled) recentre_whole();
}

void BlockIndependenceMH::recentre_whole() {
    const double w = whole_recentre_.prior_draws;
    for (Block& block : blocks_) {
        if (block.centre < 0) continue;
        Centre& c = centres_[static_cast<std::size_t>(block.centre)];
        if (c.draws.count() < min_centre_draws) continue;
        const double n = static_cast<double>(c.draws.count());
        c.x = (n * c.draws.mean() + w * c.initial) / (n + w);
        block.q.assign(c.x, c.lower);
        block.cached = false;
        block.ahead = block.used = 0;  // drawn from the old centre
    }
}

void BlockIndependenceMH::recentre() {
    if (centre_draws_ >= min_centre_draws) {
        // μ_j += L z̄: the new centre is the mean of the draws; z is recomputed at the next move.
        for (Whitened& w : whitened_) {
            auto shift = shift_.head(w.size);
            shift = w.z_sum / static_cast<double>(centre_draws_);
            w.proposed.noalias() = w.lower.triangularView<Eigen::Lower>() * shift;
            w.mean += w.proposed;
            w.cached = false;
        }
    }
    for (Whitened& w : whitened_) w.z_sum.setZero();
    centre_draws_ = 0;
}

std::unique_ptr<Kernel> BlockIndependenceMH::clone() const { return std::make_unique<BlockIndependenceMH>(*this); }

void BlockIndependenceMH::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

std::vector<double> BlockIndependenceMH::block_acceptance() const {
    return block_acceptance_rates(blocks_);
}

std::vector<GaussianProposal> BlockIndependenceMH::block_proposals() const {
    std::vector<GaussianProposal> out;
    for (const Block& block : blocks_)
        if (block.whitened < 0) out.push_back(block.q);
    return out;
}

}  // namespace vbn::inference
