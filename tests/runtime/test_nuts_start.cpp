// How `vbn fit --method nuts` starts its sampler, and the acceptance it targets: the initial metric is the exact posterior's
// Laplace covariance (Newton from the VB mean, runtime/variational/vb_refine.hpp) when it can be had, else
// the variational covariance. With no warmup the metric is used unchanged, so the draws'
// TransitionInfo shows it.
#include "runtime/data/dataset.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/data/model.hpp"
#include "runtime/variational/vb_refine.hpp"
#include "tests/runtime/fit_options.hpp"

#include "inference/nuts.hpp"
#include "tests/runtime/paper_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using namespace vbn;

using test::paper;

// The inverse metric of the first draw of a one-chain, no-warmup NUTS fit, and the fit.
Eigen::MatrixXd initial_inverse_metric(const ir::Graph& g, const Dataset& data, FitOptions o, FitResult& r) {
    o.method = "nuts";
    o.chains = 1;
    o.warmup = 0;
    o.draws = 1;
    o.seed = 7;
    Eigen::MatrixXd inverse;
    o.callbacks.on_draw = [&](int, int, const inference::State&, const inference::TransitionInfo& info) {
        REQUIRE(info.metric != nullptr);
        inverse = info.metric->inverse();
    };
    r = fit(g, data, o);
    return inverse;
}

}  // namespace

TEST_CASE("nuts starts from the Laplace covariance at the exact posterior mode, else from the VB covariance") {
    const ir::Graph g = load_model(paper + "unimodal_d10.vbn");
    const Dataset data = load_csv(g, paper + "unimodal_d10.csv");
    FitResult r;
    const Eigen::MatrixXd laplace_start = initial_inverse_metric(g, data, FitOptions{}, r);
    const VbFit& q = r.vb.best_fit();
    const std::unique_ptr<Target> target = make_target(g, data, FitOptions{}.max_enumerated);
    const NewtonMode mode = posterior_mode(*target, q.mean);
    REQUIRE(mode.converged);
    REQUIRE(laplace_start.rows() == g.dim);
    CHECK((laplace_start - mode.cov).cwiseAbs().maxCoeff() <= 1e-12 * mode.cov.cwiseAbs().maxCoeff());
    // Not the variational covariance, which is narrower (Jaakkola–Jordan's curvature exceeds
    // the logistic's): the check above could not pass by accident.
    const Eigen::MatrixXd vb_cov = q.dense_cov();
    CHECK(mode.cov.diagonal().sum() > 1.05 * vb_cov.diagonal().sum());

    // Newton is not attempted above FitOptions::laplace.max_dim parameters: the VB covariance.
    FitOptions small;
    small.laplace.max_dim = g.dim - 1;
    const Eigen::MatrixXd vb_start = initial_inverse_metric(g, data, small, r);
    CHECK((vb_start - r.vb.best_fit().dense_cov()).cwiseAbs().maxCoeff() <= 1e-12 * vb_cov.cwiseAbs().maxCoeff());
}

TEST_CASE("nuts's target acceptance: 0.65 for a log-concave posterior of more than 20 parameters, else 0.8; adapt_delta sets it") {
    const ir::Graph d50 = load_model(paper + "unimodal_d50.vbn");
    std::ifstream file(paper + "unimodal_d50.csv");
    std::stringstream text;
    text << file.rdbuf();
    const std::string csv = text.str();
    std::istringstream full(csv);
    const Dataset observed = load_csv(d50, full, "d50.csv");
    CHECK(d50.dim > nuts_low_delta_above);
    CHECK(nuts_adapt_delta(d50, observed) == 0.65);
    CHECK(nuts_adapt_delta(d50, observed, 0.9) == 0.9);
    // One missing entry: a mixture over it, no longer log-concave, so Stan's 0.8.
    std::string with_missing = csv;
    with_missing.replace(with_missing.find('\n') + 1, 1, "NA");
    std::istringstream partial(with_missing);
    CHECK(nuts_adapt_delta(d50, load_csv(d50, partial, "d50_missing.csv")) == 0.8);
    // Fully observed but only 20 parameters; and a hidden node.
    const ir::Graph d20 = load_model(paper + "unimodal_d20.vbn");
    CHECK(d20.dim == nuts_low_delta_above);
    CHECK(nuts_adapt_delta(d20, load_csv(d20, paper + "unimodal_d20.csv")) == 0.8);
    const ir::Graph mm = load_model(paper + "multimodal.vbn");
    CHECK(nuts_adapt_delta(mm, load_csv(mm, paper + "multimodal.csv")) == 0.8);
    for (const double bad : {-0.1, 1.0, 1.5, std::nan("")})
        CHECK_THROWS_WITH_AS(nuts_adapt_delta(d50, observed, bad), doctest::Contains("--adapt-delta must lie strictly between 0 and 1"),
                             vbn::Error);

    // The value reaches the sampler: dual averaging aims the sampling phase's mean acceptance
    // statistic at it, so a higher target gives a clearly higher mean acceptance.
    FitOptions o = vbn::test::short_run("nuts", 2, 300, 300, 3);
    o.keep_draws = false;
    auto mean_acceptance = [&](double delta) {
        o.adapt_delta = delta;
        const FitResult r = fit(d50, observed, o);
        CHECK(r.adapt_delta == (delta == 0 ? 0.65 : delta));
        double sum = 0;
        long n = 0;
        for (const auto& c : r.chains)
            for (const auto& s : c.stats) {
                sum += static_cast<double>(s.accepted);
                n += s.proposed;
            }
        return sum / static_cast<double>(n);
    };
    const double low = mean_acceptance(0.5), automatic = mean_acceptance(0), high = mean_acceptance(0.9);
    CHECK(low < automatic);
    CHECK(automatic < high);
    CHECK(high - low > 0.15);  // 0.23-0.38 over seeds 3-8
    CHECK(high > 0.85);
}
