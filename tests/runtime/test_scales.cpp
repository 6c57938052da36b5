// Learned prior scales (`b ~ normal(0, tau); tau ~ half_normal(1);`, ir::Graph::scales): the
// exact log density of (weights, log τ) against the formulas written out here, its gradient
// against differences, and prior draws against the half-normal's and half-Cauchy's quantiles.
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/sampling/methods.hpp"
#include "runtime/target/prior.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/scale_q.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"
#include "tests/runtime/fit_options.hpp"
#include "tests/runtime/per_chain.hpp"
#include "tests/runtime/target_differences.hpp"
#include "tests/runtime/theta_index.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <string>
#include <utility>

using namespace vbn;

namespace {

// Three items y[k] ~ logistic(b[k] + w[k] x) on five rows, b[k] ~ N(0.5, τ²).
const double scale_xs[] = {-1.5, -0.3, 0.2, 0.9, 2.0};
const int scale_ys[5][3] = {{0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}};

struct ScaleModel {
    ir::Graph graph;
    Dataset data;
};

ScaleModel scale_model(const std::string& hyperprior) {
    ScaleModel m{compile_model("covariate x;\nnode y[3] ~ logistic(b + w * x);\nb ~ normal(0.5, tau);\ntau ~ " + hyperprior +
                                   ";\nw ~ normal(0, 2);\n",
                               "scales.vbn"),
                 {}};
    std::string csv = "x,y[1],y[2],y[3]\n";
    for (int r = 0; r < 5; ++r)
        csv += fmt::format("{},{},{},{}\n", scale_xs[r], scale_ys[r][0], scale_ys[r][1], scale_ys[r][2]);
    std::istringstream in(csv);
    m.data = load_csv(m.graph, in, "scales.csv");
    return m;
}

double log_normal(double x, double mu, double sd) {
    const double z = (x - mu) / sd;
    return -0.5 * std::log(2 * std::numbers::pi) - std::log(sd) - 0.5 * z * z;
}

double log_logistic(double x) { return -std::log1p(std::exp(-x)); }

// log p(θ | x) + const by hand: θ = (weights, η = log τ), with the Jacobian τ of τ = e^η.
// hyperprior 0: half_normal(1.5), 1: half_cauchy(2), 2: precision_gamma(3, 2).
double scale_by_hand(const ScaleModel& m, const Eigen::VectorXd& theta, int hyperprior) {
    const double eta = theta[test::theta_index(m.graph, "tau")], tau = std::exp(eta), lambda = 1 / (tau * tau);
    // log p(τ) + log τ; for the Gamma on λ = τ^{−2}: log p(λ) + log |dλ/dη| = log p(λ) + log 2λ.
    double lp = hyperprior == 0   ? eta + std::log(2.0) + log_normal(tau, 0, 1.5)
                : hyperprior == 1 ? eta + std::log(2 / std::numbers::pi / 2) - std::log1p(tau * tau / 4)
                                  : 3 * std::log(2.0) - std::lgamma(3) + 2 * std::log(lambda) - 2 * lambda + std::log(2 * lambda);
    for (int k = 0; k < 3; ++k) {
        const double b = theta[test::theta_index(m.graph, fmt::format("b[{}]", k + 1))];
        const double w = theta[test::theta_index(m.graph, fmt::format("w[{}]", k + 1))];
        lp += log_normal(b, 0.5, tau) + log_normal(w, 0, 2);
        for (int r = 0; r < 5; ++r) lp += log_logistic((scale_ys[r][k] ? 1 : -1) * (b + w * scale_xs[r]));
    }
    return lp;
}

}  // namespace

TEST_CASE("learned scales: the graph holds log tau after the blocks, and each weight knows its scale") {
    const ScaleModel m = scale_model("half_normal(1.5)");
    REQUIRE(m.graph.scales.size() == 1);
    CHECK(m.graph.dim == 7);
    const ir::Scale& sc = m.graph.scales[0];
    CHECK(sc.name == "tau");
    CHECK(sc.theta_index == 6);
    CHECK(sc.weights.size() == 3);
    CHECK(m.graph.theta_name(6) == "tau");
    CHECK(m.graph.is_scale(6));
    CHECK_FALSE(m.graph.is_scale(5));
    CHECK(m.graph.constrain(6, std::log(2.5)) == doctest::Approx(2.5));
    for (const auto& b : m.graph.blocks) {
        REQUIRE(b.prior_scale.size() == 2);
        CHECK(b.prior_scale[0] == 0);   // b[k]
        CHECK(b.prior_scale[1] == -1);  // w[k]
    }
}

TEST_CASE("learned scales: the exact log density of weights and log tau, and its gradient") {
    for (const int hyperprior : {0, 1, 2}) {
        CAPTURE(hyperprior);
        const ScaleModel m = scale_model(hyperprior == 0 ? "half_normal(1.5)" : hyperprior == 1 ? "half_cauchy(2)" : "precision_gamma(3, 2)");
        const auto target = make_target(m.graph, m.data);
        CHECK(target->scales() == 1);
        CHECK(target->scale_offset() == 6);
        Eigen::VectorXd theta(7);
        for (const double eta : {-2.0, 0.3, 3.0}) {
            theta << 0.9, -0.4, -1.2, 0.7, 2.1, 0.05, eta;
            const double got = target->log_density(theta) + target->log_constant();
            CHECK(got == doctest::Approx(scale_by_hand(m, theta, hyperprior)).epsilon(1e-11));
            Eigen::VectorXd grad(7);
            CHECK(target->log_density_gradient(theta, grad) == doctest::Approx(target->log_density(theta)).epsilon(1e-13));
            const Eigen::VectorXd fd = test::log_density_differences(*target, theta);
            for (int k = 0; k < 7; ++k) CHECK(grad[k] == doctest::Approx(fd[k]).epsilon(1e-6).scale(1e-6));
            // A block's own terms change with its weights as the whole does, τ held.
            const int b = 1;
            Eigen::VectorXd moved = theta;
            moved.segment(target->block_offset(b), 2) += Eigen::Vector2d(0.3, -0.2);
            CHECK(target->block_log_density(b, moved) - target->block_log_density(b, theta) ==
                  doctest::Approx(target->log_density(moved) - target->log_density(theta)).epsilon(1e-10));
        }
        // A scaled block is neither complete nor separable: its prior reads τ.
        CHECK_FALSE(target->complete_block(0));
        CHECK_FALSE(target->block_separable(0));
    }
}

TEST_CASE("learned scales: prior draws of tau have the half-normal's, half-Cauchy's and Gamma precision's quantiles") {
    inference::Rng rng(5, 0);
    constexpr int n = 40000;
    // P(τ < t): half-normal(1.5) at 1.5, 2Φ(1) − 1; half-Cauchy(2) at 2, 1/2; precision_gamma(3, 2)
    // at 1, P(λ > 1) for λ ~ Gamma(3, rate 2), e^{−2}(1 + 2 + 2²/2).
    const char* const priors[] = {"half_normal(1.5)", "half_cauchy(2)", "precision_gamma(3, 2)"};
    const double at[] = {1.5, 2.0, 1.0}, below[] = {0.682689492137, 0.5, 5 * std::exp(-2.0)};
    for (int h = 0; h < 3; ++h) {
        CAPTURE(priors[h]);
        const ScaleModel m = scale_model(priors[h]);
        int tau_inside = 0, b_inside = 0;
        for (int i = 0; i < n; ++i) {
            const Eigen::VectorXd th = draw_prior(m.graph, rng);
            const double tau = std::exp(th[6]);
            tau_inside += tau < at[h];
            b_inside += std::abs(th[0] - 0.5) < tau;   // b | τ ~ N(0.5, τ²): 2Φ(1) − 1
        }
        const double p_tau = below[h];
        const double p_b = 0.682689492137;
        // Four binomial standard errors.
        CHECK(std::abs(tau_inside / double(n) - p_tau) < 4 * std::sqrt(p_tau * (1 - p_tau) / n));
        CHECK(std::abs(b_inside / double(n) - p_b) < 4 * std::sqrt(p_b * (1 - p_b) / n));
    }
}

namespace {

// Two groups y[1], y[2] with intercepts b[k] ~ N(0, τ²) sharing τ ~ half-normal(1), a few rows
// each (y[2] missing in three): the data say little, so τ's posterior is wide and reaches
// down to where the weights funnel towards 0.
const char* const funnel_text = "node y[2] ~ logistic(b);\nb ~ normal(0, tau);\ntau ~ half_normal(1);\n";
const char* const funnel_csv = "y[1],y[2]\n1,0\n1,0\n1,\n1,1\n1,0\n0,\n0,0\n1,\n";

// The exact posterior moments of b[1], b[2] and τ by quadrature: given η = log τ the groups
// are independent, each ∫ N(b; 0, τ²) L_k(b) db on a grid in b/τ, and η on a grid of its own.
struct FunnelMoments {
    double mean[3] = {0, 0, 0}, sd[3] = {0, 0, 0};
};

FunnelMoments funnel_grid(const int ones[2] = nullptr, const int zeros[2] = nullptr) {
    static const int few_ones[2] = {6, 1}, few_zeros[2] = {2, 4};
    if (!ones) ones = few_ones;
    if (!zeros) zeros = few_zeros;
    double z = 0, m1[3] = {0, 0, 0}, m2[3] = {0, 0, 0};
    for (double eta = -9; eta <= 3; eta += 0.004) {
        const double tau = std::exp(eta);
        double weight = std::exp(eta + std::log(2.0) + log_normal(tau, 0, 1));  // p(τ) τ: the density of η
        double e[2], e2[2];
        for (int k = 0; k < 2; ++k) {
            double zk = 0, s1 = 0, s2 = 0;
            for (double u = -9; u <= 9; u += 0.002) {
                const double b = tau * u;
                const double w = std::exp(-0.5 * u * u + ones[k] * log_logistic(b) + zeros[k] * log_logistic(-b));
                zk += w;
                s1 += w * b;
                s2 += w * b * b;
            }
            weight *= zk * 0.002 / std::sqrt(2 * std::numbers::pi);
            e[k] = s1 / zk;
            e2[k] = s2 / zk;
        }
        z += weight;
        for (int k = 0; k < 2; ++k) {
            m1[k] += weight * e[k];
            m2[k] += weight * e2[k];
        }
        m1[2] += weight * tau;
        m2[2] += weight * tau * tau;
    }
    FunnelMoments out;
    for (int k = 0; k < 3; ++k) {
        out.mean[k] = m1[k] / z;
        out.sd[k] = std::sqrt(m2[k] / z - out.mean[k] * out.mean[k]);
    }
    return out;
}

// Column `col` of every chain's draws as an iterations × chains matrix.
Eigen::MatrixXd chain_column(const FitResult& r, int col) {
    Eigen::MatrixXd m(r.chains[0].draws.rows(), static_cast<Eigen::Index>(r.chains.size()));
    for (std::size_t c = 0; c < r.chains.size(); ++c) m.col(static_cast<Eigen::Index>(c)) = r.chains[c].draws.col(col);
    return m;
}

}  // namespace

TEST_CASE("learned scales: every method that moves them against the exact posterior by quadrature" * doctest::timeout(300)) {
    const ir::Graph g = compile_model(funnel_text, "funnel.vbn");
    std::istringstream in(funnel_csv);
    const Dataset data = load_csv(g, in, "funnel.csv");
    const FunnelMoments exact = funnel_grid();
    const int cols[3] = {test::theta_index(g, "b[1]"), test::theta_index(g, "b[2]"), test::theta_index(g, "tau")};
    for (const std::string method : {"auto", "varblock", "gibbs"}) {
        CAPTURE(method);
        FitOptions o = test::short_run(method, 4, 1000, 4000, 3);
        o.threads = 2;
        const FitResult r = fit(g, data, o);
        std::string failures;
        for (int k = 0; k < 3; ++k) {
            const Eigen::MatrixXd x = chain_column(r, cols[k]);  // draws hold τ itself
            failures += test::check_moment(fmt::format("mean {}", g.theta_name(cols[k])), x, exact.mean[k], 0.1 * exact.sd[k]);
            const Eigen::MatrixXd dev2 = (x.array() - exact.mean[k]).square().matrix();
            failures += test::check_moment(fmt::format("variance {}", g.theta_name(cols[k])), dev2,
                                           exact.sd[k] * exact.sd[k], 0.2 * exact.sd[k] * exact.sd[k]);
        }
        CHECK_MESSAGE(failures.empty(), failures);
    }
}

TEST_CASE("learned scales: the variational fit's bound never decreases, and its correction finds the exact moments") {
    // Informative groups (60 of 100 and 15 of 100 ones), where the posterior has no funnel
    // for importance sampling from q to miss.
    const int ones[2] = {60, 15}, zeros[2] = {40, 85};
    std::string csv = "y[1],y[2]\n";
    for (int r = 0; r < 100; ++r) csv += fmt::format("{},{}\n", r < ones[0] ? 1 : 0, r < ones[1] ? 1 : 0);
    const ir::Graph g = compile_model(funnel_text, "funnel.vbn");
    std::istringstream in(csv);
    const Dataset data = load_csv(g, in, "groups.csv");
    const VbFit q = variational(g, data).best_fit();
    REQUIRE(q.elbo_trace.size() > 1);
    for (std::size_t i = 1; i < q.elbo_trace.size(); ++i)
        CHECK(q.elbo_trace[i] >= q.elbo_trace[i - 1] - 1e-12 * std::abs(q.elbo_trace[i]));
    REQUIRE(q.scale_mean.size() == 1);
    CHECK(q.scale_mean[0] > 0);
    const auto target = make_target(g, data);
    const RefinedPosterior r = refine(*target, q);
    const FunnelMoments exact = funnel_grid(ones, zeros);
    CHECK(r.pareto_k < 0.7);
    for (int k = 0; k < 2; ++k) {
        CAPTURE(k);
        CHECK(std::abs(r.mean[k] - exact.mean[k]) <= 4 * r.mcse[k]);
    }
    REQUIRE(r.scale_mean.size() == 1);
    CHECK(std::abs(r.scale_mean[0] - exact.mean[2]) <= 4 * r.scale_mcse[0]);
    CHECK(r.scale_sd[0] == doctest::Approx(exact.sd[2]).epsilon(0.1));
}

TEST_CASE("learned scales: q(tau) by quadrature in log tau against integration in tau itself") {
    for (const ir::ScaleKind kind : {ir::ScaleKind::half_normal, ir::ScaleKind::half_cauchy, ir::ScaleKind::precision_gamma})
        for (const auto& [n, S] : {std::pair{1, 0.3}, std::pair{4, 2.0}, std::pair{40, 55.0}, std::pair{3, 1e-4}}) {
            CAPTURE(static_cast<int>(kind));
            CAPTURE(n);
            CAPTURE(S);
            ir::Scale sc;
            sc.kind = kind;
            sc.scale = 1.7;
            sc.shape = 2.5;
            sc.rate = 0.8;
            const ScaleQ q = fit_scale_q(sc, n, S);
            const bool cauchy = kind == ir::ScaleKind::half_cauchy;
            // q(τ) ∝ p(τ) τ^{−n} e^{−S/(2τ²)} on a fine grid in τ, with its own moments; the
            // precision_gamma prior on τ through λ = 1/τ², |dλ/dτ| = 2/τ³.
            auto log_unnormalised = [&](double tau) {
                const double s = sc.scale, lambda = 1 / (tau * tau);
                double prior = 0;
                switch (kind) {
                case ir::ScaleKind::half_normal: prior = std::log(2.0) + log_normal(tau, 0, s); break;
                case ir::ScaleKind::half_cauchy: prior = std::log(2 / (std::numbers::pi * s)) - std::log1p(tau * tau / (s * s)); break;
                case ir::ScaleKind::precision_gamma:
                    prior = sc.shape * std::log(sc.rate) - std::lgamma(sc.shape) + (sc.shape - 1) * std::log(lambda) -
                            sc.rate * lambda + std::log(2.0) - 3 * std::log(tau);
                    break;
                }
                return prior - n * std::log(tau) - 0.5 * S / (tau * tau);
            };
            double z = 0, m1 = 0, m2 = 0, prec = 0, top = -INFINITY;
            const double h = 1e-5, upper = cauchy ? 1e7 : 40.0;  // beyond it: below 1e-7 of E[τ]
            for (double tau = h; tau < upper; tau += h * std::max(1.0, tau)) top = std::max(top, log_unnormalised(tau));
            for (double tau = h; tau < upper; tau += h * std::max(1.0, tau)) {
                const double w = std::exp(log_unnormalised(tau) - top) * h * std::max(1.0, tau);
                z += w;
                m1 += w * tau;
                m2 += w * tau * tau;
                prec += w / (tau * tau);
            }
            const double mean = m1 / z;
            CHECK(q.mean == doctest::Approx(mean).epsilon(2e-4));
            if (!(cauchy && n == 1))  // q's tail falls as τ^{−n−2}: no variance for n = 1
                CHECK(q.sd == doctest::Approx(std::sqrt(m2 / z - mean * mean)).epsilon(2e-3));
            CHECK(q.e_precision == doctest::Approx(prec / z).epsilon(2e-4));
            // −KL(q ‖ p) = log Z + n E[log τ] + ½ S E[1/τ²], Z = ∫ p τ^{−n} e^{−S/(2τ²)} dτ.
            CHECK(q.bound == doctest::Approx(top + std::log(z) + n * q.mean_log + 0.5 * S * q.e_precision).epsilon(1e-5));
            // A Gamma on the precision is conjugate: q(1/τ²) = Gamma(a + n/2, b + S/2) (ARD).
            if (kind == ir::ScaleKind::precision_gamma)
                CHECK(q.e_precision == doctest::Approx((sc.shape + 0.5 * n) / (sc.rate + 0.5 * S)).epsilon(1e-9));
        }
}

TEST_CASE("learned scales: auto's choice, and the methods that cannot move them refuse by name") {
    const ir::Graph g = compile_model(funnel_text, "funnel.vbn");
    std::istringstream in(funnel_csv);
    const Dataset data = load_csv(g, in, "funnel.csv");
    std::string why;
    CHECK(choose_method(g, data, &why) == "gibbs");  // y[2] has missing entries
    CHECK(why.find("learned prior scales") != std::string::npos);
    for (const std::string method : {"varmix", "regen"}) {
        CAPTURE(method);
        const FitOptions o = test::short_run(method, 1, 10, 10, FitOptions{}.seed);
        try {
            fit(g, data, o);
            FAIL("fit should refuse");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::usage);
            CHECK(std::string(e.what()).find("--method " + method + " does not move learned prior scales (such as 'tau')") !=
                  std::string::npos);
        }
    }
}

TEST_CASE("learned scales: varmh moves them but says that its one t misses their funnel") {
    const ir::Graph g = compile_model(funnel_text, "funnel.vbn");
    std::istringstream in(funnel_csv);
    const Dataset data = load_csv(g, in, "funnel.csv");
    const auto has_note = [](const FitResult& r) {
        return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
            return n.find("varmh proposes the learned scales (such as 'tau')") != std::string::npos &&
                   n.find("simulation-based calibration rejects") != std::string::npos;
        });
    };
    CHECK(has_note(fit(g, data, test::short_run("varmh", 1, 10, 10, FitOptions{}.seed))));
    CHECK_FALSE(has_note(fit(g, data, test::short_run("rwm", 1, 10, 10, FitOptions{}.seed))));
}
