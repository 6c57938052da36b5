// Adaptive independence MH through regeneration (variational-mcmc.txt §4.4, Fig. 10, eq. 17)
// and regenerative standard errors. Statistical checks use fixed seeds and tolerances of 4
// Monte Carlo standard errors (batch means, see gaussian_targets.hpp).
#include "gaussian_targets.hpp"

#include "inference/chains.hpp"
#include "inference/diagnostics.hpp"
#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/random_walk.hpp"
#include "inference/regeneration.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

using namespace vbn::inference;
using vbn::test::GaussianDensity;
using vbn::test::HoledDensity;
using vbn::test::inf;

namespace {

// A deliberately poor proposal: mean shifted by `shift` sds (alternating signs), covariance
// scaled by `scale` < 1 (too narrow, as variational fits tend to be).
GaussianProposal poor_proposal(const GaussianDensity& t, double shift, double scale,
                               double df = GaussianProposal::gaussian_df) {
    return vbn::test::shifted_proposal(t, shift, scale, df);
}

struct RegenRun {
    Eigen::MatrixXd draws;         // sampling phase, one row per step
    Eigen::VectorXd accept;        // accept_stat of each sampling step
    std::vector<long> flagged;     // sampling steps whose TransitionInfo says regenerated
    double max_lp_error = 0;       // max |State::lp - log p(x)| / (1 + |log p(x)|) over every step
    long refits_at_end_of_warmup = 0;
};

// Warmup then sampling with one kernel, checking State::lp against the density after every step.
RegenRun run_regen(RegenerationKernel& kernel, Density& target, const Eigen::VectorXd& init, int warmup, int draws,
        std::uint64_t seed) {
    RegenRun r;
    vbn::test::KernelRun run = vbn::test::run_warmup_then_sample(
        kernel, target, [&](const Eigen::VectorXd& x) { return target.log_density(x); }, init, warmup, draws, seed,
        [&] { r.refits_at_end_of_warmup = kernel.refits(); });
    r.draws = std::move(run.draws);
    r.max_lp_error = run.max_lp_error;
    r.accept.resize(draws);
    for (int i = 0; i < draws; ++i) {
        const TransitionInfo& info = run.info[static_cast<std::size_t>(i)];
        r.accept[i] = info.accept_stat;
        if (info.regenerated) r.flagged.push_back(i);
    }
    return r;
}

// Mean accept_stat of a fixed independence sampler with proposal q, and its batch-means MCSE:
// the acceptance "before adaptation".
std::pair<double, double> fixed_acceptance(const GaussianProposal& q, GaussianDensity& target, const Eigen::VectorXd& init,
                                           int steps, std::uint64_t seed) {
    IndependenceMH kernel(q);
    Rng rng(seed, 9);
    State state{init, target.exact(init)};
    Eigen::VectorXd accept(steps);
    for (int i = 0; i < steps; ++i) {
        TransitionInfo info;
        kernel.step(state, target, rng, info);
        accept[i] = info.accept_stat;
    }
    return {accept.mean(), vbn::test::batch_means_mcse(accept)};
}

// Regeneration probability of eq. (17), case by case in linear space.
double r_eq17(double w_current, double w_proposed, double c) {
    if (w_current > c && w_proposed > c) return std::max(c / w_current, c / w_proposed);
    if (w_current < c && w_proposed < c) return std::max(w_current / c, w_proposed / c);
    return 1.0;
}

// The same from eq. (15) with the atom of eq. (16): s(θ) ν(θ*) / K(θ, θ*) per unit q(θ*).
double r_eq15(double w_current, double w_proposed, double c) {
    const double s = std::min(1.0, c / w_current);
    const double nu = std::min(1.0, w_proposed / c);
    const double accept = std::min(1.0, w_proposed / w_current);
    return s * nu / accept;
}

// log of a Gamma(a, 1) variable: p(x) ∝ exp(a x - e^x), skewed to the left with an exponential
// left tail; E[x] = ψ(a), E[e^x] = a.
class LogGamma : public Density {
public:
    explicit LogGamma(double a) : a_(a) {}
    int dim() const override { return 1; }
    double log_density(const Eigen::VectorXd& x) override { return a_ * x[0] - std::exp(x[0]); }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        grad[0] = a_ - std::exp(x[0]);
        return log_density(x);
    }

private:
    double a_;
};

// Tour counts in consecutive blocks of `block` steps.
std::vector<long> counts_per_block(const std::vector<long>& times, long block, int blocks) {
    std::vector<long> counts(static_cast<std::size_t>(blocks), 0);
    for (long t : times) {
        if (t / block < blocks) ++counts[static_cast<std::size_t>(t / block)];
    }
    return counts;
}

}  // namespace

TEST_CASE("eq. (17): the regeneration probability matches its three cases and eq. (15) with the atom of eq. (16)") {
    const std::vector<double> grid{1e-6, 0.01, 0.3, 0.5, 1.0, 2.0, 7.5, 1e3, 1e8};
    int checked = 0;
    for (double wx : grid) {
        for (double wy : grid) {
            for (double c : grid) {
                INFO("w(θ) = " << wx << ", w(θ*) = " << wy << ", c = " << c);
                const double r = std::exp(log_regeneration_probability(std::log(wx), std::log(wy), std::log(c)));
                CHECK(r == doctest::Approx(r_eq17(wx, wy, c)).epsilon(1e-12));
                CHECK(r == doctest::Approx(r_eq15(wx, wy, c)).epsilon(1e-12));
                CHECK(r > 0);
                CHECK(r <= 1);
                ++checked;
            }
        }
    }
    CHECK(checked == 729);
    // Far outside the range where the linear-space form is usable, log space still works.
    CHECK(log_regeneration_probability(-800.0, 700.0, 10.0) == 0.0);
    CHECK(log_regeneration_probability(900.0, 800.0, 10.0) == doctest::Approx(-790.0));
    CHECK(log_regeneration_probability(-900.0, -800.0, 10.0) == doctest::Approx(-810.0));
    // A weight of zero (p = 0) never regenerates with both below c; NaN never regenerates.
    CHECK(log_regeneration_probability(-inf, -5.0, 0.0) == -5.0);
    CHECK(log_regeneration_probability(std::numeric_limits<double>::quiet_NaN(), 0.0, 0.0) == -inf);
}

TEST_CASE("adaptation through regeneration leaves a correlated 2-D Gaussian invariant from a poor proposal and raises acceptance") {
    GaussianDensity target = vbn::test::correlated_2d();
    const GaussianProposal q0 = poor_proposal(target, 0.5, 0.5);
    const Eigen::VectorXd init = target.mean() + Eigen::VectorXd::Constant(2, 0.5);
    const auto fixed = fixed_acceptance(q0, target, init, 5000, 3);
    // Named values, not structured bindings: INFO captures them, which Clang before 16 rejects.
    const double before = fixed.first, before_se = fixed.second;

    struct Config {
        std::string name;
        RegenerationOptions options;
    };
    std::vector<Config> configs(3);
    configs[0].name = "default: c from the median recent weight";
    configs[1].name = "c from the best point (Fig. 10)";
    configs[1].options.c_rule = RegenerationConstant::best_point;
    // Re-fit at every regeneration with a single restart try and c above the typical weight
    // (so a try is accepted with probability about 1/2): the no-adaptation fallback is taken
    // thousands of times.
    configs[2].name = "re-fit at every regeneration, one restart try, c = 2 w";
    configs[2].options.refit_growth = 0;
    configs[2].options.max_restart_tries = 1;
    configs[2].options.c_factor = 2;

    for (const Config& config : configs) {
        INFO(config.name);
        RegenerationKernel kernel(q0, config.options);
        const RegenRun r = run_regen(kernel, target, init, 2000, 20000, 17);
        const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        CHECK(r.max_lp_error < 1e-12);
        const double after = r.accept.mean();
        const double after_se = vbn::test::batch_means_mcse(r.accept);
        INFO("acceptance before " << before << " ± " << before_se << ", after " << after << " ± " << after_se);
        CHECK(after - before > 4 * std::hypot(before_se, after_se));
        CHECK(kernel.refits() > r.refits_at_end_of_warmup);  // still adapting after warmup
        CHECK(static_cast<long>(r.flagged.size()) == static_cast<long>(kernel.regeneration_times().size()));
        CHECK(std::equal(r.flagged.begin(), r.flagged.end(), kernel.regeneration_times().begin()));
        if (config.options.max_restart_tries == 1) CHECK(kernel.failed_restarts() > 1000);
    }
}

TEST_CASE("adaptation through regeneration leaves a correlated 10-D Gaussian invariant from a poor t proposal and raises acceptance") {
    GaussianDensity target = vbn::test::correlated_10d();
    const GaussianProposal q0 = poor_proposal(target, 0.3, 0.6, 5.0);
    const Eigen::VectorXd init = target.mean() + Eigen::VectorXd::Constant(10, 0.5);
    const auto fixed = fixed_acceptance(q0, target, init, 5000, 3);
    // Named values, not structured bindings: INFO captures them, which Clang before 16 rejects.
    const double before = fixed.first, before_se = fixed.second;

    RegenerationKernel kernel(q0);
    const RegenRun r = run_regen(kernel, target, init, 5000, 20000, 5);
    const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
    CHECK_MESSAGE(failures.empty(), failures);
    CHECK(r.max_lp_error < 1e-12);
    const double after = r.accept.mean();
    const double after_se = vbn::test::batch_means_mcse(r.accept);
    INFO("acceptance before " << before << " ± " << before_se << ", after " << after << " ± " << after_se);
    CHECK(after - before > 4 * std::hypot(before_se, after_se));
    // The re-fitted proposal keeps the t family and moves towards the target.
    CHECK(kernel.proposal().df() == 5.0);
    const Eigen::VectorXd ratio = kernel.proposal().scale_matrix().diagonal().cwiseQuotient(target.covariance().diagonal());
    CHECK(ratio.minCoeff() > 0.8);
    CHECK(ratio.maxCoeff() < 1.25);
}

TEST_CASE("on a skewed 1-D target (the log of a Gamma(2) variable) the mean and E[exp x] are right within 4 MCSE") {
    LogGamma target(2.0);
    const double mean = 1.0 - 0.57721566490153286;  // ψ(2) = 1 - γ
    // Too far right and too narrow (the target's sd is 0.80); a t keeps the weights bounded
    // against the exponential left tail.
    const GaussianProposal q0(Eigen::VectorXd::Constant(1, 1.5), Eigen::MatrixXd::Constant(1, 1, 0.1), 5.0);
    RegenerationKernel kernel(q0);
    const RegenRun r = run_regen(kernel, target, Eigen::VectorXd::Constant(1, 1.5), 2000, 20000, 23);
    const Eigen::VectorXd x = r.draws.col(0);
    const Eigen::VectorXd ex = x.array().exp();
    const double se = vbn::test::batch_means_mcse(x);
    const double se_exp = vbn::test::batch_means_mcse(ex);
    CHECK(std::abs(x.mean() - mean) < 4 * se);
    CHECK(std::abs(ex.mean() - 2.0) < 4 * se_exp);
    // The variance ψ'(2) = π²/6 - 1 within 4 MCSE of the squared deviations.
    const Eigen::VectorXd sq = (x.array() - mean).square();
    CHECK(std::abs(sq.mean() - (std::numbers::pi * std::numbers::pi / 6 - 1)) < 4 * vbn::test::batch_means_mcse(sq));
    // The regenerative estimate agrees with the batch-means one.
    const RegenerativeEstimate e = regenerative_estimate(x, r.flagged);
    CHECK(std::abs(e.mean - mean) < 4 * e.se);
    CHECK(e.se == doctest::Approx(se).epsilon(0.3));
}

TEST_CASE("adaptation goes on after warmup; freeze_after_warmup stops it but keeps detecting tours") {
    GaussianDensity target = vbn::test::correlated_2d();
    const Eigen::VectorXd init = target.mean();
    {
        RegenerationKernel kernel(poor_proposal(target, 0.5, 0.5));
        const RegenRun r = run_regen(kernel, target, init, 500, 10000, 2);
        CHECK(kernel.refits() > r.refits_at_end_of_warmup);
    }
    {
        RegenerationOptions options;
        options.freeze_after_warmup = true;
        RegenerationKernel kernel(poor_proposal(target, 0.5, 0.5), options);
        Rng rng(2, 7);
        State state{init, target.exact(init)};
        TransitionInfo info;
        kernel.begin_warmup(2000);
        for (int i = 0; i < 2000; ++i) kernel.step(state, target, rng, info);
        kernel.end_warmup();
        const long refits = kernel.refits();
        const Eigen::VectorXd mean = kernel.proposal().mean();
        const double log_c = kernel.log_c();
        CHECK(refits > 0);
        for (int i = 0; i < 5000; ++i) kernel.step(state, target, rng, info);
        CHECK(kernel.refits() == refits);
        CHECK(kernel.proposal().mean() == mean);
        CHECK(kernel.log_c() == log_c);
        CHECK(kernel.regeneration_times().size() > 1000);
    }
    {
        RegenerationOptions options;
        options.adapt = false;
        const GaussianProposal q0 = poor_proposal(target, 0.5, 0.5);
        RegenerationKernel kernel(q0, options);
        const RegenRun r = run_regen(kernel, target, init, 500, 5000, 2);
        CHECK(kernel.refits() == 0);
        CHECK(kernel.proposal().mean() == q0.mean());
        CHECK(kernel.regenerations() > 0);
    }
}

TEST_CASE("regenerative standard errors agree with batch-means and ESS-based MCSE within 30% on an iid-ish chain") {
    GaussianDensity target = vbn::test::correlated_2d();
    // Close to the target and a little wide: acceptance about 0.8, short autocorrelations.
    Eigen::VectorXd mean = target.mean();
    mean[0] += 0.2;
    RegenerationKernel kernel(GaussianProposal(mean, 1.5 * target.covariance()));
    const RegenRun r = run_regen(kernel, target, target.mean(), 1000, 20000, 31);
    REQUIRE(r.flagged.size() > 1000);
    for (int j = 0; j < 2; ++j) {
        INFO("coordinate " << j);
        const Eigen::VectorXd x = r.draws.col(j);
        const RegenerativeEstimate e = regenerative_estimate(x, r.flagged);
        const double bm = vbn::test::batch_means_mcse(x);
        const double ess_based = mcse_mean(x);
        INFO("regenerative " << e.se << ", batch means " << bm << ", ESS-based " << ess_based << ", tours " << e.tours);
        CHECK(e.se == doctest::Approx(bm).epsilon(0.3));
        CHECK(e.se == doctest::Approx(ess_based).epsilon(0.3));
        CHECK(std::abs(e.mean - target.mean()[j]) < 4 * e.se);
        CHECK(e.tours == static_cast<long>(r.flagged.size()) - 1);
        CHECK(e.tour_length_cv < 0.05);
    }
}

TEST_CASE("with q = p every move regenerates with probability 1/2, so tours grow linearly with iterations") {
    GaussianDensity target = vbn::test::correlated_2d();
    RegenerationOptions options;
    options.adapt = false;
    RegenerationKernel kernel(GaussianProposal(target.mean(), target.covariance()), options);
    const RegenRun r = run_regen(kernel, target, target.mean(), 0, 40000, 41);
    // w = p / q is constant, so every proposal is accepted, c is half of w, and eq. (17) gives
    // r = c / w = 1/2: the count in n steps is Binomial(n, 1/2).
    CHECK(r.accept.minCoeff() == doctest::Approx(1.0));
    const std::vector<long> counts = counts_per_block(r.flagged, 10000, 4);
    for (long c : counts) CHECK(std::abs(c - 5000) < 4 * 50);  // sd sqrt(10000 / 4) = 50
    CHECK(std::abs(static_cast<long>(r.flagged.size()) - 20000) < 4 * 100);
}

TEST_CASE("tours of an adapting chain grow linearly with iterations") {
    GaussianDensity target = vbn::test::correlated_2d();
    RegenerationKernel kernel(poor_proposal(target, 0.5, 0.5));
    const RegenRun r = run_regen(kernel, target, target.mean(), 2000, 40000, 43);
    REQUIRE(r.flagged.size() > 100);
    // Renewal theory: a count over n steps has variance n σ² / μ³ (μ, σ² the tour length's
    // mean and variance).
    Eigen::VectorXd lengths(static_cast<Eigen::Index>(r.flagged.size()) - 1);
    for (Eigen::Index k = 0; k < lengths.size(); ++k) {
        lengths[k] = static_cast<double>(r.flagged[static_cast<std::size_t>(k + 1)] - r.flagged[static_cast<std::size_t>(k)]);
    }
    const double mu = lengths.mean();
    const double var = (lengths.array() - mu).square().sum() / static_cast<double>(lengths.size() - 1);
    const double expected = 10000 / mu;
    const double sd = std::sqrt(10000 * var / (mu * mu * mu));
    for (long c : counts_per_block(r.flagged, 10000, 4)) {
        INFO("count " << c << ", expected " << expected << " ± " << sd);
        CHECK(std::abs(static_cast<double>(c) - expected) < 4 * sd);
    }
}

TEST_CASE("with a t proposal, c from recent weights gives far shorter tours than c from the best point") {
    // For a t q the weight p/q is smallest at the mode, so half the weight there (Fig. 10) lies
    // below the weights the chain sees and eq. (17) rarely fires; the median recent weight does not.
    GaussianDensity target = vbn::test::correlated_10d();
    const GaussianProposal q(target.mean(), target.covariance(), 5.0);
    RegenerationOptions best;
    best.c_rule = RegenerationConstant::best_point;
    RegenerationKernel by_median(q), by_best(q, best);
    const RegenRun m = run_regen(by_median, target, target.mean(), 2000, 10000, 51);
    const RegenRun b = run_regen(by_best, target, target.mean(), 2000, 10000, 51);
    INFO("tours: " << m.flagged.size() << " with the median rule, " << b.flagged.size() << " with the best point");
    CHECK(m.flagged.size() > 3 * b.flagged.size());
    CHECK(std::abs(m.accept.mean() - b.accept.mean()) < 0.05);  // the chains themselves mix alike
}

TEST_CASE("the same seed gives the same draws and tours; a clone continues identically") {
    GaussianDensity target = vbn::test::correlated_10d();
    const GaussianProposal q0 = poor_proposal(target, 0.3, 0.8, 8.0);
    RegenerationKernel a(q0), b(q0);
    const RegenRun ra = run_regen(a, target, target.mean(), 1000, 3000, 7);
    const RegenRun rb = run_regen(b, target, target.mean(), 1000, 3000, 7);
    CHECK(ra.draws == rb.draws);
    CHECK(ra.flagged == rb.flagged);
    CHECK(a.refits() == b.refits());
    RegenerationKernel c(q0);
    const RegenRun rc = run_regen(c, target, target.mean(), 1000, 3000, 8);
    CHECK(rc.draws != ra.draws);

    // A clone taken mid-run carries the adaptation state, the history and the counters.
    Rng rng1(5, 1);
    State s1{target.mean(), target.exact(target.mean())};
    TransitionInfo info;
    for (int i = 0; i < 500; ++i) a.step(s1, target, rng1, info);
    std::unique_ptr<Kernel> copy = a.clone();
    Rng rng2 = rng1;
    State s2 = s1;
    for (int i = 0; i < 2000; ++i) {
        TransitionInfo i1, i2;
        a.step(s1, target, rng1, i1);
        copy->step(s2, target, rng2, i2);
        REQUIRE(s1.x == s2.x);
        REQUIRE(i1.regenerated == i2.regenerated);
    }
    const auto& cloned = dynamic_cast<const RegenerationKernel&>(*copy);
    CHECK(cloned.refits() == a.refits());
    CHECK(cloned.regenerations() == a.regenerations());
}

TEST_CASE("through run_chains: same draws and tours with 1 and 2 threads; tours pooled over chains") {
    const GaussianDensity target = vbn::test::correlated_2d();
    const vbn::test::GaussianFactory factory(target);
    const RegenerationKernel prototype(poor_proposal(target, 0.5, 0.5));
    ChainSettings settings;
    settings.warmup = 1000;
    settings.draws = 5000;
    settings.chains = 3;
    settings.seed = 11;
    settings.threads = 1;
    const std::vector<ChainResult> one = run_chains(factory, prototype, {target.mean()}, settings);
    settings.threads = 2;
    const std::vector<ChainResult> two = run_chains(factory, prototype, {target.mean()}, settings);
    std::vector<Eigen::VectorXd> series;
    std::vector<std::vector<long>> starts;
    for (std::size_t c = 0; c < one.size(); ++c) {
        REQUIRE(one[c].ok());
        CHECK(one[c].draws == two[c].draws);
        CHECK(tour_starts(one[c].info) == tour_starts(two[c].info));
        REQUIRE(one[c].stats.size() == 1);
        CHECK(one[c].stats[0].name == "regeneration (gaussian)");
        CHECK(one[c].stats[0].proposed == 5000);
        series.push_back(one[c].draws.col(1));
        starts.push_back(tour_starts(one[c].info));
        CHECK(starts.back().size() > 500);
    }
    const RegenerativeEstimate pooled = regenerative_estimate(series, starts);
    long tours = 0;
    for (const auto& s : starts) tours += static_cast<long>(s.size()) - 1;
    CHECK(pooled.tours == tours);
    CHECK(std::abs(pooled.mean - target.mean()[1]) < 4 * pooled.se);
    // Pooling three chains' tours shrinks the error about like 1 / sqrt(3).
    const RegenerativeEstimate single = regenerative_estimate(series[0], starts[0]);
    CHECK(pooled.se < single.se);
}

TEST_CASE("inside a mixture with a random walk, adaptation through regeneration keeps a 2-D Gaussian invariant") {
    GaussianDensity target = vbn::test::correlated_2d();
    Mixture mixture(0.5, RegenerationKernel(poor_proposal(target, 0.5, 0.5)), RandomWalk(target.covariance()));
    Rng rng(3, 7);
    State state{target.mean(), target.exact(target.mean())};
    mixture.begin_warmup(2000);
    TransitionInfo info;
    for (int i = 0; i < 2000; ++i) mixture.step(state, target, rng, info);
    mixture.end_warmup();
    Eigen::MatrixXd draws(20000, 2);
    long flagged = 0;
    for (int i = 0; i < 20000; ++i) {
        info = TransitionInfo{};
        mixture.step(state, target, rng, info);
        draws.row(i) = state.x.transpose();
        if (info.regenerated) {
            ++flagged;
            CHECK(info.kernel == 0);
        }
    }
    const std::string failures = vbn::test::check_moments(draws, target.mean(), target.covariance());
    CHECK_MESSAGE(failures.empty(), failures);
    CHECK(flagged > 1000);
}

TEST_CASE("no allocation in step() after the first call, re-fits and restarts included") {
    if (vbn::test::allocation_count() < 0) {
        MESSAGE("allocation counting is not available in this build");
        return;
    }
    for (int d : {10, 40}) {
        INFO("dimension " << d);
        Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(d, d);
        GaussianDensity target(Eigen::VectorXd::Zero(d), cov);
        RegenerationOptions options;
        options.min_history = 50;
        options.min_moves = 20;
        options.refit_growth = 0;  // re-fit at every regeneration
        // Short histories would give poor fits in 40 dimensions: a heavy shrinkage towards the
        // initial proposal keeps every re-fit close to it, so the chain keeps regenerating.
        options.prior_weight = 1e5;
        RegenerationKernel kernel(GaussianProposal(Eigen::VectorXd::Constant(d, 0.1), 1.1 * cov, d == 10 ? 8.0 : inf),
                                  options);
        kernel.reserve_regeneration_times(10000);
        Rng rng(1, 2);
        State state{target.mean(), target.exact(target.mean())};
        TransitionInfo info;
        kernel.begin_warmup(200);
        kernel.step(state, target, rng, info);
        const long before = vbn::test::allocation_count();
        const long refits = kernel.refits();
        for (int i = 0; i < 400; ++i) kernel.step(state, target, rng, info);
        kernel.end_warmup();
        for (int i = 0; i < 400; ++i) kernel.step(state, target, rng, info);
        CHECK(vbn::test::allocation_count() - before == 0);
        CHECK(kernel.refits() - refits > 20);
    }
}

TEST_CASE("proposals and restarts where the density is NaN or +inf are rejected") {
    HoledDensity target(vbn::test::correlated_2d(), 1.5);
    RegenerationOptions options;
    options.refit_growth = 0;
    // Wide, so that many proposals and restart tries land in the holes.
    RegenerationKernel kernel(GaussianProposal(Eigen::Vector2d(1.0, 0.0), 4.0 * Eigen::Matrix2d::Identity()), options);
    Rng rng(4, 4);
    State state{Eigen::Vector2d(0.0, -2.0), 0.0};
    state.lp = target.log_density(state.x);
    TransitionInfo info;
    for (int i = 0; i < 5000; ++i) {
        kernel.step(state, target, rng, info);
        REQUIRE(std::isfinite(state.lp));
        REQUIRE(state.x[0] <= 1.5);
        REQUIRE(state.x[1] <= 1.5);
    }
    CHECK(kernel.refits() > 10);
    CHECK(kernel.restart_tries() > kernel.refits());
}

TEST_CASE("regenerative estimate: hand-computed tours; draws outside complete tours are not used") {
    // Draws 0 (before the first start) and 7..8 (an unfinished tour) are left out; the tours
    // are {1, 2}, {3, 4, 5}, {6}: Y = 3, 12, 6 and N = 2, 3, 1.
    const Eigen::VectorXd draws = (Eigen::VectorXd(9) << 50, 1, 2, 3, 4, 5, 6, 70, 80).finished();
    const std::vector<long> starts{1, 3, 6, 7};
    const RegenerativeEstimate e = regenerative_estimate(draws, starts);
    CHECK(e.tours == 3);
    CHECK(e.draws == 6);
    CHECK(e.mean == doctest::Approx(3.5));
    // Σ (Y - μ̂ N)² = 16 + 2.25 + 6.25; se = sqrt(24.5) / Σ N.
    CHECK(e.se == doctest::Approx(std::sqrt(24.5) / 6));
    // N̄ = 2, Σ (N - N̄)² = 2: cv = sqrt(2) / (T N̄).
    CHECK(e.tour_length_cv == doctest::Approx(std::sqrt(2.0) / 6));

    // A large offset moves the mean and leaves the error alone.
    const Eigen::VectorXd shifted = draws.array() + 1e9;
    const RegenerativeEstimate s = regenerative_estimate(shifted, starts);
    CHECK(s.mean == doctest::Approx(1e9 + 3.5).epsilon(1e-15));
    CHECK(s.se == doctest::Approx(e.se).epsilon(1e-6));

    // Pooling a chain with itself doubles the tours and divides the error by sqrt(2).
    const std::vector<Eigen::VectorXd> chains{draws, draws};
    const std::vector<std::vector<long>> both{starts, starts};
    const RegenerativeEstimate p = regenerative_estimate(chains, both);
    CHECK(p.tours == 6);
    CHECK(p.mean == doctest::Approx(3.5));
    CHECK(p.se == doctest::Approx(e.se / std::sqrt(2.0)));

    // Tour starts from transition flags.
    std::vector<TransitionInfo> info(6);
    info[1].regenerated = info[4].regenerated = true;
    CHECK(tour_starts(info) == std::vector<long>{1, 4});
}

TEST_CASE("regenerative estimate: bad tour starts are errors naming the entry; too few tours or bad draws give NaN") {
    const Eigen::VectorXd draws = Eigen::VectorXd::LinSpaced(10, 0, 9);
    auto message = [&](const std::vector<long>& starts) {
        try {
            (void)regenerative_estimate(draws, starts);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message({2, 5, 5}) == "regenerative estimate: tour starts must increase, but start 2 is 5 after 5");
    CHECK(message({2, 10}) == "regenerative estimate: tour start 1 is 10, outside the draws 0..9");
    CHECK(message({-1, 3}) == "regenerative estimate: tour start 0 is -1, outside the draws 0..9");
    const std::vector<Eigen::VectorXd> chains{draws, draws};
    const std::vector<std::vector<long>> starts{{1, 4}, {3, 2}};
    CHECK_THROWS_WITH_AS(regenerative_estimate(chains, starts),
                         "regenerative estimate: chain 1: tour starts must increase, but start 1 is 2 after 3",
                         std::invalid_argument);
    CHECK_THROWS_AS(regenerative_estimate(chains, std::vector<std::vector<long>>{{1, 4}}), std::invalid_argument);

    const RegenerativeEstimate none = regenerative_estimate(draws, std::vector<long>{4});
    CHECK(none.tours == 0);
    CHECK(std::isnan(none.mean));
    CHECK(std::isnan(none.se));
    const RegenerativeEstimate one = regenerative_estimate(draws, std::vector<long>{2, 5});
    CHECK(one.tours == 1);
    CHECK(one.mean == doctest::Approx(3.0));
    CHECK(std::isnan(one.se));
    Eigen::VectorXd bad = draws;
    bad[3] = std::numeric_limits<double>::quiet_NaN();
    const RegenerativeEstimate nan = regenerative_estimate(bad, std::vector<long>{2, 5, 7});
    CHECK(std::isnan(nan.mean));
    CHECK(std::isnan(nan.se));
}

TEST_CASE("regeneration kernel: invalid options, wrong sizes and a non-finite current state are errors") {
    const GaussianProposal q(Eigen::Vector2d::Zero(), Eigen::Matrix2d::Identity());
    auto message = [&](auto change) {
        RegenerationOptions o;
        change(o);
        try {
            RegenerationKernel k(q, o);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message([](RegenerationOptions& o) { o.c_factor = 0; }) == "regeneration: c_factor must be positive and finite, got 0");
    CHECK(message([](RegenerationOptions& o) { o.inflation = -1; }) == "regeneration: inflation must be positive and finite, got -1");
    CHECK(message([](RegenerationOptions& o) { o.refit_growth = inf; }) == "regeneration: refit_growth must be >= 0 and finite, got inf");
    CHECK(message([](RegenerationOptions& o) { o.max_restart_tries = 0; }) == "regeneration: max_restart_tries must be >= 1, got 0");
    CHECK(message([](RegenerationOptions& o) { o.recent_states = 0; }) == "regeneration: recent_states must be >= 1, got 0");
    CHECK(message([](RegenerationOptions& o) { o.min_history = -3; }) == "regeneration: min_history must be >= 0, got -3");
    CHECK(message([](RegenerationOptions& o) { o.min_moves = -1; }) == "regeneration: min_moves must be >= 0, got -1");
    CHECK(message([](RegenerationOptions& o) { o.regularisation = -1e-3; }) ==
          "regeneration: regularisation must be >= 0 and finite, got -0.001");
    CHECK(message([](RegenerationOptions& o) { o.prior_weight = std::nan(""); }) == "regeneration: prior_weight must be finite, got nan");

    GaussianDensity target3(Eigen::VectorXd::Zero(3), Eigen::MatrixXd::Identity(3, 3));
    RegenerationKernel kernel(q);
    Rng rng(1, 1);
    TransitionInfo info;
    State state{Eigen::VectorXd::Zero(3), 0.0};
    CHECK_THROWS_WITH_AS(kernel.step(state, target3, rng, info),
                         "regeneration: the proposal has 2 dimensions but the target has 3", std::invalid_argument);

    GaussianDensity target2 = vbn::test::correlated_2d();
    RegenerationKernel fresh(q);
    State bad{Eigen::Vector2d::Zero(), std::numeric_limits<double>::quiet_NaN()};
    CHECK_THROWS_WITH_AS(fresh.step(bad, target2, rng, info), "regeneration: the log density at the current state is NaN",
                         std::domain_error);
    CHECK(fresh.name() == "regeneration (gaussian)");
}

TEST_CASE("GaussianProposal::assign replaces the location and scale in place, keeps the family, refuses bad input") {
    GaussianProposal q(Eigen::Vector2d::Zero(), Eigen::Matrix2d::Identity(), 7.0);
    Eigen::Matrix2d cov;
    cov << 2.0, 0.5, 0.5, 1.0;
    Eigen::Matrix2d lower = cov.llt().matrixL();
    lower(0, 1) = 99;  // the strictly upper part is ignored
    q.assign(Eigen::Vector2d(1.0, -1.0), lower);
    GaussianProposal expected(Eigen::Vector2d(1.0, -1.0), cov, 7.0);
    CHECK(q.df() == 7.0);
    CHECK(q.scale_matrix().isApprox(cov, 1e-14));
    const Eigen::Vector2d x(0.3, 0.2);
    CHECK(q.log_density(x) == doctest::Approx(expected.log_density(x)).epsilon(1e-14));

    CHECK_THROWS_AS(q.assign(Eigen::Vector3d::Zero(), Eigen::Matrix3d::Identity()), std::invalid_argument);
    CHECK_THROWS_AS(q.assign(Eigen::Vector2d(std::nan(""), 0.0), lower), std::invalid_argument);
    Eigen::Matrix2d singular = lower;
    singular(1, 1) = 0;
    CHECK_THROWS_WITH_AS(q.assign(Eigen::Vector2d::Zero(), singular), "proposal: Cholesky diagonal entry 1 is 0, not positive",
                         std::invalid_argument);
    // A refused assignment leaves the proposal as it was.
    CHECK(q.mean() == Eigen::Vector2d(1.0, -1.0));
    CHECK(q.log_density(x) == doctest::Approx(expected.log_density(x)).epsilon(1e-14));
}
