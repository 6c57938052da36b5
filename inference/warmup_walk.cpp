#include "inference/warmup_walk.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace vbn::inference {

WarmupWalk::WarmupWalk(std::unique_ptr<Kernel> main, RandomWalk walk) : main_(std::move(main)), walk_(std::move(walk)) {
    if (!main_) throw std::invalid_argument("warmup walk: the main kernel is missing");
}

WarmupWalk::WarmupWalk(const WarmupWalk& other)
    : main_(other.main_->clone()),
      walk_(other.walk_),
      helping_(other.helping_),
      stalled_(other.stalled_),
      before_(other.before_),
      walks_(other.walks_) {}

void WarmupWalk::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    if (helping_ == 0) {
        main_->step(state, target, rng, info);
        return;
    }
    --helping_;
    if (std::find(stalled_.begin(), stalled_.end(), 1) != stalled_.end()) {
        walk_.set_only(stalled_);
        TransitionInfo walked;
        walk_.step(state, target, rng, walked);
        ++walks_;
    }
    before_ = state.x;  // sized at the first helped step: no allocation after it
    main_->step(state, target, rng, info);
    stalled_.resize(static_cast<std::size_t>(target.block_count()));
    for (int b = 0; b < target.block_count(); ++b) {
        const BlockRange r = target.block(b);
        stalled_[static_cast<std::size_t>(b)] = r.size > 0 && state.x.segment(r.offset, r.size) == before_.segment(r.offset, r.size);
    }
}

void WarmupWalk::begin_warmup(int iterations) {
    helping_ = helped_iterations(iterations);
    std::fill(stalled_.begin(), stalled_.end(), 0);
    main_->begin_warmup(iterations);
    walk_.begin_warmup(iterations);
}

void WarmupWalk::end_warmup() {
    helping_ = 0;
    main_->end_warmup();
    walk_.end_warmup();
}

std::unique_ptr<Kernel> WarmupWalk::clone() const { return std::make_unique<WarmupWalk>(*this); }

// Only main's leaves: the walk takes no sampling-phase steps, and its warmup moves are not
// transitions of the reported chain.
void WarmupWalk::collect_stats(std::vector<KernelStats>& out) const { main_->collect_stats(out); }

int WarmupWalk::leaf_count() const { return main_->leaf_count(); }

std::string WarmupWalk::name() const { return fmt::format("{} (a random walk where it stalls early in warmup)", main_->name()); }

}  // namespace vbn::inference
