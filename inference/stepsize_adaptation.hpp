// Dual-averaging step size adaptation (Hoffman & Gelman 2014, "The No-U-Turn Sampler",
// §3.2.1, after Nesterov 2009), as Stan runs it during HMC warmup.
//
// The iterate x_t = log ε_t is driven so that the mean acceptance statistic approaches δ:
//   H̄_t = (1 − 1/(t + t0)) H̄_{t−1} + (δ − α_t) / (t + t0)
//   x_t = μ − √t H̄_t / γ
//   x̄_t = t^{−κ} x_t + (1 − t^{−κ}) x̄_{t−1}
// (H&G eq. (6)). Warmup uses ε_t = exp(x_t), which keeps exploring; the sampling phase uses
// the averaged ε = exp(x̄), which has converged. μ is the point the iterates shrink towards
// (H&G suggest log(10 ε₀)), γ how hard they shrink, t0 damps the first iterations and κ sets
// how quickly the average forgets them.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vbn::inference {

struct DualAveragingOptions {
    double delta = 0.8;   // target mean acceptance statistic, in (0, 1)
    double gamma = 0.05;  // shrinkage towards μ, > 0
    double t0 = 10;       // iteration offset, >= 0
    double kappa = 0.75;  // decay of the averaging weights, in (0.5, 1] for convergence
};

class DualAveraging {
public:
    explicit DualAveraging(DualAveragingOptions options = {}) : options_(options) {
        const auto bad = [](const std::string& what) {
            throw std::invalid_argument("step size adaptation: " + what);
        };
        if (!(options_.delta > 0 && options_.delta < 1)) bad("delta (the target acceptance) must be in (0, 1)");
        if (!(options_.gamma > 0) || !std::isfinite(options_.gamma)) bad("gamma must be positive");
        if (!(options_.t0 >= 0) || !std::isfinite(options_.t0)) bad("t0 must be >= 0");
        if (!(options_.kappa > 0) || !std::isfinite(options_.kappa)) bad("kappa must be positive");
    }

    // Starts a new adaptation run that shrinks towards log ε = mu.
    void restart(double mu) {
        mu_ = mu;
        count_ = 0;
        h_bar_ = 0;
        x_bar_ = 0;
    }

    // One update with the acceptance statistic of the latest transition; returns the step
    // size for the next one.
    double learn(double accept_stat) {
        // Acceptance statistics above 1 carry no extra information, and a non-finite one can
        // only come from a transition that went wrong: count it as a rejection.
        const double alpha = std::isfinite(accept_stat) ? std::min(accept_stat, 1.0) : 0.0;
        ++count_;
        const double t = static_cast<double>(count_);
        const double eta = 1.0 / (t + options_.t0);
        h_bar_ = (1.0 - eta) * h_bar_ + eta * (options_.delta - alpha);
        const double x = mu_ - h_bar_ * std::sqrt(t) / options_.gamma;
        const double weight = std::pow(t, -options_.kappa);
        x_bar_ = weight * x + (1.0 - weight) * x_bar_;
        return std::exp(x);
    }

    // The averaged step size exp(x̄) for the sampling phase (meaningful once learn ran).
    double final_stepsize() const { return std::exp(x_bar_); }

    long iterations() const { return count_; }
    const DualAveragingOptions& options() const { return options_; }

private:
    DualAveragingOptions options_;
    double mu_ = 0;
    long count_ = 0;
    double h_bar_ = 0;
    double x_bar_ = 0;
};

}  // namespace vbn::inference
