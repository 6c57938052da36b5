// Student-t and Cauchy priors (ir::Block::prior_df): the exact log density and its gradient
// against the formulas written out here, prior draws against the distributions' quantiles,
// the variational EM's bound over iterations, and a Bayesian logistic regression with
// Gelman et al. (2008)'s Cauchy priors on nearly separated data (tests/corpus/cauchy_logit)
// fitted by default against its grid posterior.
#include "inference/diagnostics.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/target/prior.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"
#include "tests/runtime/per_chain.hpp"
#include "tests/runtime/target_differences.hpp"
#include "validation/grid_posterior.hpp"

#include <Eigen/Cholesky>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

using namespace vbn;

namespace {

const std::string corpus = std::string(VBN_SOURCE_DIR) + "/tests/corpus/cauchy_logit/";

// log of the Student-t density t_ν(x; μ, s), written out (Cauchy: ν = 1).
double log_t(double x, double nu, double mu, double s) {
    const double z = (x - mu) / s;
    return std::lgamma(0.5 * (nu + 1)) - std::lgamma(0.5 * nu) - 0.5 * std::log(nu * std::numbers::pi) - std::log(s) -
           0.5 * (nu + 1) * std::log1p(z * z / nu);
}

double log_sigmoid(double x) { return -std::log1p(std::exp(-x)); }

struct Small {
    ir::Graph graph;
    Dataset data;
};

// y ~ logistic(b + w * x) (or the predictor given) on five rows; z = x² is a second covariate.
const double xs[] = {-1.5, -0.3, 0.2, 0.9, 2.0};
const int ys[] = {0, 1, 0, 1, 1};

Small small(const std::string& priors, const std::string& predictor = "b + w * x") {
    std::string warnings;  // z unused
    Small s{compile_model("covariate x;\ncovariate z;\nnode y ~ logistic(" + predictor + ");\n" + priors, "small.vbn",
                          &warnings),
            {}};
    std::string csv = "x,z,y\n";
    for (int r = 0; r < 5; ++r) csv += fmt::format("{},{},{}\n", xs[r], xs[r] * xs[r], ys[r]);
    std::istringstream in(csv);
    s.data = load_csv(s.graph, in, "small.csv");
    return s;
}

}  // namespace

TEST_CASE("heavy-tailed priors: the exact, normalised Student-t and Cauchy log density and its gradient") {
    const Small s = small("b ~ cauchy(1, 2.5);\nw ~ student_t(3, 0.5, 2);");
    REQUIRE(s.graph.blocks.size() == 1);
    CHECK(s.graph.blocks[0].prior_df == std::vector<double>{1.0, 3.0});
    const auto target = make_target(s.graph, s.data);
    for (const Eigen::Vector2d& theta : {Eigen::Vector2d(0.3, -0.7), Eigen::Vector2d(40, 3), Eigen::Vector2d(-300, 1e3)}) {
        double expected = log_t(theta[0], 1, 1, 2.5) + log_t(theta[1], 3, 0.5, 2);
        for (int r = 0; r < 5; ++r) expected += log_sigmoid((ys[r] ? 1 : -1) * (theta[0] + theta[1] * xs[r]));
        const double got = target->log_density(theta) + target->log_constant();
        CHECK(got == doctest::Approx(expected).epsilon(1e-11));
        Eigen::VectorXd grad(2);
        target->log_density_gradient(theta, grad);
        const Eigen::VectorXd fd = test::log_density_differences(*target, theta);
        for (int k = 0; k < 2; ++k) CHECK(grad[k] == doctest::Approx(fd[k]).epsilon(1e-6).scale(1e-6));
    }
}

TEST_CASE("heavy-tailed priors: a Cauchy weight beside an mvnormal parameter in one block (full covariance)") {
    const Small s = small("b ~ cauchy(0, 2);\nw ~ mvnormal([0.5, -1], [[1, 0.6], [0.6, 2]]);", "b + w * [x, z]");
    REQUIRE(s.graph.blocks.size() == 1);
    CHECK_FALSE(s.graph.blocks[0].prior_diagonal);
    const auto target = make_target(s.graph, s.data);
    const Eigen::Vector3d theta(7.5, 0.2, -0.4);
    // N((0.2, -0.4); (0.5, -1), [[1, .6], [.6, 2]]) by hand: det 1.64, inverse [[2, -.6], [-.6, 1]] / 1.64.
    const double d0 = 0.2 - 0.5, d1 = -0.4 + 1, det = 1.64;
    const double quad = (2 * d0 * d0 - 1.2 * d0 * d1 + d1 * d1) / det;
    double expected = log_t(7.5, 1, 0, 2) - std::log(2 * std::numbers::pi) - 0.5 * std::log(det) - 0.5 * quad;
    for (int r = 0; r < 5; ++r)
        expected += log_sigmoid((ys[r] ? 1 : -1) * (theta[0] + theta[1] * xs[r] + theta[2] * xs[r] * xs[r]));
    CHECK(target->log_density(theta) + target->log_constant() == doctest::Approx(expected).epsilon(1e-11));
    Eigen::VectorXd grad(3);
    target->log_density_gradient(theta, grad);
    const Eigen::VectorXd fd = test::log_density_differences(*target, theta);
    for (int k = 0; k < 3; ++k) CHECK(grad[k] == doctest::Approx(fd[k]).epsilon(1e-6).scale(1e-6));
}

TEST_CASE("heavy-tailed priors: the Newton curvature stays positive where the exact one is negative") {
    const Small s = small("b ~ cauchy(0, 1);\nw ~ cauchy(0, 1);");
    const auto target = make_target(s.graph, s.data);
    auto ws = target->make_workspace();
    // At w = 30 the Cauchy's own curvature −(ν+1)(ν s² − r²)/(ν s² + r²)² is positive in the
    // log density, i.e. the exact negative Hessian loses (r² − 1)·2/(1 + r²)² there.
    const Eigen::Vector2d theta(0, 30);
    const Eigen::MatrixXd h = target->complete_block_negative_hessian(0, theta, ws);
    CHECK(h.llt().info() == Eigen::Success);
    // E[λ | w]/s² = 2 / (1 + 900) for the prior part of w's diagonal.
    const Eigen::MatrixXd h0 = make_target(small("b ~ normal(0, 1e6);\nw ~ normal(0, 1e6);").graph, s.data)
                                   ->complete_block_negative_hessian(0, theta, ws);
    CHECK(h(1, 1) - h0(1, 1) == doctest::Approx(2.0 / 901).epsilon(1e-6));
}

TEST_CASE("heavy-tailed priors: prior draws have the Student-t's and the Cauchy's quantiles") {
    const Small s = small("b ~ cauchy(1, 2.5);\nw ~ student_t(3, 0.5, 2);");
    inference::Rng rng(11, 0);
    constexpr int n = 40000;
    int b_inside = 0, w_inside = 0;
    for (int i = 0; i < n; ++i) {
        const Eigen::VectorXd th = draw_prior(s.graph, rng);
        b_inside += std::abs(th[0] - 1) < 2.5;   // Cauchy: P(|x − μ| < s) = 1/2
        w_inside += std::abs(th[1] - 0.5) < 2;   // t_3: P(|T| < 1) = 0.6090 (2 F(1) − 1)
    }
    const double se = std::sqrt(0.25 / n);
    CHECK(std::abs(b_inside / double(n) - 0.5) < 4 * se);
    CHECK(std::abs(w_inside / double(n) - 0.6090) < 4 * se);
}

TEST_CASE("heavy-tailed priors: the variational bound never decreases over EM iterations") {
    const ir::Graph g = load_model(corpus + "model.vbn");
    const Dataset d = load_csv(g, corpus + "data.csv");
    for (bool accelerate : {false, true}) {
        VbOptions o;
        o.accelerate = accelerate;
        const VbResult r = variational(g, d, o);
        const auto& trace = r.best_fit().elbo_trace;
        REQUIRE(trace.size() > 5);
        CHECK(r.best_fit().converged);
        for (std::size_t k = 1; k < trace.size(); ++k)
            CHECK(trace[k] >= trace[k - 1] - 1e-12 * std::abs(trace[k - 1]));
    }
    // With a hidden node (q(h) in the EM as well): every restart's bound is monotone too.
    {
        const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
        std::string text = read_file(dir + "multimodal.vbn");
        const std::string normal = "w ~ normal(3, sqrt(10));";
        REQUIRE(text.find(normal) != std::string::npos);
        text.replace(text.find(normal), normal.size(), "w ~ cauchy(3, sqrt(10));");
        const ir::Graph hg = compile_model(text, "multimodal_cauchy.vbn");
        const VbResult r = variational(hg, load_csv(hg, dir + "multimodal.csv"));
        REQUIRE(r.fits.size() > 1);
        for (const VbFit& f : r.fits)
            for (std::size_t k = 1; k < f.elbo_trace.size(); ++k)
                CHECK(f.elbo_trace[k] >= f.elbo_trace[k - 1] - 1e-12 * std::abs(f.elbo_trace[k - 1]));
    }
    // As ν grows the Student-t prior becomes the normal, and so does the fit.
    const Small t = small("b ~ student_t(1e7, 0, 2);\nw ~ student_t(1e7, 0, 2);");
    const Small n = small("b ~ normal(0, 2);\nw ~ normal(0, 2);");
    const VbFit ft = variational(t.graph, t.data).best_fit(), fn = variational(n.graph, n.data).best_fit();
    for (int k = 0; k < 2; ++k) CHECK(ft.mean[k] == doctest::Approx(fn.mean[k]).epsilon(1e-5));
    CHECK(ft.elbo == doctest::Approx(fn.elbo).epsilon(1e-5));
}

// The gold standard: the default fit and vb's importance-corrected answer against the grid.
// Means within 0.1 posterior sd and within 4 Monte Carlo standard errors, sds within 10%,
// R-hat ≤ 1.01, at a fixed seed; for `auto` (varblock) and for gibbs (Newton on the scale
// mixture's curvature, the proposal on the exact curvature at the mode, MH on the exact
// density).
TEST_CASE("heavy-tailed priors: Cauchy logistic regression on nearly separated data against its grid" *
          doctest::timeout(300)) {
    const ir::Graph g = load_model(corpus + "model.vbn");
    const Dataset d = load_csv(g, corpus + "data.csv");
    const auto target = make_target(g, d);
    const GridPosterior grid = grid_posterior(*target, Eigen::Vector2d(-16, -20), Eigen::Vector2d(12, 200), 1001);
    REQUIRE(grid.edge_log_ratio < -25);  // the grid holds all but a negligible mass
    const Eigen::Vector2d sd = grid.cov.diagonal().cwiseSqrt();
    MESSAGE(fmt::format("grid: b {:.4f} ({:.4f}), w {:.4f} ({:.4f})", grid.mean[0], sd[0], grid.mean[1], sd[1]));

    for (const std::string& method : {std::string("auto"), std::string("gibbs")}) {
        FitOptions o;
        o.method = method;
        o.seed = 1;
        o.chains = 4;
        o.threads = 2;
        o.draws = 2000;
        const FitResult r = fit(g, d, o);
        for (int k = 0; k < 2; ++k) {
            const Eigen::MatrixXd x = test::per_chain(r, [k](const Eigen::Vector2d& th) { return th[k]; });
            const double mean = x.mean(), mcse = inference::mcse_mean(x);
            const double draw_sd = std::sqrt((x.array() - mean).square().mean());
            INFO(method, " ", g.theta_name(k), ": mean ", mean, " (mcse ", mcse, "), sd ", draw_sd);
            CHECK(std::abs(mean - grid.mean[k]) <= 4 * mcse);
            CHECK(std::abs(mean - grid.mean[k]) <= 0.1 * sd[k]);
            CHECK(std::abs(draw_sd / sd[k] - 1) <= 0.1);
            CHECK(inference::rhat(x) <= 1.01);
        }
    }

    const RefinedPosterior vb = refine(*target, variational(g, d).best_fit());
    // log p(data) needs the Student-t normalisers in log_constant: the grid integrates
    // exp(log_density) alone. Grid error at this spacing is far below the estimate's se.
    CHECK(std::abs(vb.log_evidence - (grid.log_evidence + target->log_constant())) <= 4 * vb.log_evidence_se + 1e-3);
    for (int k = 0; k < 2; ++k) {
        INFO("vb corrected ", g.theta_name(k), ": ", vb.mean[k], " (mcse ", vb.mcse[k], ")");
        CHECK(std::abs(vb.mean[k] - grid.mean[k]) <= 0.1 * sd[k]);
        CHECK(std::abs(std::sqrt(vb.cov(k, k)) / sd[k] - 1) <= 0.1);
    }
}

// Hidden values summed out: the paper's multimodal example (examples/paper/multimodal, a hidden
// cause and an observed one) with Student-t priors in place of its normal ones. `auto` (varmix:
// mode search from prior draws, a PMC mixture with a t as its prior component) against the grid.
// The likelihood of this model tends to a constant as a weight grows, so the posterior's tails
// are the prior's: ν = 7 keeps four moments (a Cauchy prior would leave no mean to check), and
// its tail beyond the grid's edge, where the density is below e^-18 of the top, holds a mass
// of about e^-18 · |w| / ν, under 1e-7.
TEST_CASE("heavy-tailed priors: the multimodal example with Student-t priors against its grid" * doctest::timeout(300)) {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
    std::string text = read_file(dir + "multimodal.vbn");
    const std::string normal = "w ~ normal(3, sqrt(10));";
    REQUIRE(text.find(normal) != std::string::npos);
    text.replace(text.find(normal), normal.size(), "w ~ student_t(7, 3, sqrt(10));");
    const ir::Graph g = compile_model(text, "multimodal_student_t.vbn");
    const Dataset d = load_csv(g, dir + "multimodal.csv");
    const auto target = make_target(g, d);
    const GridPosterior grid = grid_posterior(*target, Eigen::Vector2d(-60, -60), Eigen::Vector2d(65, 65), 1251);
    MESSAGE(fmt::format("grid edge {:.1f}; w[1] {:.4f} ({:.4f}), w[2] {:.4f} ({:.4f})", grid.edge_log_ratio, grid.mean[0],
                        std::sqrt(grid.cov(0, 0)), grid.mean[1], std::sqrt(grid.cov(1, 1))));
    REQUIRE(grid.edge_log_ratio < -18);
    const Eigen::Vector2d sd = grid.cov.diagonal().cwiseSqrt();
    FitOptions o;
    o.seed = 1;
    o.chains = 4;
    o.threads = 2;
    o.draws = 2000;
    const FitResult r = fit(g, d, o);
    for (int k = 0; k < 2; ++k) {
        const Eigen::MatrixXd x = test::per_chain(r, [k](const Eigen::Vector2d& th) { return th[k]; });
        const double mean = x.mean(), mcse = inference::mcse_mean(x);
        const double draw_sd = std::sqrt((x.array() - mean).square().mean());
        INFO(g.theta_name(k), ": mean ", mean, " (mcse ", mcse, "), sd ", draw_sd, "; grid ", grid.mean[k], " (", sd[k], ")");
        CHECK(std::abs(mean - grid.mean[k]) <= 0.1 * sd[k]);
        CHECK(std::abs(mean - grid.mean[k]) <= 4 * mcse);
        CHECK(std::abs(draw_sd / sd[k] - 1) <= 0.1);
        CHECK(inference::rhat(x) <= 1.01);
    }
}
