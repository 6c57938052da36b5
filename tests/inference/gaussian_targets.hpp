// Test targets and checks shared by the inference tests: Gaussian densities with blocks and
// call counters, proposals shifted off them, a warmup-then-sampling runner, and moment checks
// whose tolerances come from Monte Carlo error.
#pragma once

#include "inference/density.hpp"
#include "inference/gaussian.hpp"
#include "inference/kernel.hpp"
#include "inference/rng.hpp"

#include <boost/math/distributions/students_t.hpp>
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace vbn::test {

// N(mean, covariance) with the given blocks. block_log_density(b, x) keeps only the terms of
// -½ z' P z (z = x - mean, P the precision) that involve block b: -z_b'(P z)_b + ½ z_b' P_bb z_b.
// It differs from log_density by terms free of block b, so a kernel that mixes the two up
// leaves State::lp inconsistent — which the tests check.
class GaussianDensity : public inference::Density {
public:
    GaussianDensity(Eigen::VectorXd mean, Eigen::MatrixXd covariance, std::vector<inference::BlockRange> blocks = {})
        : mean_(std::move(mean)), cov_(std::move(covariance)), blocks_(std::move(blocks)) {
        const Eigen::LLT<Eigen::MatrixXd> llt(cov_);
        precision_ = llt.solve(Eigen::MatrixXd::Identity(cov_.rows(), cov_.cols()));
        if (blocks_.empty()) blocks_.push_back({0, static_cast<int>(mean_.size())});
        z_.resize(mean_.size());
        pz_.resize(mean_.size());
        pbz_.resize(mean_.size());
    }

    int dim() const override { return static_cast<int>(mean_.size()); }

    double log_density(const Eigen::VectorXd& x) override {
        ++log_density_calls;
        return exact(x);
    }

    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        ++gradient_calls;
        z_ = x - mean_;
        grad.noalias() = -precision_ * z_;
        return 0.5 * z_.dot(grad);
    }

    int block_count() const override { return static_cast<int>(blocks_.size()); }
    inference::BlockRange block(int b) const override { return blocks_[static_cast<std::size_t>(b)]; }

    double block_log_density(int b, const Eigen::VectorXd& x) override {
        ++block_calls;
        const inference::BlockRange r = block(b);
        z_ = x - mean_;
        const auto zb = z_.segment(r.offset, r.size);
        pz_.head(r.size).noalias() = precision_.middleRows(r.offset, r.size) * z_;
        pbz_.head(r.size).noalias() = precision_.block(r.offset, r.offset, r.size, r.size) * zb;
        return -zb.dot(pz_.head(r.size)) + 0.5 * zb.dot(pbz_.head(r.size));
    }

    // The log density without counting the call (for checks).
    double exact(const Eigen::VectorXd& x) {
        z_ = x - mean_;
        pz_.noalias() = precision_ * z_;
        return -0.5 * z_.dot(pz_);
    }

    const Eigen::VectorXd& mean() const { return mean_; }
    const Eigen::MatrixXd& covariance() const { return cov_; }

    long log_density_calls = 0;
    long gradient_calls = 0;
    long block_calls = 0;

private:
    Eigen::VectorXd mean_;
    Eigen::MatrixXd cov_;
    Eigen::MatrixXd precision_;
    std::vector<inference::BlockRange> blocks_;
    Eigen::VectorXd z_, pz_, pbz_;  // scratch, so evaluations allocate nothing
};

// A one-block GaussianDensity that evaluates its block `batch` values at a time
// (Density::block_batch), as a target over many rows does; block_log_densities gives the
// log density of each value and counts the calls and the values.
class BatchedGaussian : public GaussianDensity {
public:
    BatchedGaussian(GaussianDensity g, int batch) : GaussianDensity(std::move(g)), batch_(batch), x_(dim()) {
        if (block_count() != 1) throw std::invalid_argument("BatchedGaussian: one block only");
    }
    int block_batch(int) const override { return batch_; }
    void block_log_densities(int, const Eigen::Ref<const Eigen::MatrixXd>& values, Eigen::Ref<Eigen::VectorXd> out) override {
        if (values.cols() > batch_ || values.rows() != dim() || out.size() != values.cols())
            throw std::invalid_argument("BatchedGaussian: values do not fit the batch");
        ++batched_calls;
        batched_values += values.cols();
        for (Eigen::Index j = 0; j < values.cols(); ++j) {
            x_ = values.col(j);
            out[j] = exact(x_);
        }
    }

    long batched_calls = 0;
    long batched_values = 0;

private:
    int batch_;
    Eigen::VectorXd x_;
};

inline constexpr double inf = std::numeric_limits<double>::infinity();

// A Gaussian that cannot be evaluated in part of the space: NaN where x[0] > cut and +inf
// (an attractive but invalid value) where x[1] > cut.
class HoledDensity : public GaussianDensity {
public:
    HoledDensity(GaussianDensity g, double cut) : GaussianDensity(std::move(g)), cut_(cut) {}
    double log_density(const Eigen::VectorXd& x) override {
        const double v = GaussianDensity::log_density(x);
        return hole(x, v);
    }
    double block_log_density(int b, const Eigen::VectorXd& x) override {
        const double v = GaussianDensity::block_log_density(b, x);
        return hole(x, v);
    }

private:
    double hole(const Eigen::VectorXd& x, double v) const {
        if (x[0] > cut_) return std::numeric_limits<double>::quiet_NaN();
        if (x[1] > cut_) return inf;
        return v;
    }
    double cut_;
};

class GaussianFactory : public inference::DensityFactory {
public:
    explicit GaussianFactory(GaussianDensity prototype) : prototype_(std::move(prototype)) {}
    std::unique_ptr<inference::Density> make() const override { return std::make_unique<GaussianDensity>(prototype_); }

private:
    GaussianDensity prototype_;
};

// A correlated 2-D Gaussian (sds 1 and 2, correlation 0.8), one block per coordinate.
inline GaussianDensity correlated_2d() {
    Eigen::Vector2d mean(1.0, -2.0);
    Eigen::Matrix2d cov;
    cov << 1.0, 0.8 * 2.0, 0.8 * 2.0, 4.0;
    return GaussianDensity(mean, cov, {{0, 1}, {1, 1}});
}

// A correlated 10-D Gaussian: sds from 0.5 to 3, correlations 0.6^|i-j| (so the blocks are
// coupled), blocks of sizes 3, 3 and 4.
inline GaussianDensity correlated_10d() {
    const int d = 10;
    Eigen::VectorXd mean(d), sd(d);
    for (int i = 0; i < d; ++i) {
        mean[i] = -2.0 + 0.5 * i;
        sd[i] = 0.5 + 2.5 * i / (d - 1.0);
    }
    Eigen::MatrixXd cov(d, d);
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) cov(i, j) = sd[i] * sd[j] * std::pow(0.6, std::abs(i - j));
    return GaussianDensity(mean, cov, {{0, 3}, {3, 3}, {6, 4}});
}

// A proposal off the target: mean shifted by `shift` sds (alternating signs), covariance
// scaled by `scale`, so the MH correction has work to do.
inline inference::GaussianProposal shifted_proposal(const GaussianDensity& t, double shift, double scale,
                                                    double df = inference::GaussianProposal::gaussian_df) {
    Eigen::VectorXd mean = t.mean();
    for (int i = 0; i < t.dim(); ++i) mean[i] += (i % 2 == 0 ? shift : -shift) * std::sqrt(t.covariance()(i, i));
    return inference::GaussianProposal(mean, scale * t.covariance(), df);
}

// What run_warmup_then_sample saw: the sampling phase's states (one row a step) and
// transitions, and max |State::lp - log p(x)| / (1 + |log p(x)|) over every step.
struct KernelRun {
    Eigen::MatrixXd draws;
    std::vector<inference::TransitionInfo> info;
    double max_lp_error = 0;
};

// Warmup then sampling with one kernel from `init` (stream 7 of `seed`), checking State::lp
// against log_p(x) after every step; at_end_of_warmup (if set) runs between the phases.
template <class LogP>
KernelRun run_warmup_then_sample(inference::Kernel& kernel, inference::Density& target, LogP log_p,
                                 const Eigen::VectorXd& init, int warmup, int draws, std::uint64_t seed,
                                 const std::function<void()>& at_end_of_warmup = {}) {
    inference::Rng rng(seed, 7);
    inference::State state{init, 0.0};
    state.lp = log_p(state.x);
    KernelRun r;
    r.draws.resize(draws, target.dim());
    r.info.resize(static_cast<std::size_t>(draws));
    auto track = [&] {
        const double exact = log_p(state.x);
        r.max_lp_error = std::max(r.max_lp_error, std::abs(state.lp - exact) / (1 + std::abs(exact)));
    };
    if (warmup > 0) {
        kernel.begin_warmup(warmup);
        for (int i = 0; i < warmup; ++i) {
            inference::TransitionInfo info;
            kernel.step(state, target, rng, info);
            track();
        }
    }
    kernel.end_warmup();
    if (at_end_of_warmup) at_end_of_warmup();
    for (int i = 0; i < draws; ++i) {
        inference::TransitionInfo& info = r.info[static_cast<std::size_t>(i)];
        kernel.step(state, target, rng, info);
        track();
        r.draws.row(i) = state.x.transpose();
    }
    return r;
}

// Batch-means Monte Carlo standard error of the mean of a series (batches must be much longer
// than the autocorrelation time; 40 batches leave the error estimate within ~±20%).
inline constexpr int moment_batches = 40;
inline double batch_means_mcse(const Eigen::VectorXd& series, int batches = moment_batches) {
    const Eigen::Index m = series.size() / batches;
    Eigen::VectorXd means(batches);
    for (int k = 0; k < batches; ++k) means[k] = series.segment(k * m, m).mean();
    const double var = (means.array() - means.mean()).square().sum() / (batches - 1);
    return std::sqrt(var / batches);
}

// Compares the draws' means and covariances with the truth, entry by entry (batch means; a
// covariance entry is the mean of the products (x_i - μ_i)(x_j - μ_j), whose own series gives
// its error). Returns the failures, one a line.
// An entry fails where |error| / mcse exceeds the level that gives the whole comparison a
// false-alarm probability of `alpha`: with batch means that ratio is Student-t with
// batches - 1 = 39 degrees of freedom, and there are d + d(d+1)/2 entries (Bonferroni). That
// is 3.8 at d = 1, 4.1 at d = 2, 4.6 at d = 5 and 4.9 at d = 10. (A flat 4 would fail a run
// of an exact sampler at d = 10 about 1.8% of the time, 65 entries times 2.7e-4; adapted NUTS
// on the 10-D Gaussian went over 4 in 2 of 120 runs over seeds, with no entry biased.)
inline double moments_threshold(Eigen::Index d, double alpha) {
    const double entries = static_cast<double>(d + d * (d + 1) / 2);
    return boost::math::quantile(boost::math::complement(boost::math::students_t(moment_batches - 1), alpha / (2 * entries)));
}

inline std::string check_moments(const Eigen::MatrixXd& draws, const Eigen::VectorXd& mean, const Eigen::MatrixXd& cov,
                                 double alpha = 1e-3) {
    const double z = moments_threshold(mean.size(), alpha);
    std::string failures;
    const Eigen::Index d = mean.size();
    const Eigen::MatrixXd centred = draws.rowwise() - mean.transpose();
    for (Eigen::Index i = 0; i < d; ++i) {
        const Eigen::VectorXd xi = centred.col(i);
        const double err = std::abs(xi.mean());
        const double se = batch_means_mcse(xi);
        if (!(err <= z * se)) failures += fmt::format("mean[{}]: off by {:.4g} = {:.2f} mcse\n", i, err, err / se);
        for (Eigen::Index j = 0; j <= i; ++j) {
            const Eigen::VectorXd prod = xi.cwiseProduct(centred.col(j));
            const double cerr = std::abs(prod.mean() - cov(i, j));
            const double cse = batch_means_mcse(prod);
            if (!(cerr <= z * cse)) {
                failures += fmt::format("cov[{},{}]: {:.4g} vs {:.4g}, {:.2f} mcse\n", i, j, prod.mean(), cov(i, j), cerr / cse);
            }
        }
    }
    return failures;
}

// Heap allocations (malloc calls) so far in this process, where the test binary can count
// them (glibc without sanitizers); -1 where it cannot.
long allocation_count();

// The mass, mean and covariance of a 2-D proposal's density, summed over an n × n grid of
// points over ±half around centre.
struct GridMoments {
    double mass = 0;
    Eigen::Vector2d mean = Eigen::Vector2d::Zero();
    Eigen::Matrix2d cov = Eigen::Matrix2d::Zero();
};

inline GridMoments grid_moments(inference::GaussianProposal& q, const Eigen::Vector2d& centre, double half, int n) {
    GridMoments g;
    const double step = 2 * half / (n - 1);
    Eigen::Matrix2d outer = Eigen::Matrix2d::Zero();
    Eigen::VectorXd x(2);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            x << centre[0] - half + i * step, centre[1] - half + j * step;
            const double p = std::exp(q.log_density(x)) * step * step;
            g.mass += p;
            g.mean += p * x;
            outer += p * x * x.transpose();
        }
    g.mean /= g.mass;
    g.cov = outer / g.mass - g.mean * g.mean.transpose();
    return g;
}

// A 2-D proposal whose density is not its affine part's (a triangular map, split scales)
// against the mean and covariance of that density (from a grid): `draws` draws from Rng(seed,
// 4), each with one overrelaxed move (α = −0.5) from its whitened point. Every draw's and
// move's log q must be log_density's (relative 1e-10), and so must whiten()'s; the draws' and
// the moves' means and variances must be within 4 Monte Carlo standard errors (the variance's
// from the fourth central moment); 100 more draws, evaluations and moves must allocate nothing
// (where allocations are counted). Returns what failed, one line each; empty when nothing did.
inline std::string check_proposal_draws(inference::GaussianProposal& q, const Eigen::Vector2d& mean,
                                        const Eigen::Matrix2d& cov, std::uint64_t seed, int draws = 100000) {
    std::string failures;
    inference::Rng rng(seed, 4);
    Eigen::VectorXd x(2), u(2), y(2), v(2);
    Eigen::MatrixXd plain(draws, 2), moved(draws, 2);
    const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-10 * std::max(std::abs(a), std::abs(b)); };
    for (int k = 0; k < draws; ++k) {
        const double lq = q.sample_log_density(rng, x);
        const double lu = q.whiten(x, u);
        const double ly = q.sample_overrelaxed(rng, -0.5, u, y, v);
        if (!close(lq, q.log_density(x)) || !close(lu, lq) || !close(ly, q.log_density(y)))
            return fmt::format("draw {}: log q {} / whitened {} / log_density {}; moved {} / {}\n", k, lq, lu,
                               q.log_density(x), ly, q.log_density(y));
        plain.row(k) = x.transpose();
        moved.row(k) = y.transpose();
    }
    const long before = allocation_count();
    for (int k = 0; k < 100; ++k) {
        q.sample_log_density(rng, x);
        q.whiten(x, u);
        q.sample_overrelaxed(rng, -0.5, u, y, v);
    }
    if (before >= 0 && allocation_count() != before) failures += "drawing, evaluating or moving allocated\n";
    for (const Eigen::MatrixXd* s : {&plain, &moved})
        for (int c = 0; c < 2; ++c) {
            const char* which = s == &plain ? "draws" : "moves";
            const Eigen::ArrayXd col = s->col(c).array();
            const double se = std::sqrt(cov(c, c) / draws);
            if (!(std::abs(col.mean() - mean[c]) < 4 * se))
                failures += fmt::format("{}' mean[{}]: {:.5g} vs {:.5g}, se {:.3g}\n", which, c, col.mean(), mean[c], se);
            const Eigen::ArrayXd sq = (col - mean[c]).square();
            const double se2 = std::sqrt(((sq - sq.mean()).square().sum() / (draws - 1)) / draws);
            if (!(std::abs(sq.mean() - cov(c, c)) < 4 * se2))
                failures += fmt::format("{}' var[{}]: {:.5g} vs {:.5g}, se {:.3g}\n", which, c, sq.mean(), cov(c, c), se2);
        }
    return failures;
}

}  // namespace vbn::test
