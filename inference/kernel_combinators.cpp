#include "inference/kernel_combinators.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace vbn::inference {

namespace {

// A leaf reports itself as 0 (or leaves the default -1); the parent shifts it past the leaves
// before it.
int shifted_leaf(int reported, int offset) { return offset + (reported < 0 ? 0 : reported); }

}  // namespace

Mixture::Mixture(double nu, std::unique_ptr<Kernel> first, std::unique_ptr<Kernel> second)
    : nu_(nu), first_(std::move(first)), second_(std::move(second)) {
    if (!(nu_ >= 0 && nu_ <= 1)) throw std::invalid_argument(fmt::format("mixture: weight must be in [0, 1], got {}", nu_));
    if (!first_ || !second_) throw std::invalid_argument("mixture: a component kernel is missing");
}

Mixture::Mixture(double nu, const Kernel& first, const Kernel& second) : Mixture(nu, first.clone(), second.clone()) {}

Mixture::Mixture(const Mixture& other) : nu_(other.nu_), first_(other.first_->clone()), second_(other.second_->clone()) {}

void Mixture::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    // Fig. 7: u ~ U[0, 1]; u < ν takes the first kernel.
    if (rng.uniform() < nu_) {
        first_->step(state, target, rng, info);
        info.kernel = shifted_leaf(info.kernel, 0);
    } else {
        second_->step(state, target, rng, info);
        info.kernel = shifted_leaf(info.kernel, first_->leaf_count());
    }
}

void Mixture::begin_warmup(int iterations) {
    first_->begin_warmup(iterations);
    second_->begin_warmup(iterations);
}

void Mixture::end_warmup() {
    first_->end_warmup();
    second_->end_warmup();
}

std::unique_ptr<Kernel> Mixture::clone() const { return std::make_unique<Mixture>(*this); }

void Mixture::collect_stats(std::vector<KernelStats>& out) const {
    first_->collect_stats(out);
    second_->collect_stats(out);
}

int Mixture::leaf_count() const { return first_->leaf_count() + second_->leaf_count(); }

std::string Mixture::name() const { return fmt::format("mixture({:g}: {}, {})", nu_, first_->name(), second_->name()); }

Cycle::Cycle(std::vector<std::unique_ptr<Kernel>> components) : components_(std::move(components)) {
    if (components_.empty()) throw std::invalid_argument("cycle: no component kernels");
    for (const auto& k : components_) {
        if (!k) throw std::invalid_argument("cycle: a component kernel is missing");
    }
}

Cycle::Cycle(const Cycle& other) {
    components_.reserve(other.components_.size());
    for (const auto& k : other.components_) components_.push_back(k->clone());
}

void Cycle::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    double accept_sum = 0;
    bool regenerated = false;
    int offset = 0;
    for (const auto& k : components_) {
        info = TransitionInfo{};
        k->step(state, target, rng, info);
        info.kernel = shifted_leaf(info.kernel, offset);
        accept_sum += info.accept_stat;
        regenerated = regenerated || info.regenerated;
        offset += k->leaf_count();
    }
    info.accept_stat = accept_sum / static_cast<double>(components_.size());
    info.regenerated = regenerated;
}

void Cycle::begin_warmup(int iterations) {
    for (const auto& k : components_) k->begin_warmup(iterations);
}

void Cycle::end_warmup() {
    for (const auto& k : components_) k->end_warmup();
}

std::unique_ptr<Kernel> Cycle::clone() const { return std::make_unique<Cycle>(*this); }

void Cycle::collect_stats(std::vector<KernelStats>& out) const {
    for (const auto& k : components_) k->collect_stats(out);
}

int Cycle::leaf_count() const {
    int n = 0;
    for (const auto& k : components_) n += k->leaf_count();
    return n;
}

std::string Cycle::name() const {
    std::string s = "cycle(";
    for (std::size_t i = 0; i < components_.size(); ++i) s += (i > 0 ? ", " : "") + components_[i]->name();
    return s + ")";
}

}  // namespace vbn::inference
