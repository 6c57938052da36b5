// NUTS with dual-averaging step size and windowed metric adaptation: the adaptation pieces on
// their own, invariance of Gaussian targets with either metric, the adapted step size and
// metric, divergences and non-finite targets, the tree depth limit and reproducibility.
#include "gaussian_targets.hpp"

#include "inference/metric_adaptation.hpp"
#include "inference/nuts.hpp"
#include "inference/stepsize_adaptation.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace vbn::inference;
using vbn::test::batch_means_mcse;
using vbn::test::check_moments;
using vbn::test::GaussianDensity;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// iid N(0, sd²) in every coordinate, O(d) per gradient, for high-dimensional checks.
class IidNormal : public Density {
public:
    IidNormal(int dim, double sd) : dim_(dim), precision_(1.0 / (sd * sd)) {}
    int dim() const override { return dim_; }
    double log_density(const Eigen::VectorXd& x) override { return -0.5 * precision_ * x.squaredNorm(); }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        grad = -precision_ * x;
        return -0.5 * precision_ * x.squaredNorm();
    }

private:
    int dim_;
    double precision_;
};

// Neal's funnel: v ~ N(0, 3²), x_k | v ~ N(0, e^v), k = 1..dim−1. Its neck needs step sizes
// far below what the mouth allows, so one adapted step size must diverge somewhere.
class Funnel : public Density {
public:
    explicit Funnel(int dim) : dim_(dim) {}
    int dim() const override { return dim_; }
    double log_density(const Eigen::VectorXd& x) override {
        Eigen::VectorXd g(dim_);
        return log_density_gradient(x, g);
    }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        const double v = x(0);
        const auto rest = x.tail(dim_ - 1);
        const double s = rest.squaredNorm() * std::exp(-v);
        grad(0) = -v / 9.0 + 0.5 * s - 0.5 * (dim_ - 1);
        grad.tail(dim_ - 1) = -std::exp(-v) * rest;
        return -v * v / 18.0 - 0.5 * s - 0.5 * (dim_ - 1) * v;
    }

private:
    int dim_;
};

// A 2-D standard normal whose evaluation fails (in the way `mode` says) where x_0 > 1: the
// samplers must treat that region as outside the support, i.e. sample N(0, I) truncated to
// x_0 <= 1.
enum class Failure { nan_density, nan_gradient, minus_infinity };
class TruncatedNormal : public Density {
public:
    explicit TruncatedNormal(Failure mode) : mode_(mode) {}
    int dim() const override { return 2; }
    double log_density(const Eigen::VectorXd& x) override {
        Eigen::VectorXd g(2);
        return log_density_gradient(x, g);
    }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        grad = -x;
        if (x(0) <= 1) return -0.5 * x.squaredNorm();
        switch (mode_) {
            case Failure::nan_density: return kNaN;
            case Failure::nan_gradient: grad(1) = kNaN; return -0.5 * x.squaredNorm();
            case Failure::minus_infinity: return -std::numeric_limits<double>::infinity();
        }
        return kNaN;
    }

private:
    Failure mode_;
};

// The constant density: no step size is ever too large, as for an improper posterior.
class Flat : public Density {
public:
    int dim() const override { return 2; }
    double log_density(const Eigen::VectorXd&) override { return 0; }
    double log_density_gradient(const Eigen::VectorXd&, Eigen::VectorXd& grad) override {
        grad.setZero();
        return 0;
    }
};

// sds log-spaced from 0.1 to 10 (a condition number of 10⁴) and correlations 0.5^|i−j|.
GaussianDensity scaled_10d() {
    const int d = 10;
    Eigen::VectorXd mean(d), sd(d);
    for (int i = 0; i < d; ++i) {
        mean(i) = 1.0 - 0.3 * i;
        sd(i) = std::pow(10.0, -1.0 + 2.0 * i / (d - 1.0));
    }
    Eigen::MatrixXd cov(d, d);
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) cov(i, j) = sd(i) * sd(j) * std::pow(0.5, std::abs(i - j));
    return GaussianDensity(mean, cov);
}

GaussianDensity correlated_2d_rho09() {
    Eigen::Vector2d mean(0.5, -1.0);
    Eigen::Matrix2d cov;
    cov << 1.0, 0.9 * 1.0 * 3.0, 0.9 * 1.0 * 3.0, 9.0;
    return GaussianDensity(mean, cov);
}

// An exact draw from the Gaussian, so invariance tests start in equilibrium.
Eigen::VectorXd exact_draw(const GaussianDensity& g, Rng& rng) {
    const Eigen::MatrixXd l = g.covariance().llt().matrixL();
    Eigen::VectorXd z(g.mean().size());
    for (Eigen::Index i = 0; i < z.size(); ++i) z(i) = rng.normal();
    return g.mean() + l * z;
}

// A d-D Gaussian with means 0.1 i, scales from 0.1 to 10 and correlation 0.5^|i−j|: far from
// the unit metric, so warmup has something to adapt.
Eigen::VectorXd graded_mean(int d) {
    Eigen::VectorXd mean(d);
    for (int i = 0; i < d; ++i) mean(i) = 0.1 * i;
    return mean;
}
Eigen::MatrixXd graded_covariance(int d) {
    Eigen::VectorXd sd(d);
    for (int i = 0; i < d; ++i) sd(i) = std::pow(10.0, -1.0 + 2.0 * i / (d - 1.0));
    Eigen::MatrixXd cov(d, d);
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) cov(i, j) = sd(i) * sd(j) * std::pow(0.5, std::abs(i - j));
    return cov;
}

struct Run {
    Eigen::MatrixXd draws;               // sampling draws, one per row
    std::vector<TransitionInfo> infos;   // sampling transitions
    std::vector<TransitionInfo> warmup;  // warmup transitions
};

Run run(Kernel& kernel, Density& target, const Eigen::VectorXd& x0, int warmup, int draws, std::uint64_t seed) {
    Rng rng(seed, 1);
    State state;
    state.x = x0;
    state.lp = target.log_density(x0);
    Run out;
    out.draws.resize(draws, x0.size());
    kernel.begin_warmup(warmup);
    for (int i = 0; i < warmup; ++i) {
        TransitionInfo info;
        kernel.step(state, target, rng, info);
        out.warmup.push_back(info);
    }
    kernel.end_warmup();
    for (int i = 0; i < draws; ++i) {
        TransitionInfo info;
        kernel.step(state, target, rng, info);
        out.draws.row(i) = state.x.transpose();
        out.infos.push_back(info);
    }
    return out;
}

double mean_accept_stat(const std::vector<TransitionInfo>& infos) {
    double s = 0;
    for (const auto& i : infos) s += i.accept_stat;
    return s / static_cast<double>(infos.size());
}

long count_divergent(const std::vector<TransitionInfo>& infos) {
    long n = 0;
    for (const auto& i : infos) n += i.divergent ? 1 : 0;
    return n;
}

EuclideanMetric metric_of_kind(MetricKind kind, int dim) { return EuclideanMetric(dim, kind); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Adaptation pieces

TEST_CASE("dual averaging finds the step size whose acceptance is delta") {
    // A smooth decreasing acceptance curve a(ε) = exp(−ε): a(ε*) = 0.8 at ε* = −log 0.8.
    DualAveraging da;
    da.restart(std::log(10 * 1.0));
    double eps = 1.0;
    for (int t = 0; t < 2000; ++t) eps = da.learn(std::exp(-eps));
    const double final_eps = da.final_stepsize();
    CHECK(std::exp(-final_eps) == doctest::Approx(0.8).epsilon(0.01));
    CHECK(da.iterations() == 2000);
    // Acceptance statistics above 1 are clipped, non-finite ones count as rejections: both
    // push ε the expected way.
    DualAveraging up;
    up.restart(0);
    CHECK(up.learn(5.0) > 1.0);
    DualAveraging down;
    down.restart(0);
    CHECK(down.learn(kNaN) < 1.0);
    CHECK_THROWS_AS(DualAveraging(DualAveragingOptions{1.5, 0.05, 10, 0.75}), std::invalid_argument);
}

TEST_CASE("adaptation windows follow Stan's schedule") {
    AdaptationWindows w;
    w.plan(1000, {});
    CHECK(w.window_ends() == std::vector<int>{99, 149, 249, 449, 949});
    CHECK_FALSE(w.collecting(74));
    CHECK(w.collecting(75));
    CHECK(w.collecting(949));
    CHECK_FALSE(w.collecting(950));
    CHECK(w.window_end(249));
    CHECK_FALSE(w.window_end(250));
    CHECK(w.last_window_end(949));
    CHECK_FALSE(w.last_window_end(449));
    CHECK_FALSE(w.last_window_end(950));

    w.plan(2000, {});
    CHECK(w.window_ends() == std::vector<int>{99, 149, 249, 449, 849, 1949});

    w.plan(150, {});  // buffers and one base window exactly fill the warmup
    CHECK(w.window_ends() == std::vector<int>{99});

    w.plan(100, {});  // too short: 15% / 75% / 10%
    CHECK(w.window_ends() == std::vector<int>{89});
    CHECK_FALSE(w.collecting(14));
    CHECK(w.collecting(15));

    w.plan(19, {});  // too short for any metric estimation
    CHECK(w.window_ends().empty());
    CHECK_FALSE(w.last_window_end(-1));
    CHECK_FALSE(w.collecting(10));

    CHECK_THROWS_AS(w.plan(1000, MetricWindowOptions{75, 50, 0}), std::invalid_argument);
}

TEST_CASE("Welford estimators match two-pass variance and covariance") {
    Rng rng(11);
    const int n = 57, d = 4;
    Eigen::MatrixXd x(n, d);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < d; ++j) x(i, j) = 100.0 + (j + 1) * rng.normal() + (j > 0 ? x(i, 0) : 0.0);
    WelfordVariance var(d);
    WelfordCovariance cov(d);
    for (int i = 0; i < n; ++i) {
        var.add(x.row(i).transpose());
        cov.add(x.row(i).transpose());
    }
    const Eigen::MatrixXd centred = x.rowwise() - x.colwise().mean();
    const Eigen::MatrixXd two_pass = centred.transpose() * centred / (n - 1.0);
    Eigen::VectorXd v(d);
    Eigen::MatrixXd c(d, d);
    var.sample_variance(v);
    cov.sample_covariance(c);
    CHECK((v - two_pass.diagonal()).cwiseAbs().maxCoeff() < 1e-10 * two_pass.diagonal().maxCoeff());
    CHECK((c - two_pass).cwiseAbs().maxCoeff() < 1e-10 * two_pass.cwiseAbs().maxCoeff());
    CHECK(c == c.transpose());
}

TEST_CASE("metric adaptation shrinks each window's estimate towards 1e-3 with weight 5/(n+5)") {
    MetricAdaptation diag(2, MetricKind::diagonal);
    diag.begin(150, {});  // one window: iterations 75..99
    Rng rng(3);
    WelfordVariance reference(2);
    bool updated = false;
    for (int it = 0; it < 150; ++it) {
        const Eigen::Vector2d x(rng.normal(), 2 * rng.normal());
        if (it >= 75 && it <= 99) reference.add(x);
        const bool closed = diag.observe(it, x);
        CHECK(closed == (it == 99));
        updated = updated || closed;
    }
    REQUIRE(updated);
    Eigen::VectorXd s(2);
    reference.sample_variance(s);
    const double n = 25;
    for (int i = 0; i < 2; ++i) CHECK(diag.variance()(i) == doctest::Approx(n / (n + 5) * s(i) + 1e-3 * 5 / (n + 5)));
}

TEST_CASE("metric adaptation shrinks towards a given target with w pseudo-draws: (n S + w T) / (n + w)") {
    Rng rng(5);
    Eigen::MatrixXd draws(150, 3);
    for (int it = 0; it < 150; ++it) draws.row(it) << rng.normal(), 2 * rng.normal(), 0.5 * rng.normal();
    WelfordCovariance reference(3);
    for (int it = 75; it <= 99; ++it) reference.add(draws.row(it).transpose());
    Eigen::MatrixXd s(3, 3);
    reference.sample_covariance(s);
    Eigen::MatrixXd t(3, 3);
    t << 4, 1, 0, 1, 3, -1, 0, -1, 2;
    const double n = 25, w = 30;

    MetricAdaptation dense(3, MetricKind::dense);
    dense.shrink_towards_covariance(t, w);
    CHECK(dense.shrinkage_weight() == w);
    MetricAdaptation diag(3, MetricKind::diagonal);
    diag.shrink_towards_variances(Eigen::VectorXd(t.diagonal()), w);
    for (MetricAdaptation* m : {&dense, &diag}) {
        m->begin(150, {});  // one window: iterations 75..99
        int closed = 0;
        for (int it = 0; it < 150; ++it) closed += m->observe(it, draws.row(it).transpose()) ? 1 : 0;
        CHECK(closed == 1);
    }
    const Eigen::MatrixXd expected = (n * s + w * t) / (n + w);
    CHECK((dense.covariance() - expected).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((diag.variance() - expected.diagonal()).cwiseAbs().maxCoeff() < 1e-12);
    // The default is Stan's: 5 pseudo-draws of 1e-3 I.
    CHECK(MetricAdaptation(3, MetricKind::dense).shrinkage_weight() == 5);

    // Bad targets and weights are refused.
    CHECK_THROWS_AS(dense.shrink_towards_covariance(t, 0), std::invalid_argument);
    CHECK_THROWS_AS(dense.shrink_towards_covariance(t, kNaN), std::invalid_argument);
    CHECK_THROWS_AS(dense.shrink_towards_covariance(Eigen::MatrixXd::Identity(2, 2), 1), std::invalid_argument);
    CHECK_THROWS_AS(dense.shrink_towards_variances(Eigen::VectorXd::Ones(3), 1), std::invalid_argument);
    CHECK_THROWS_AS(diag.shrink_towards_variances(Eigen::Vector3d(1, 0, 1), 1), std::invalid_argument);
    CHECK_THROWS_AS(diag.shrink_towards_variances(Eigen::Vector3d(1, kNaN, 1), 1), std::invalid_argument);
    CHECK_THROWS_AS(diag.shrink_towards_covariance(t, 1), std::invalid_argument);
}

// 50 dimensions, more than the first window's 25 draws: Stan's shrinkage towards 1e-3 I leaves
// the metric of the next windows with ~26 directions of variance 1e-3, so their trajectories
// need far more leapfrog steps; shrinking towards a good initial metric keeps them short.
TEST_CASE("with initial_metric_weight, a good initial metric keeps warmup trajectories short in 50-D") {
    const int d = 50;
    const Eigen::VectorXd mean = graded_mean(d);
    const Eigen::MatrixXd cov = graded_covariance(d);
    GaussianDensity target(mean, cov);
    // Iterations 100..249: the windows after the first one, with its estimate as metric.
    auto leapfrogs_after_first_window = [](const Run& r) {
        long n = 0;
        for (std::size_t i = 100; i < 250; ++i) n += r.warmup[i].n_leapfrog;
        return static_cast<double>(n) / 150.0;
    };
    NutsOptions stan;
    NutsKernel plain(EuclideanMetric::dense(cov), stan);
    const Run a = run(plain, target, mean, 1000, 0, 71);
    NutsOptions shrunk;
    shrunk.initial_metric_weight = 10.0 * d;
    NutsKernel kept(EuclideanMetric::dense(cov), shrunk);
    Rng start(72);
    const Run b = run(kept, target, exact_draw(target, start), 1000, 4000, 73);
    MESSAGE("mean leapfrog steps, iterations 100-249: towards 1e-3 I ", leapfrogs_after_first_window(a),
            ", towards the initial metric ", leapfrogs_after_first_window(b));
    // A metric equal to the covariance makes the target isotropic: depth 3-4 trees.
    CHECK(leapfrogs_after_first_window(b) < 16);
    CHECK(leapfrogs_after_first_window(a) > 3 * leapfrogs_after_first_window(b));
    // The adapted metric stays near the initial one, and the chain samples the target.
    const Eigen::MatrixXd m = kept.metric().inverse();
    for (int i = 0; i < d; ++i) CHECK(std::abs(m(i, i) / cov(i, i) - 1) < 0.2);
    // Means and variances (100 checks at 4 MCSE; the 1,275 covariances are left to the lower-
    // dimensional tests), and the whitened squared norm, chi-squared with d degrees of freedom.
    const Eigen::MatrixXd centred = b.draws.rowwise() - mean.transpose();
    for (int i = 0; i < d; ++i) {
        CAPTURE(i);
        const Eigen::VectorXd xi = centred.col(i);
        CHECK(std::abs(xi.mean()) <= 4 * batch_means_mcse(xi));
        const Eigen::VectorXd sq = xi.cwiseAbs2();
        CHECK(std::abs(sq.mean() - cov(i, i)) <= 4 * batch_means_mcse(sq));
    }
    const Eigen::MatrixXd whitened = cov.llt().matrixL().solve(centred.transpose());
    const Eigen::VectorXd r2 = whitened.colwise().squaredNorm().transpose();
    CHECK(std::abs(r2.mean() - d) <= 4 * batch_means_mcse(r2));
    CHECK(count_divergent(b.infos) == 0);

    NutsOptions bad;
    bad.initial_metric_weight = -1;
    CHECK_THROWS_AS(NutsKernel(d, MetricKind::dense, bad), std::invalid_argument);
    bad.initial_metric_weight = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(NutsKernel(d, MetricKind::diagonal, bad), std::invalid_argument);
}

TEST_CASE("without restarts before the last window, warmup costs fewer leapfrog steps for the same step size") {
    // The 50-D Gaussian above, started from its covariance with 10 d pseudo-draws, as vbn fit
    // starts NUTS from a Laplace fit. Over four seeds, Stan's schedule (restart after every
    // window) against restarting only before the terminal buffer.
    const int d = 50;
    const Eigen::VectorXd mean = graded_mean(d);
    const Eigen::MatrixXd cov = graded_covariance(d);
    GaussianDensity target(mean, cov);
    const auto leapfrogs = [](const std::vector<TransitionInfo>& infos, std::size_t from, std::size_t to) {
        long n = 0;
        for (std::size_t i = from; i < to; ++i) n += infos[i].n_leapfrog;
        return n;
    };
    // Dual averaging restarted after window end e: iteration e + 1 ran at the search's ε and
    // the first update then set log ε = log 10 ε − (δ − α) / ((1 + t0) γ).
    const auto restarted_after = [](const std::vector<TransitionInfo>& w, std::size_t e) {
        const double alpha = std::min(w[e + 1].accept_stat, 1.0);
        const double first = 10 * w[e + 1].stepsize * std::exp(-(0.8 - alpha) / (11 * 0.05));
        return std::abs(w[e + 2].stepsize / first - 1) < 1e-9;
    };
    long warmup_stan = 0, warmup_carried = 0, windows_stan = 0, windows_carried = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        CAPTURE(seed);
        Rng start(100 + seed);
        const Eigen::VectorXd x0 = exact_draw(target, start);
        NutsOptions stan;
        stan.initial_metric_weight = 10.0 * d;
        NutsOptions carried = stan;
        carried.restart_stepsize_each_window = false;
        NutsKernel a(EuclideanMetric::dense(cov), stan);
        NutsKernel b(EuclideanMetric::dense(cov), carried);
        const Run ra = run(a, target, x0, 1000, 1000, 200 + seed);
        const Run rb = run(b, target, x0, 1000, 1000, 200 + seed);
        // Identical up to the first window's end (iteration 99), apart from then on.
        for (std::size_t i = 0; i < 100; ++i) REQUIRE(ra.warmup[i].stepsize == rb.warmup[i].stepsize);
        for (const std::size_t e : {99, 149, 249, 449, 949}) {
            CAPTURE(e);
            CHECK(restarted_after(ra.warmup, e));
            CHECK(restarted_after(rb.warmup, e) == (e == 949));
        }
        warmup_stan += leapfrogs(ra.warmup, 0, 1000);
        warmup_carried += leapfrogs(rb.warmup, 0, 1000);
        // The slow windows after the first one, where the restarts differ.
        windows_stan += leapfrogs(ra.warmup, 100, 950);
        windows_carried += leapfrogs(rb.warmup, 100, 950);
        // The terminal buffer restarts dual averaging in both: the step sizes it fixes are
        // alike and give acceptance near delta = 0.8.
        CHECK(b.stepsize() / a.stepsize() > 0.75);
        CHECK(b.stepsize() / a.stepsize() < 1.33);
        CHECK(std::abs(mean_accept_stat(rb.infos) - 0.8) < 0.1);
        CHECK(count_divergent(rb.infos) == 0);
        // The chain samples the target: the whitened squared norm is chi-squared with d
        // degrees of freedom.
        const Eigen::MatrixXd centred = rb.draws.rowwise() - mean.transpose();
        const Eigen::MatrixXd whitened = cov.llt().matrixL().solve(centred.transpose());
        const Eigen::VectorXd r2 = whitened.colwise().squaredNorm().transpose();
        CHECK(std::abs(r2.mean() - d) <= 4 * batch_means_mcse(r2));
    }
    MESSAGE("warmup leapfrog steps per chain, Stan's restarts ", warmup_stan / 4, ", carried on ", warmup_carried / 4,
            "; iterations 100-949: ", windows_stan / 4, ", ", windows_carried / 4);
    CHECK(windows_carried < 0.9 * windows_stan);
    CHECK(warmup_carried < 0.93 * warmup_stan);
}

// ---------------------------------------------------------------------------------------------
// Invariance

TEST_CASE("NUTS with fixed step size and unit metric leaves a correlated 2-D Gaussian invariant") {
    GaussianDensity target = correlated_2d_rho09();
    for (MetricKind kind : {MetricKind::diagonal, MetricKind::dense}) {
        CAPTURE(static_cast<int>(kind));
        NutsOptions options;
        options.stepsize = 0.3;
        options.adapt_stepsize = false;
        options.adapt_metric = false;
        NutsKernel kernel(metric_of_kind(kind, 2), options);
        Rng start(21);
        const Run r = run(kernel, target, exact_draw(target, start), 0, 5000, 5);
        const std::string failures = check_moments(r.draws, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        for (const auto& info : r.infos) REQUIRE(info.stepsize == 0.3);
    }
}

TEST_CASE("NUTS with a coarse step size still leaves a 5-D standard normal invariant") {
    // Near the leapfrog's stability limit (ε < 2) energy errors are large, so the
    // multinomial weights decide where the chain goes: wrong weights would show here first.
    const int d = 5;
    IidNormal target(d, 1.0);
    for (MetricKind kind : {MetricKind::diagonal, MetricKind::dense}) {
        for (double eps : {1.2, 1.7}) {
            CAPTURE(static_cast<int>(kind));
            CAPTURE(eps);
            NutsOptions options;
            options.stepsize = eps;
            options.adapt_stepsize = false;
            options.adapt_metric = false;
            NutsKernel kernel(metric_of_kind(kind, d), options);
            const Run r = run(kernel, target, Eigen::VectorXd::Zero(d), 0, 8000, 83);
            const std::string failures = check_moments(r.draws, Eigen::VectorXd::Zero(d), Eigen::MatrixXd::Identity(d, d));
            CHECK_MESSAGE(failures.empty(), failures);
            const Eigen::VectorXd r2 = r.draws.rowwise().squaredNorm();
            CHECK(std::abs(r2.mean() - d) <= 4 * batch_means_mcse(r2));
            Eigen::VectorXd energy(static_cast<Eigen::Index>(r.infos.size()));
            for (std::size_t i = 0; i < r.infos.size(); ++i) energy(static_cast<Eigen::Index>(i)) = r.infos[i].energy;
            CHECK(std::abs(energy.mean() - d) <= 4 * batch_means_mcse(energy));
        }
    }
}

TEST_CASE("adapted NUTS leaves a correlated 2-D Gaussian (rho = 0.9) invariant, diagonal and dense metric") {
    GaussianDensity target = correlated_2d_rho09();
    for (MetricKind kind : {MetricKind::diagonal, MetricKind::dense}) {
        CAPTURE(static_cast<int>(kind));
        NutsKernel kernel(2, kind);
        const Run r = run(kernel, target, Eigen::Vector2d(3.0, 3.0), 1000, 8000, 17);
        const std::string failures = check_moments(r.draws, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        CHECK(count_divergent(r.infos) == 0);
    }
}

TEST_CASE("adapted NUTS leaves a 10-D Gaussian with scales 0.1 to 10 invariant, diagonal and dense metric") {
    GaussianDensity target = scaled_10d();
    const int d = 10;
    for (MetricKind kind : {MetricKind::diagonal, MetricKind::dense}) {
        CAPTURE(static_cast<int>(kind));
        NutsKernel kernel(d, kind);
        const Run r = run(kernel, target, Eigen::VectorXd::Zero(d), 1000, 6000, 29);
        const std::string failures = check_moments(r.draws, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        CHECK(count_divergent(r.infos) == 0);
        // The Hamiltonian at the selected point: −log p has mean d/2 and the kinetic energy of
        // the momentum at that point d/2 as well, so E[energy] = d.
        Eigen::VectorXd energy(static_cast<Eigen::Index>(r.infos.size()));
        for (std::size_t i = 0; i < r.infos.size(); ++i) energy(static_cast<Eigen::Index>(i)) = r.infos[i].energy;
        CHECK(std::abs(energy.mean() - d) <= 4 * batch_means_mcse(energy));
    }
}

// ---------------------------------------------------------------------------------------------
// Adaptation at work

TEST_CASE("the adapted step size gives mean acceptance near delta = 0.8 on a 100-D iid Gaussian") {
    const int d = 100;
    IidNormal target(d, 2.0);
    NutsKernel kernel(d, MetricKind::diagonal);
    Rng start(8);
    Eigen::VectorXd x0(d);
    for (int i = 0; i < d; ++i) x0(i) = 2.0 * start.normal();
    const Run r = run(kernel, target, x0, 1000, 1000, 13);
    const double accept = mean_accept_stat(r.infos);
    CHECK(std::abs(accept - 0.8) < 0.1);
    // The stats report the same mean over every transition since construction.
    std::vector<KernelStats> stats;
    kernel.collect_stats(stats);
    REQUIRE(stats.size() == 1);
    CHECK(stats[0].name == "nuts");
    CHECK(stats[0].proposed == 2000);
    const double all = (mean_accept_stat(r.warmup) + accept) / 2;
    CHECK(std::abs(stats[0].rate() - all) <= 0.5 / 2000 + 1e-12);
    // The adapted variances are near 4 and the step size is frozen after warmup.
    const Eigen::VectorXd v = kernel.metric().inverse_diagonal();
    CHECK(v.mean() == doctest::Approx(4.0).epsilon(0.1));
    for (const auto& info : r.infos) REQUIRE(info.stepsize == kernel.stepsize());
}

TEST_CASE("dense metric adaptation recovers the covariance of a correlated Gaussian within 20%") {
    // The metric is the last warmup window's covariance estimate. After 1,000 warmup
    // iterations that window holds 500 draws, whose autocorrelation leaves an entry's standard
    // error near 9% of sqrt(s_ii s_jj): 20% was then a bound of 2-3 standard errors over 55
    // entries, and a build whose floating point differs (AVX-512 at -O2) crossed it. 4,000
    // iterations give a last window of 2,300 draws, and 20% is about 5 standard errors.
    GaussianDensity target = scaled_10d();
    const int d = 10;
    NutsKernel kernel(d, MetricKind::dense);
    run(kernel, target, Eigen::VectorXd::Zero(d), 4000, 0, 41);
    const Eigen::MatrixXd m = kernel.metric().inverse();
    const Eigen::MatrixXd& s = target.covariance();
    for (int i = 0; i < d; ++i) {
        for (int j = 0; j < d; ++j) {
            CAPTURE(i);
            CAPTURE(j);
            CHECK(std::abs(m(i, j) - s(i, j)) <= 0.2 * std::sqrt(s(i, i) * s(j, j)));
        }
    }
    // A diagonal metric recovers the variances, from the same 4,000 iterations. After 1,000 the
    // worst of the ten was 9-24% off over seeds 43-50 (an AMD EPYC build at -march=native
    // crossed 20% at seed 43); after 4,000, 4.3-8.0%.
    NutsKernel diag(d, MetricKind::diagonal);
    run(diag, target, Eigen::VectorXd::Zero(d), 4000, 0, 43);
    const Eigen::VectorXd v = diag.metric().inverse_diagonal();
    for (int i = 0; i < d; ++i) CHECK(std::abs(v(i) - s(i, i)) <= 0.2 * s(i, i));
}

TEST_CASE("a given initial metric is kept when metric adaptation is off") {
    GaussianDensity target = scaled_10d();
    const int d = 10;
    NutsOptions options;
    options.adapt_metric = false;
    NutsKernel kernel(EuclideanMetric::dense(target.covariance()), options);
    const Run r = run(kernel, target, target.mean(), 300, 2000, 47);
    CHECK(kernel.metric().inverse() == target.covariance());
    // With the exact covariance as metric the target is an isotropic Gaussian to the sampler.
    CHECK(kernel.stepsize() > 0.5);
    const std::string failures = check_moments(r.draws, target.mean(), target.covariance());
    CHECK_MESSAGE(failures.empty(), failures);

    NutsKernel diag(EuclideanMetric::diagonal(target.covariance().diagonal()), options);
    run(diag, target, target.mean(), 300, 0, 48);
    CHECK(diag.metric().inverse_diagonal() == Eigen::VectorXd(target.covariance().diagonal()));
    CHECK(d == diag.metric().dim());
}

// ---------------------------------------------------------------------------------------------
// Divergences and non-finite targets

TEST_CASE("the funnel produces flagged divergences, never NaN") {
    const int d = 10;
    Funnel target(d);
    NutsKernel kernel(d, MetricKind::diagonal);
    Eigen::VectorXd x0 = Eigen::VectorXd::Constant(d, 0.5);
    const Run r = run(kernel, target, x0, 500, 2000, 53);
    const long divergent = count_divergent(r.infos) + count_divergent(r.warmup);
    CHECK(divergent > 0);
    CHECK(kernel.divergences() == divergent);
    CHECK(r.draws.allFinite());
    for (const auto& info : r.infos) {
        REQUIRE(std::isfinite(info.energy));
        REQUIRE(info.accept_stat >= 0);
        REQUIRE(info.accept_stat <= 1);
        REQUIRE(std::isfinite(info.stepsize));
    }
}

TEST_CASE("a step size far too large for a narrow target diverges at once and leaves the state alone") {
    Eigen::Vector2d mean(1.0, 2.0);
    GaussianDensity target(mean, 1e-6 * Eigen::Matrix2d::Identity());
    NutsOptions options;
    options.adapt_stepsize = false;
    options.adapt_metric = false;
    NutsKernel kernel(2, MetricKind::diagonal, options);
    Rng rng(59);
    State state;
    state.x = mean + Eigen::Vector2d(1e-3, -1e-3);
    state.lp = target.log_density(state.x);
    const Eigen::VectorXd x0 = state.x;
    for (int i = 0; i < 20; ++i) {
        TransitionInfo info;
        kernel.step(state, target, rng, info);
        CHECK(info.divergent);
        CHECK(info.n_leapfrog == 1);
        CHECK(info.treedepth == 0);
        CHECK(std::isfinite(info.accept_stat));
        CHECK(info.accept_stat < 1e-100);
        CHECK(state.x == x0);
        CHECK(std::isfinite(info.energy));
    }
    // With warmup the step size, in the target's units, shrinks below the leapfrog's
    // stability limit 2σ and divergences stop.
    NutsKernel adapted(2, MetricKind::diagonal);
    const Run r = run(adapted, target, x0, 500, 1000, 61);
    CHECK(adapted.stepsize() * std::sqrt(adapted.metric().inverse_diagonal().maxCoeff()) < 2e-3);
    CHECK(count_divergent(r.infos) == 0);
    const std::string failures = check_moments(r.draws, target.mean(), target.covariance());
    CHECK_MESSAGE(failures.empty(), failures);
}

TEST_CASE("a target that fails in part of the space is sampled as truncated to where it is finite") {
    // N(0, 1) truncated to x_0 <= 1: E x_0 = −φ(1)/Φ(1), Var x_0 = 1 − φ(1)/Φ(1) − (φ(1)/Φ(1))².
    const double ratio = 0.24197072451914337 / 0.8413447460685429;
    const double mean0 = -ratio;
    const double var0 = 1 - ratio - ratio * ratio;
    for (Failure mode : {Failure::nan_density, Failure::nan_gradient, Failure::minus_infinity}) {
        CAPTURE(static_cast<int>(mode));
        TruncatedNormal target(mode);
        NutsKernel kernel(2, MetricKind::diagonal);
        const Run r = run(kernel, target, Eigen::Vector2d(0.0, 0.0), 1000, 8000, 67);
        CHECK(r.draws.allFinite());
        CHECK(r.draws.col(0).maxCoeff() <= 1.0);
        CHECK(count_divergent(r.infos) > 0);
        const Eigen::VectorXd x0 = r.draws.col(0);
        const Eigen::VectorXd sq = (x0.array() - mean0).square().matrix();
        const Eigen::VectorXd x1 = r.draws.col(1);
        const Eigen::VectorXd sq1 = x1.cwiseProduct(x1);
        CHECK(std::abs(x0.mean() - mean0) <= 4 * batch_means_mcse(x0));
        CHECK(std::abs(sq.mean() - var0) <= 4 * batch_means_mcse(sq));
        CHECK(std::abs(x1.mean()) <= 4 * batch_means_mcse(x1));
        CHECK(std::abs(sq1.mean() - 1.0) <= 4 * batch_means_mcse(sq1));
        for (const auto& info : r.infos) REQUIRE(std::isfinite(info.energy));
    }
}

TEST_CASE("NUTS reports bad input clearly") {
    GaussianDensity target = correlated_2d_rho09();
    Rng rng(1);
    TransitionInfo info;

    SUBCASE("a state of the wrong size") {
        NutsKernel kernel(3, MetricKind::diagonal);
        State state{Eigen::Vector2d(0, 0), 0};
        CHECK_THROWS_WITH_AS(kernel.step(state, target, rng, info), doctest::Contains("dimension 3"), std::invalid_argument);
    }
    SUBCASE("a start where the density is not finite") {
        TruncatedNormal bad(Failure::nan_density);
        NutsKernel kernel(2, MetricKind::dense);
        State state{Eigen::Vector2d(2, 0), 0};
        CHECK_THROWS_WITH_AS(kernel.step(state, bad, rng, info), doctest::Contains("current state"), std::domain_error);
    }
    SUBCASE("invalid metrics") {
        Eigen::Matrix2d not_pd;
        not_pd << 1, 2, 2, 1;
        CHECK_THROWS_WITH_AS(EuclideanMetric::dense(not_pd), doctest::Contains("positive definite"), std::invalid_argument);
        Eigen::Matrix2d asym;
        asym << 1, 0.5, 0.2, 1;
        CHECK_THROWS_WITH_AS(EuclideanMetric::dense(asym), doctest::Contains("not symmetric"), std::invalid_argument);
        CHECK_THROWS_WITH_AS(EuclideanMetric::diagonal(Eigen::Vector2d(1, -1)), doctest::Contains("entry 2"),
                             std::invalid_argument);
        CHECK_THROWS_AS(EuclideanMetric::diagonal(Eigen::Vector2d(1, kNaN)), std::invalid_argument);
    }
    SUBCASE("invalid options") {
        NutsOptions options;
        options.max_depth = 0;
        CHECK_THROWS_AS(NutsKernel(2, MetricKind::diagonal, options), std::invalid_argument);
        options = {};
        options.stepsize = -1;
        CHECK_THROWS_AS(NutsKernel(2, MetricKind::diagonal, options), std::invalid_argument);
        options = {};
        options.dual_averaging.delta = 1;
        CHECK_THROWS_AS(NutsKernel(2, MetricKind::diagonal, options), std::invalid_argument);
        CHECK_THROWS_AS(NutsKernel(2, MetricKind::diagonal).begin_warmup(-1), std::invalid_argument);
    }
    SUBCASE("an improper target stops the step size search") {
        Flat flat;
        NutsKernel kernel(2, MetricKind::diagonal);
        State state{Eigen::Vector2d(0, 0), 0};
        kernel.begin_warmup(100);
        CHECK_THROWS_WITH_AS(kernel.step(state, flat, rng, info), doctest::Contains("improper"), std::runtime_error);
    }
}

TEST_CASE("NUTS reuses the gradient of its last point only while the state and target are unchanged") {
    GaussianDensity target = correlated_2d_rho09();
    GaussianDensity other = correlated_2d_rho09();
    NutsOptions options;
    options.stepsize = 0.5;
    options.adapt_stepsize = false;
    options.adapt_metric = false;
    NutsKernel kernel(2, MetricKind::diagonal, options);
    Rng rng(89);
    State state{Eigen::Vector2d(0.2, -0.4), 0};
    state.lp = target.log_density(state.x);
    const auto step_calls = [&](Density& t, GaussianDensity& counter) {
        const long before = counter.gradient_calls;
        TransitionInfo info;
        kernel.step(state, t, rng, info);
        return counter.gradient_calls - before - info.n_leapfrog;
    };
    CHECK(step_calls(target, target) == 1);  // first step: the start's gradient
    CHECK(step_calls(target, target) == 0);
    CHECK(step_calls(target, target) == 0);
    state.x(0) += 0.1;  // another kernel moved the state
    state.lp = target.log_density(state.x);
    CHECK(step_calls(target, target) == 1);
    state.lp += 1.0;  // the target changed under the same x
    CHECK(step_calls(target, target) == 1);
    CHECK(step_calls(other, other) == 1);  // another target object
    CHECK(step_calls(other, other) == 0);
}

TEST_CASE("NUTS does not allocate in step() after the first call, window ends included") {
    if (vbn::test::allocation_count() < 0) {
        MESSAGE("allocation counting is not available in this build");
        return;
    }
    GaussianDensity target = vbn::test::correlated_10d();
    for (MetricKind kind : {MetricKind::diagonal, MetricKind::dense}) {
        CAPTURE(static_cast<int>(kind));
      for (double weight : {0.0, 20.0}) {
        CAPTURE(weight);
        NutsOptions options;
        options.initial_metric_weight = weight;
        NutsKernel kernel(10, kind, options);
        Rng rng(97);
        State state{Eigen::VectorXd::Zero(10), 0};
        state.lp = target.log_density(state.x);
        TransitionInfo info;
        kernel.begin_warmup(300);  // windows close after iterations 99, 149 and 249
        kernel.step(state, target, rng, info);
        const long before = vbn::test::allocation_count();
        for (int i = 1; i < 300; ++i) kernel.step(state, target, rng, info);
        kernel.end_warmup();
        for (int i = 0; i < 300; ++i) kernel.step(state, target, rng, info);
        CHECK(vbn::test::allocation_count() - before == 0);
      }
    }
}

// ---------------------------------------------------------------------------------------------
// Tree depth and reproducibility

TEST_CASE("the tree depth limit is respected") {
    GaussianDensity target = scaled_10d();
    const int d = 10;
    NutsOptions options;
    options.max_depth = 4;
    options.stepsize = 0.05;
    options.adapt_stepsize = false;
    options.adapt_metric = false;
    NutsKernel kernel(d, MetricKind::diagonal, options);
    const Run r = run(kernel, target, target.mean(), 0, 300, 71);
    int at_limit = 0;
    for (const auto& info : r.infos) {
        REQUIRE(info.treedepth <= 4);
        REQUIRE(info.n_leapfrog <= 15);
        if (info.treedepth == 4) {
            ++at_limit;
            CHECK(info.n_leapfrog == 15);
        }
    }
    CHECK(at_limit > 250);  // a 0.05 step across scales up to 10 needs hundreds of steps

    // With the default limit of 10 on the same badly scaled target, no transition exceeds it.
    NutsOptions deep = options;
    deep.max_depth = 10;
    NutsKernel unlimited(d, MetricKind::diagonal, deep);
    const Run u = run(unlimited, target, target.mean(), 0, 50, 73);
    for (const auto& info : u.infos) {
        REQUIRE(info.treedepth <= 10);
        REQUIRE(info.n_leapfrog <= 1023);
    }
}

TEST_CASE("NUTS is reproducible for a fixed seed, and a clone continues identically") {
    GaussianDensity target = vbn::test::correlated_10d();
    const int d = 10;
    for (MetricKind kind : {MetricKind::diagonal, MetricKind::dense}) {
        CAPTURE(static_cast<int>(kind));
        NutsKernel a(d, kind), b(d, kind), c(d, kind);
        const Run ra = run(a, target, Eigen::VectorXd::Zero(d), 200, 200, 79);
        const Run rb = run(b, target, Eigen::VectorXd::Zero(d), 200, 200, 79);
        const Run rc = run(c, target, Eigen::VectorXd::Zero(d), 200, 200, 80);
        CHECK(ra.draws == rb.draws);
        CHECK(a.stepsize() == b.stepsize());
        CHECK(a.metric().inverse() == b.metric().inverse());
        CHECK(ra.draws != rc.draws);

        // Cloned after warmup: the copy and the original make the same moves from the same
        // state and stream.
        auto copy = a.clone();
        Rng r1(99), r2(99);
        State s1{ra.draws.row(199).transpose(), 0}, s2 = s1;
        for (int i = 0; i < 50; ++i) {
            TransitionInfo i1, i2;
            a.step(s1, target, r1, i1);
            copy->step(s2, target, r2, i2);
            REQUIRE(s1.x == s2.x);
            REQUIRE(i1.n_leapfrog == i2.n_leapfrog);
        }
    }
}
