#include "inference/mixture_mh.hpp"

#include "inference/math.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>

namespace vbn::inference {

MixtureProposal::MixtureProposal(std::vector<GaussianProposal> components, std::vector<double> weights)
    : components_(std::move(components)) {
    if (components_.empty()) throw std::invalid_argument("mixture proposal: no components");
    if (weights.size() != components_.size())
        throw std::invalid_argument(fmt::format("mixture proposal: {} weights for {} components", weights.size(), components_.size()));
    double total = 0;
    for (std::size_t k = 0; k < weights.size(); ++k) {
        if (!(weights[k] > 0) || !std::isfinite(weights[k]))
            throw std::invalid_argument(fmt::format("mixture proposal: weight {} is not positive and finite", k + 1));
        if (components_[k].dim() != components_.front().dim())
            throw std::invalid_argument("mixture proposal: components of different dimensions");
        total += weights[k];
    }
    for (double w : weights) log_weights_.push_back(std::log(w / total));
    terms_.resize(components_.size());
}

double MixtureProposal::log_density(const Eigen::Ref<const Eigen::VectorXd>& x) {
    for (std::size_t k = 0; k < components_.size(); ++k) terms_[k] = log_weights_[k] + components_[k].log_density(x);
    return log_sum_exp(terms_.begin(), terms_.end());
}

void MixtureProposal::sample(Rng& rng, Eigen::Ref<Eigen::VectorXd> out) {
    double u = rng.uniform();
    std::size_t k = 0;
    while (k + 1 < components_.size() && (u -= std::exp(log_weights_[k])) > 0) ++k;
    components_[k].sample(rng, out);
}

MixtureIndependenceMH::MixtureIndependenceMH(MixtureProposal proposal) : q_(std::move(proposal)), cache_(q_.dim()) {
    stats_.name = name();
}

std::string MixtureIndependenceMH::name() const { return fmt::format("mixture independence mh ({} components)", q_.size()); }

void MixtureIndependenceMH::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    independence_step(q_, cache_, stats_, "mixture independence mh", state, target, rng, info);
}

std::unique_ptr<Kernel> MixtureIndependenceMH::clone() const { return std::make_unique<MixtureIndependenceMH>(*this); }

void MixtureIndependenceMH::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

}  // namespace vbn::inference
