// The tempered correction (runtime/variational/tempered.hpp) against grid integration on a
// posterior with a long tail: a logistic regression with Cauchy priors on nearly separated
// data (tests/corpus/cauchy_logit: the slope's sd is 5.6 about a mean of 13.4). Tolerances
// come from the spread of independent runs (each mean's and sd's Monte Carlo error).
#include "runtime/variational/tempered.hpp"

#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/variational/vb_refine.hpp"
#include "validation/grid_posterior.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <string>

namespace {

using namespace vbn;

const std::string tail_dir = std::string(VBN_SOURCE_DIR) + "/tests/corpus/cauchy_logit/";

struct TailModel {
    ir::Graph graph = load_model(tail_dir + "model.vbn");
    Dataset data = load_csv(graph, tail_dir + "data.csv");
    Target target{graph, data};
    // (b, w) ∈ [-15, 12] × [-20, 220]: the border's density is below e^-20 of the top (checked)
    GridPosterior grid = grid_posterior(target, {-15, -20}, {12, 220}, 1201);
};

const TailModel& tail_model() {
    static const TailModel m;
    return m;
}

// The t at the exact mode with the Laplace covariance: where the importance correction centres.
inference::GaussianProposal at_mode(const Target& target) {
    const NewtonMode m = posterior_mode(target, Eigen::VectorXd::Zero(target.dim()));
    REQUIRE(m.converged);
    return inference::GaussianProposal(m.mode, m.cov, 30);
}

// Each run's mean and sd of parameter k, and their spreads' standard errors of the pooled values.
struct RunMoments {
    double mean = 0, mean_se = 0, sd = 0, sd_se = 0;
};

RunMoments run_moments(const TemperedDraws& t, int runs, int k) {
    const Eigen::Index n = t.draws.cols() / runs;
    Eigen::VectorXd means(runs), sds(runs);
    for (int r = 0; r < runs; ++r) {
        const Eigen::ArrayXd x = t.draws.row(k).segment(r * n, n).transpose().array();
        means[r] = x.mean();
        sds[r] = std::sqrt((x - x.mean()).square().mean());
    }
    const auto se = [runs](const Eigen::VectorXd& v) {
        return std::sqrt((v.array() - v.mean()).square().sum() / (runs - 1) / runs);
    };
    return {means.mean(), se(means), sds.mean(), se(sds)};
}

}  // namespace

TEST_CASE("tempering reaches a long-tailed posterior: means, sds and the evidence against a grid") {
    const TailModel& m = tail_model();
    REQUIRE(m.grid.edge_log_ratio < -20);
    TemperOptions o;
    o.runs = 8;  // 7 degrees of freedom for each Monte Carlo error
    o.seed = 5;
    const TemperedDraws t = temper(m.target, at_mode(m.target), o);
    REQUIRE(t.draws.cols() == 8 * o.particles);
    CHECK(t.max_rhat < 1.01);
    CHECK(t.acceptance > 0.2);
    for (int k = 0; k < 2; ++k) {
        CAPTURE(k);
        const RunMoments rm = run_moments(t, o.runs, k);
        const double grid_sd = std::sqrt(m.grid.cov(k, k));
        CHECK(rm.mean_se < 0.1 * grid_sd);  // precise enough for the checks to mean something
        CHECK(std::abs(rm.mean - m.grid.mean[k]) < 4 * rm.mean_se);
        CHECK(std::abs(rm.sd - grid_sd) < 4 * rm.sd_se + 0.02 * grid_sd);  // + the sd's bias at n per run
    }
    // The evidence: the mean over runs of each run's estimate, against the grid's.
    double top = -1e300;
    for (double v : t.run_log_evidence) top = std::max(top, v);
    Eigen::VectorXd z(o.runs);
    for (int r = 0; r < o.runs; ++r) z[r] = std::exp(t.run_log_evidence[static_cast<std::size_t>(r)] - top);
    const double log_z = top + std::log(z.mean()) + m.target.log_constant();
    const double se = std::sqrt((z.array() - z.mean()).square().sum() / (o.runs - 1) / o.runs) / z.mean();
    CHECK(std::abs(log_z - m.grid.log_evidence - m.target.log_constant()) < 4 * se + 1e-3);
}

TEST_CASE("refine turns to tempering when the importance weights' k-hat reaches 0.7, and reports it") {
    const TailModel& m = tail_model();
    const VbFit fit = variational(m.graph, m.data).best_fit();
    RefineOptions ro;
    ro.seed = 2;
    ro.widen = 0.3;  // a proposal far too narrow for the slope's tail: k-hat well above 0.7
    ro.defensive = 0;
    std::string told;
    ro.note = [&told](const std::string& s) { told = s; };
    const RefinedPosterior r = refine(m.target, fit, ro);
    REQUIRE(r.tempered);
    CHECK(r.pareto_k >= 0.7);
    CHECK(told.find("tempering") != std::string::npos);
    CHECK(r.reliable());
    CHECK(r.runs == 4);
    for (int k = 0; k < 2; ++k) {
        CAPTURE(k);
        const double grid_sd = std::sqrt(m.grid.cov(k, k));
        CHECK(r.mcse[k] > 0);
        CHECK(std::abs(r.mean[k] - m.grid.mean[k]) < 4 * r.mcse[k] + 0.02 * grid_sd);
    }
    CHECK(describe(r, ro).find("tempering") != std::string::npos);

    // Turned off, the same proposal's answer is the importance weights', flagged unreliable.
    ro.temper = RefineOptions::Temper::never;
    const RefinedPosterior plain = refine(m.target, fit, ro);
    CHECK_FALSE(plain.tempered);
    CHECK_FALSE(plain.reliable());
    CHECK(plain.tempering_stopped.empty());

    // Past its budget of gradients tempering gives up, and the importance answer stands, flagged.
    ro.temper = RefineOptions::Temper::when_needed;
    ro.tempering.max_gradients = 1000;
    const RefinedPosterior stopped = refine(m.target, fit, ro);
    CHECK_FALSE(stopped.tempered);
    CHECK_FALSE(stopped.reliable());
    CHECK(stopped.tempering_stopped.find("budget of 250 gradients per run") != std::string::npos);
    CHECK(stopped.mean == plain.mean);
    CHECK(describe(stopped, ro).find("run vbn fit") != std::string::npos);
}

TEST_CASE("tempering: the same draws whatever the threads; bad options and interruption") {
    const TailModel& m = tail_model();
    const inference::GaussianProposal centre = at_mode(m.target);
    TemperOptions o;
    o.particles = 100;
    o.runs = 2;
    o.threads = 1;
    const TemperedDraws one = temper(m.target, centre, o);
    o.threads = 2;
    const TemperedDraws two = temper(m.target, centre, o);
    CHECK(one.draws == two.draws);

    TemperOptions bad;
    bad.particles = 10;
    CHECK_THROWS_AS(temper(m.target, centre, bad), Error);
    bad = {};
    bad.runs = 1;
    CHECK_THROWS_AS(temper(m.target, centre, bad), Error);
    bad = {};
    bad.correlation = 1;
    CHECK_THROWS_AS(temper(m.target, centre, bad), Error);

    std::atomic<bool> stop{true};
    o.interrupt = &stop;
    try {
        temper(m.target, centre, o);
        FAIL("an interrupted run returned");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::cancelled);
    }
}
