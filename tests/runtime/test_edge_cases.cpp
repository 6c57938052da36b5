// Numerical edge cases: data and models at the borders of what the methods handle. Each runs
// variational EM and MCMC and checks that nothing is NaN or infinite, and, where an exact
// answer is cheap (a 1-D grid over the exact log posterior, or a posterior equal to the
// prior), that the answers agree with it.
#include "runtime/sampling/fit.hpp"

#include "inference/rng.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "tests/runtime/fit_options.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace vbn;

Dataset csv_data(const ir::Graph& g, const std::string& csv) {
    std::istringstream in(csv);
    return load_csv(g, in, "edge.csv");
}

// Rows simulated forward from the model at θ (as `vbn simulate --params` does).
Dataset simulated(const ir::Graph& g, const Eigen::VectorXd& theta, long rows, std::uint64_t seed) {
    inference::Rng rng(seed, 0);
    SimulateOptions so;
    so.rows = rows;
    std::ostringstream out;
    simulate_csv(g, theta, so, rng, out);
    return csv_data(g, out.str());
}

struct Moments {
    double mean = 0, sd = 0;
};

// The exact posterior of a one-parameter model by the trapezoid rule on [lo, hi].
Moments grid_moments(const ir::Graph& g, const Dataset& d, double lo, double hi, int points = 20001) {
    const Target t(g, d);
    std::vector<double> lp(static_cast<std::size_t>(points));
    double top = -INFINITY;
    const double h = (hi - lo) / (points - 1);
    for (int i = 0; i < points; ++i) {
        Eigen::VectorXd th(1);
        th[0] = lo + h * i;
        lp[static_cast<std::size_t>(i)] = t.log_density(th);
        top = std::max(top, lp[static_cast<std::size_t>(i)]);
    }
    double z = 0, m1 = 0, m2 = 0;
    for (int i = 0; i < points; ++i) {
        const double w = std::exp(lp[static_cast<std::size_t>(i)] - top) * (i == 0 || i == points - 1 ? 0.5 : 1.0);
        const double x = lo + h * i;
        z += w;
        m1 += w * x;
        m2 += w * x * x;
    }
    const double mean = m1 / z;
    return {mean, std::sqrt(m2 / z - mean * mean)};
}

FitOptions quick(const std::string& method, int warmup = 300, int draws = 600) {
    FitOptions o = vbn::test::short_run(method, 2, warmup, draws, 11);
    o.threads = 1;
    return o;
}

// Summary rows of a fit's kept draws, every chain required to have succeeded and every
// draw and log density to be finite.
std::vector<SummaryRow> checked_summary(const FitResult& r) {
    std::vector<Eigen::MatrixXd> draws;
    for (const auto& c : r.chains) {
        REQUIRE_MESSAGE(c.ok(), c.error);
        REQUIRE(c.draws.allFinite());
        REQUIRE(c.lp.allFinite());
        Eigen::MatrixXd d(c.draws.rows(), static_cast<Eigen::Index>(r.order.size()));
        for (std::size_t j = 0; j < r.order.size(); ++j) d.col(static_cast<Eigen::Index>(j)) = c.draws.col(r.order[j]);
        draws.push_back(std::move(d));
    }
    return summarize(r.names, draws);
}

void check_vb_finite(const VbResult& v) {
    const VbFit& q = v.best_fit();
    CHECK(q.mean.allFinite());
    for (const Eigen::MatrixXd& c : q.covs) CHECK(c.allFinite());
    CHECK(std::isfinite(q.elbo));
}

// Every MCMC method's posterior mean of the single parameter agrees with the reference
// within 5 Monte Carlo standard errors (plus the grid's own error, negligible here).
// `row` is the reported parameter compared (in output order).
const std::vector<std::string> all_methods{"rwm", "varmh", "varblock", "varmix", "regen", "nuts"};

void check_methods_against(const ir::Graph& g, const Dataset& d, const Moments& ref, std::size_t row = 0,
                           const std::vector<std::string>& methods = all_methods) {
    for (const std::string& m : methods) {
        CAPTURE(m);
        const FitResult r = fit(g, d, quick(m, 500, 2000));
        check_vb_finite(r.vb);
        const auto rows = checked_summary(r);
        REQUIRE(rows.size() > row);
        const SummaryRow& x = rows[row];
        CHECK(std::isfinite(x.mcse_mean));
        CHECK(std::abs(x.mean - ref.mean) < 5 * x.mcse_mean);
        CHECK(std::abs(x.sd - ref.sd) < 0.15 * ref.sd);
    }
}

}  // namespace

TEST_CASE("separable data: the prior alone holds the weight, and every method agrees with a grid") {
    // y = x in every row: the likelihood rises towards w = +inf and only the N(0, 3^2) prior
    // keeps the posterior proper. Its mean is large (several sds of the data's information)
    // but finite.
    const ir::Graph g = compile_model("node x ~ bernoulli(0.5); node y ~ logistic(w * x); w ~ normal(0, 3);", "sep.vbn");
    std::string csv = "x,y\n";
    for (int i = 0; i < 40; ++i) csv += i % 2 ? "1,1\n" : "-1,-1\n";
    const Dataset d = csv_data(g, csv);
    const Moments ref = grid_moments(g, d, -10, 40);
    CHECK(ref.mean > 3);
    const VbResult v = variational(g, d);
    check_vb_finite(v);
    // VB's ξ-bound is tight where the data push η far from 0: its mean is within a posterior sd.
    CHECK(std::abs(v.best_fit().mean[0] - ref.mean) < ref.sd);
    check_methods_against(g, d, ref);
}

// At w = ±1e3, P(y = x) = g(1000) is 1 in double precision: the data are separable and the
// posterior is the N(0, 1000^2) prior cut by a logistic step, with mean near 1e3·sqrt(2/π).
struct BigWeights {
    ir::Graph g = compile_model("node x ~ bernoulli(0.5); node y ~ logistic(w * x); w ~ normal(0, 1000);", "big.vbn");
    Dataset data(double w) const { return simulated(g, Eigen::VectorXd::Constant(1, w), 200, 3); }
};

TEST_CASE("weights near 1e3: data simulated at w = 1000 with a wide prior") {
    const BigWeights b;
    for (const double w : {1000.0, -1000.0}) {
        CAPTURE(w);
        const Dataset d = b.data(w);
        const Moments ref = grid_moments(b.g, d, -5000, 5000, 200001);
        CHECK(std::abs(ref.mean) > 700);
        CHECK(std::abs(ref.mean) < 900);
        const VbResult v = variational(b.g, d);
        check_vb_finite(v);
        CHECK(v.best_fit().mean[0] * w > 0);
        check_methods_against(b.g, d, ref, 0, {"rwm", "varmix", "nuts"});
    }
}

// Here the ξ-bound's q(w) is far narrower than the posterior (whose sd is about 600): kernels
// proposing from q never reach the bulk of the posterior while looking converged. The
// Laplace fit at the exact mode (near the logistic step, far below the mean) is too narrow as
// well, which the pilot draws of runtime/sampling/laplace_proposal.hpp detect; the re-fitted heavy-tailed
// proposal then covers the half-normal-like posterior.
TEST_CASE("independence kernels on a posterior much wider than q, from the checked Laplace proposal") {
    const BigWeights b;
    for (const double w : {1000.0, -1000.0}) {
        CAPTURE(w);
        const Dataset d = b.data(w);
        check_methods_against(b.g, d, grid_moments(b.g, d, -5000, 5000, 200001), 0, {"varmh", "varblock", "regen"});
    }
}

// The paper's proposal, the variational fit itself (--proposal vb), still fails there: kept
// visible as a known failure whose symptom is asserted, so that any other failure (a chain
// that throws, a non-finite draw) fails the test, and so does the failure going away. The
// symptom: the chains stay where q is, far narrower than the posterior and far below its mean.
TEST_CASE("KNOWN FAILURE, asserted: independence kernels proposing from the variational fit miss a posterior much wider than q") {
    const BigWeights b;
    const Dataset d = b.data(1000.0);
    const Moments ref = grid_moments(b.g, d, -5000, 5000, 200001);
    FitOptions o = quick("varblock", 500, 2000);
    o.proposal = "vb";
    const auto rows = checked_summary(fit(b.g, d, o));
    INFO("mean " << rows[0].mean << " (mcse " << rows[0].mcse_mean << "), sd " << rows[0].sd << "; exact mean " << ref.mean
                 << ", sd " << ref.sd);
    CHECK_MESSAGE(rows[0].mean < ref.mean - 5 * rows[0].mcse_mean,
                  "the known failure is gone: turn this case into a check that the mean agrees");
    CHECK(rows[0].sd < 0.5 * ref.sd);
}

TEST_CASE("a node constant in every row: the data say nothing about b - w, whose posterior is its prior") {
    // y ~ logistic(b + w a) with a = +1 always: only b + w is informed. Under iid N(0, 2^2)
    // priors b - w is independent of b + w, so its posterior is N(0, 8) exactly.
    const ir::Graph g = compile_model("node a ~ bernoulli(0.5); node y ~ logistic(b + w * a); b, w ~ normal(0, 2);", "c.vbn");
    std::string csv = "a,y\n";
    for (int i = 0; i < 60; ++i) csv += i % 3 ? "1,1\n" : "1,-1\n";
    const Dataset d = csv_data(g, csv);
    check_vb_finite(variational(g, d));
    for (const std::string m : {"varblock", "nuts"}) {
        CAPTURE(m);
        const FitResult r = fit(g, d, quick(m, 500, 3000));
        checked_summary(r);
        std::vector<Eigen::MatrixXd> diff;
        for (const auto& c : r.chains) diff.push_back(c.draws.col(0) - c.draws.col(1));
        const auto rows = summarize({"b-w"}, diff);
        CHECK(std::abs(rows[0].mean) < 5 * rows[0].mcse_mean);
        CHECK(std::abs(rows[0].sd - std::sqrt(8.0)) < 0.15 * std::sqrt(8.0));
    }
}

TEST_CASE("T = 1: one row, against a grid") {
    const ir::Graph g = compile_model("node y ~ logistic(b); b ~ normal(0.5, 1.5);", "t1.vbn");
    const Dataset d = csv_data(g, "y\n1\n");
    CHECK(d.rows == 1);
    const Moments ref = grid_moments(g, d, -12, 12);
    check_vb_finite(variational(g, d));
    check_methods_against(g, d, ref);
}

TEST_CASE("an observed node missing in every row: its weights keep their prior") {
    const ir::Graph g = compile_model("node x ~ bernoulli(0.5); node y ~ logistic(c * x); c ~ normal(1, 2);", "miss.vbn");
    std::string csv = "x,y\n";
    for (int i = 0; i < 30; ++i) csv += i % 2 ? "1,NA\n" : "-1,\n";
    const Dataset d = csv_data(g, csv);
    const VbResult v = variational(g, d);
    check_vb_finite(v);
    CHECK(v.best_fit().mean[0] == doctest::Approx(1).epsilon(1e-6));
    check_methods_against(g, d, Moments{1, 2});
}

TEST_CASE("a hidden node with no children: its bias keeps its prior") {
    const ir::Graph g =
        compile_model("node h hidden ~ logistic(c); node y ~ logistic(b); c ~ normal(-1, 0.5); b ~ normal(0, 1);", "barren.vbn");
    std::string csv = "y\n";
    for (int i = 0; i < 20; ++i) csv += i % 4 ? "1\n" : "-1\n";
    const Dataset d = csv_data(g, csv);
    check_vb_finite(variational(g, d));
    check_methods_against(g, d, Moments{-1, 0.5}, 0);
}

TEST_CASE("a chain of 100 nodes: every block finite, one block against its grid") {
    std::string text = "node x1 ~ bernoulli(0.5);\n";
    for (int k = 2; k <= 100; ++k) text += fmt::format("node x{} ~ logistic(w{} * x{});\nw{} ~ normal(0, 2);\n", k, k, k - 1, k);
    const ir::Graph g = compile_model(text, "chain.vbn");
    REQUIRE(g.dim == 99);
    const Dataset d = simulated(g, Eigen::VectorXd::Constant(99, 1.5), 300, 5);
    check_vb_finite(variational(g, d));
    const FitResult r = fit(g, d, quick("varblock", 200, 800));
    const auto rows = checked_summary(r);
    // Fully observed, so the posterior factorises: w2 alone is the posterior of a one-node model
    // on columns x1, x2 with the same prior.
    const ir::Graph one = compile_model("node x1 ~ bernoulli(0.5); node x2 ~ logistic(w2 * x1); w2 ~ normal(0, 2);", "one.vbn");
    std::ostringstream cols;
    cols << "x1,x2\n";
    for (int p = 0; p < d.patterns; ++p)
        for (int n = 0; n < static_cast<int>(d.count[static_cast<std::size_t>(p)]); ++n)
            cols << int(d.value(p, 0)) << ',' << int(d.value(p, 1)) << '\n';
    const Moments ref = grid_moments(one, csv_data(one, cols.str()), -5, 10);
    CHECK(rows[0].name == "w2");
    CHECK(std::abs(rows[0].mean - ref.mean) < 5 * rows[0].mcse_mean);
}

TEST_CASE("1,000 nodes: a parent with 999 children") {
    const ir::Graph g = compile_model("node a ~ bernoulli(0.5); node v[999] ~ logistic(b + w * a); b ~ normal(0, 1); w ~ normal(0, 1);",
                                      "wide.vbn");
    REQUIRE(g.elements.size() == 1000);
    REQUIRE(g.dim == 1998);
    inference::Rng rng(9, 0);
    const Dataset d = simulated(g, draw_prior(g, rng), 50, 7);
    check_vb_finite(variational(g, d));
    const FitResult r = fit(g, d, quick("varblock", 50, 100));
    checked_summary(r);
}

TEST_CASE("a hidden parent shared by 500 children: summed out per row, finite everywhere") {
    const ir::Graph g = compile_model("node h hidden ~ bernoulli(0.4); node v[500] ~ logistic(b + w * h); b ~ normal(0, 1); w ~ normal(1, 1);",
                                      "shared.vbn");
    REQUIRE(g.dim == 1000);
    inference::Rng rng(4, 0);
    const Dataset d = simulated(g, draw_prior(g, rng), 40, 8);
    const VbResult v = variational(g, d);
    check_vb_finite(v);
    // Every block is coupled to every other through h, so block kernels pay for all 500
    // children at each of 500 block moves: the whole-vector kernels keep this test short.
    for (const std::string m : {"rwm", "varmh"}) {
        CAPTURE(m);
        const FitResult r = fit(g, d, quick(m, 100, 100));
        checked_summary(r);
    }
}

// Found by fuzz_model_data: a model whose only node is hidden has no data columns, and every
// row (its extra columns ignored) is one empty pattern; the pattern table compared empty keys
// with memcmp on a null pointer.
TEST_CASE("a model without data columns: every row is the one empty pattern") {
    const ir::Graph g = compile_model("node h hidden ~ bernoulli(0.6);", "hidden_only.vbn");
    const Dataset d = csv_data(g, "o,y\n1,1\n-1,1\n1,-1\n");
    CHECK(d.rows == 3);
    CHECK(d.patterns == 1);
    CHECK(d.count == std::vector<double>{3});
}
