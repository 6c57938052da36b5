// Windowed estimation of the inverse metric (the posterior variances or covariance) during
// HMC warmup, on Stan's schedule.
//
// Warmup is split into a fast initial buffer (the step size alone adapts while the chain
// finds the typical set), a run of slow windows whose draws estimate the covariance, and a
// fast terminal buffer (the step size settles to the last metric). Each slow window is twice
// the previous one, so later, better-mixed windows dominate; the last one is stretched to
// meet the terminal buffer rather than leave a stub too short to estimate from. At the end
// of each window the estimate replaces the metric and the estimator starts afresh, so early
// draws from far out in the tails never pollute the final estimate.
//
// The estimate S of n draws is shrunk towards a target T with w pseudo-draws,
// (n S + w T) / (n + w): with few or nearly collinear draws it stays positive definite and
// well scaled. Stan's target is 1e-3 I with w = 5, the default here. A first window of 25
// draws in 50 dimensions gives an S of rank 24 at most, which that shrinkage leaves with 26
// directions of variance ~1e-3: the next window's trajectories then need hundreds of steps.
// When a good guess of the covariance is at hand (a Laplace fit at the posterior mode), it
// makes a better target: shrink_towards_covariance (or _variances) sets it, with w of the
// order of the dimension or more, so that a short window adjusts the guess rather than
// replacing it.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace vbn::inference {

enum class MetricKind {
    diagonal,  // inverse metric = per-coordinate variances
    dense,     // inverse metric = full covariance
};

struct MetricWindowOptions {
    int init_buffer = 75;  // fast iterations before the first slow window
    int term_buffer = 50;  // fast iterations after the last slow window
    int base_window = 25;  // length of the first slow window; each next one doubles
};

// Which warmup iterations (0-based) feed the estimator and at which ones a window closes.
class AdaptationWindows {
public:
    // Fewer than 20 warmup iterations: no windows at all. Buffers plus one base window that
    // do not fit: 15% / 75% / 10% of the warmup instead.
    void plan(int num_warmup, const MetricWindowOptions& options) {
        if (options.init_buffer < 0 || options.term_buffer < 0 || options.base_window < 1) {
            throw std::invalid_argument(
                "metric adaptation: init_buffer and term_buffer must be >= 0 and base_window >= 1, got " +
                std::to_string(options.init_buffer) + ", " + std::to_string(options.term_buffer) + ", " +
                std::to_string(options.base_window));
        }
        ends_.clear();
        first_ = 0;
        last_ = -1;
        if (num_warmup < 20) return;
        long init = options.init_buffer;
        long term = options.term_buffer;
        long base = options.base_window;
        if (init + base + term > num_warmup) {
            init = static_cast<long>(0.15 * num_warmup);
            term = static_cast<long>(0.10 * num_warmup);
            base = num_warmup - init - term;
        }
        first_ = static_cast<int>(init);
        last_ = static_cast<int>(num_warmup - term - 1);
        long size = base;
        long end = init + base - 1;
        for (;;) {
            ends_.push_back(static_cast<int>(end));
            if (end >= last_) break;
            size *= 2;
            end += size;
            // Stretch this window to the terminal buffer when the one after it would not fit.
            if (end + 2 * size > last_) end = last_;
        }
    }

    // The draw of this iteration feeds the estimator.
    bool collecting(int iteration) const { return iteration >= first_ && iteration <= last_; }

    // A slow window closes after this iteration.
    bool window_end(int iteration) const { return std::binary_search(ends_.begin(), ends_.end(), iteration); }

    // The last slow window closes after this iteration.
    bool last_window_end(int iteration) const { return !ends_.empty() && iteration == ends_.back(); }

    // Last iteration of each slow window, increasing.
    const std::vector<int>& window_ends() const { return ends_; }

private:
    std::vector<int> ends_;
    int first_ = 0;
    int last_ = -1;
};

// Running mean (Welford 1962): the update both estimators below share. add(x) returns the
// step δ = x − (mean before x), from which each accumulates its sum of squared deviations.
class WelfordMean {
public:
    explicit WelfordMean(int dim = 0) : mean_(Eigen::VectorXd::Zero(dim)), delta_(dim) {}

    void restart() {
        count_ = 0;
        mean_.setZero();
    }

    const Eigen::VectorXd& add(const Eigen::VectorXd& x) {
        ++count_;
        delta_ = x - mean_;
        mean_ += delta_ / static_cast<double>(count_);
        return delta_;
    }

    long count() const { return count_; }
    const Eigen::VectorXd& mean() const { return mean_; }

private:
    long count_ = 0;
    Eigen::VectorXd mean_;
    Eigen::VectorXd delta_;
};

// Running mean and sum of squared deviations (Welford 1962): one pass, no cancellation.
class WelfordVariance {
public:
    explicit WelfordVariance(int dim = 0) : mean_(dim), m2_(Eigen::VectorXd::Zero(dim)) {}

    void restart() {
        mean_.restart();
        m2_.setZero();
    }

    void add(const Eigen::VectorXd& x) {
        const Eigen::VectorXd& delta = mean_.add(x);
        m2_.array() += delta.array() * (x - mean_.mean()).array();
    }

    long count() const { return mean_.count(); }

    // Unbiased sample variance; needs count() >= 2.
    void sample_variance(Eigen::VectorXd& out) const { out = m2_ / static_cast<double>(count() - 1); }

private:
    WelfordMean mean_;
    Eigen::VectorXd m2_;
};

class WelfordCovariance {
public:
    explicit WelfordCovariance(int dim = 0) : mean_(dim), m2_(Eigen::MatrixXd::Zero(dim, dim)) {}

    void restart() {
        mean_.restart();
        m2_.setZero();
    }

    void add(const Eigen::VectorXd& x) {
        const Eigen::VectorXd& delta = mean_.add(x);
        // (x − mean_old)(x − mean_new)' = ((n − 1)/n) δδ': symmetric, so only the lower
        // triangle is accumulated.
        const double w = static_cast<double>(count() - 1) / static_cast<double>(count());
        const Eigen::Index d = delta.size();
        for (Eigen::Index j = 0; j < d; ++j) m2_.col(j).tail(d - j) += (w * delta(j)) * delta.tail(d - j);
    }

    long count() const { return mean_.count(); }

    // Unbiased sample covariance, exactly symmetric; needs count() >= 2.
    void sample_covariance(Eigen::MatrixXd& out) const {
        const Eigen::Index d = m2_.rows();
        const double scale = 1.0 / static_cast<double>(count() - 1);
        for (Eigen::Index j = 0; j < d; ++j) {
            for (Eigen::Index i = j; i < d; ++i) {
                out(i, j) = scale * m2_(i, j);
                out(j, i) = out(i, j);
            }
        }
    }

private:
    WelfordMean mean_;
    Eigen::MatrixXd m2_;  // lower triangle only
};

// Adds the n-th point x to a running mean and full sum of outer products of deviations
// (Welford) kept in the caller's storage, as the adaptive Metropolis and regeneration kernels
// keep theirs: n = 1 starts them at x, later points add (x − mean_{n−1})(x − mean_n)' to M2.
// delta and delta_new are scratch of x's size.
inline void welford_outer_add(long n, const Eigen::VectorXd& x, Eigen::VectorXd& mean, Eigen::MatrixXd& m2,
                              Eigen::VectorXd& delta, Eigen::VectorXd& delta_new) {
    if (n == 1) {
        mean = x;
        m2.setZero();
        return;
    }
    delta = x - mean;
    mean += delta / static_cast<double>(n);
    delta_new = x - mean;
    m2.noalias() += delta * delta_new.transpose();
}

// The whole schedule: feed it every warmup draw; at each window end it holds the new inverse
// metric. Storage is sized once, so observing never allocates.
class MetricAdaptation {
public:
    MetricAdaptation(int dim, MetricKind kind)
        : kind_(kind),
          variance_(kind == MetricKind::diagonal ? dim : 0),
          covariance_(kind == MetricKind::dense ? dim : 0),
          var_estimate_(Eigen::VectorXd::Ones(kind == MetricKind::diagonal ? dim : 0)),
          cov_estimate_(Eigen::MatrixXd::Identity(kind == MetricKind::dense ? dim : 0, kind == MetricKind::dense ? dim : 0)) {}

    // Shrink each window's estimate towards this covariance (dense metric) or these variances
    // (diagonal metric) with `weight` pseudo-draws instead of Stan's 1e-3 I with 5. Throws
    // std::invalid_argument if the target does not match the kind and size, is not finite
    // with a positive diagonal, or the weight is not positive and finite.
    void shrink_towards_covariance(const Eigen::MatrixXd& covariance, double weight) {
        check_weight(weight);
        if (kind_ != MetricKind::dense || covariance.rows() != covariance_dim() || covariance.cols() != covariance_dim())
            throw std::invalid_argument("metric adaptation: the shrinkage target must be a dense covariance of the metric's size");
        check_target(covariance.diagonal(), covariance.allFinite());
        cov_target_ = covariance;
        target_weight_ = weight;
    }
    void shrink_towards_variances(const Eigen::VectorXd& variances, double weight) {
        check_weight(weight);
        if (kind_ != MetricKind::diagonal || variances.size() != var_estimate_.size())
            throw std::invalid_argument("metric adaptation: the shrinkage target must be variances of the metric's size");
        check_target(variances, variances.allFinite());
        var_target_ = variances;
        target_weight_ = weight;
    }
    // Pseudo-draws of the shrinkage target (5 unless shrink_towards_* set it).
    double shrinkage_weight() const { return target_weight_; }

    void begin(int num_warmup, const MetricWindowOptions& options) {
        windows_.plan(num_warmup, options);
        variance_.restart();
        covariance_.restart();
    }

    // Feeds the position after warmup iteration `iteration` (0-based). Returns true when a
    // window closed; the regularised estimate is then in variance() or covariance().
    // Throws std::runtime_error if the estimate overflowed.
    bool observe(int iteration, const Eigen::VectorXd& x) {
        if (!windows_.collecting(iteration)) return false;
        if (kind_ == MetricKind::diagonal) {
            variance_.add(x);
        } else {
            covariance_.add(x);
        }
        if (!windows_.window_end(iteration)) return false;
        const long count = kind_ == MetricKind::diagonal ? variance_.count() : covariance_.count();
        if (count >= 2) {
            const double n = static_cast<double>(count);
            const double keep = n / (n + target_weight_);
            const double prior = target_weight_ / (n + target_weight_);
            const double stan_prior = 1e-3 * target_weight_ / (n + target_weight_);
            if (kind_ == MetricKind::diagonal) {
                variance_.sample_variance(var_estimate_);
                if (var_target_.size() > 0) {
                    var_estimate_ = keep * var_estimate_ + prior * var_target_;
                } else {
                    var_estimate_.array() = keep * var_estimate_.array() + stan_prior;
                }
                if (!var_estimate_.allFinite()) overflow();
            } else {
                covariance_.sample_covariance(cov_estimate_);
                cov_estimate_ *= keep;
                if (cov_target_.size() > 0) {
                    cov_estimate_ += prior * cov_target_;
                } else {
                    cov_estimate_.diagonal().array() += stan_prior;
                }
                if (!cov_estimate_.allFinite()) overflow();
            }
        }
        variance_.restart();
        covariance_.restart();
        return count >= 2;
    }

    MetricKind kind() const { return kind_; }
    const Eigen::VectorXd& variance() const { return var_estimate_; }
    const Eigen::MatrixXd& covariance() const { return cov_estimate_; }
    const AdaptationWindows& windows() const { return windows_; }

private:
    Eigen::Index covariance_dim() const { return cov_estimate_.rows(); }
    static void check_weight(double weight) {
        if (!(weight > 0) || !std::isfinite(weight))
            throw std::invalid_argument("metric adaptation: the shrinkage weight must be positive and finite, got " +
                                        std::to_string(weight));
    }
    static void check_target(const Eigen::VectorXd& diagonal, bool finite) {
        if (!finite || !(diagonal.array() > 0).all())
            throw std::invalid_argument(
                "metric adaptation: the shrinkage target must be finite with positive variances");
    }
    [[noreturn]] static void overflow() {
        throw std::runtime_error(
            "metric adaptation: the covariance estimate of the warmup draws is not finite; the chain "
            "reached extreme values, so the target may be improper or far too wide");
    }

    MetricKind kind_;
    AdaptationWindows windows_;
    WelfordVariance variance_;
    WelfordCovariance covariance_;
    Eigen::VectorXd var_estimate_;
    Eigen::MatrixXd cov_estimate_;
    // The shrinkage target; empty: Stan's 1e-3 I.
    Eigen::VectorXd var_target_;
    Eigen::MatrixXd cov_target_;
    double target_weight_ = 5.0;
};

}  // namespace vbn::inference
