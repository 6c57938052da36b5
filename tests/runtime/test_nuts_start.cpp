// How `vbn fit --method nuts` starts its sampler: the initial metric is the exact posterior's
// Laplace covariance (Newton from the VB mean, runtime/vb_refine.hpp) when it can be had, else
// the variational covariance. With no warmup the metric is used unchanged, so the draws'
// TransitionInfo shows it.
#include "runtime/dataset.hpp"
#include "runtime/fit.hpp"
#include "runtime/model.hpp"
#include "runtime/vb_refine.hpp"

#include "inference/nuts.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace vbn;

const std::string paper = std::string(VBN_SOURCE_DIR) + "/examples/paper/";

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
