// Learned prior scales (`b ~ normal(0, tau); tau ~ half_normal(1);`, ir::Graph::scales): the
// exact log density of (weights, log τ) against the formulas written out here, its gradient
// against differences, and prior draws against the half-normal's and half-Cauchy's quantiles.
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/prior.hpp"
#include "runtime/target/target.hpp"
#include "tests/runtime/theta_index.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <sstream>
#include <string>

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
double by_hand(const ScaleModel& m, const Eigen::VectorXd& theta, bool cauchy, double s) {
    const double eta = theta[test::theta_index(m.graph, "tau")], tau = std::exp(eta);
    double lp = eta + (cauchy ? std::log(2 / std::numbers::pi / s) - std::log1p(tau * tau / (s * s))
                              : std::log(2.0) + log_normal(tau, 0, s));
    for (int k = 0; k < 3; ++k) {
        const double b = theta[test::theta_index(m.graph, fmt::format("b[{}]", k + 1))];
        const double w = theta[test::theta_index(m.graph, fmt::format("w[{}]", k + 1))];
        lp += log_normal(b, 0.5, tau) + log_normal(w, 0, 2);
        for (int r = 0; r < 5; ++r) lp += log_logistic((scale_ys[r][k] ? 1 : -1) * (b + w * scale_xs[r]));
    }
    return lp;
}

Eigen::VectorXd scale_numeric_gradient(const Target& t, Eigen::VectorXd theta) {
    Eigen::VectorXd g(theta.size());
    for (Eigen::Index k = 0; k < theta.size(); ++k) {
        const double h = 1e-5 * std::max(1.0, std::abs(theta[k])), x = theta[k];
        theta[k] = x + h;
        const double up = t.log_density(theta);
        theta[k] = x - h;
        const double down = t.log_density(theta);
        theta[k] = x;
        g[k] = (up - down) / (2 * h);
    }
    return g;
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
    for (const bool cauchy : {false, true}) {
        CAPTURE(cauchy);
        const ScaleModel m = scale_model(cauchy ? "half_cauchy(2)" : "half_normal(1.5)");
        const auto target = make_target(m.graph, m.data);
        CHECK(target->scales() == 1);
        CHECK(target->scale_offset() == 6);
        Eigen::VectorXd theta(7);
        for (const double eta : {-2.0, 0.3, 3.0}) {
            theta << 0.9, -0.4, -1.2, 0.7, 2.1, 0.05, eta;
            const double got = target->log_density(theta) + target->log_constant();
            CHECK(got == doctest::Approx(by_hand(m, theta, cauchy, cauchy ? 2 : 1.5)).epsilon(1e-11));
            Eigen::VectorXd grad(7);
            CHECK(target->log_density_gradient(theta, grad) == doctest::Approx(target->log_density(theta)).epsilon(1e-13));
            const Eigen::VectorXd fd = scale_numeric_gradient(*target, theta);
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

TEST_CASE("learned scales: prior draws of tau have the half-normal's and half-Cauchy's quantiles") {
    inference::Rng rng(5, 0);
    constexpr int n = 40000;
    for (const bool cauchy : {false, true}) {
        CAPTURE(cauchy);
        const ScaleModel m = scale_model(cauchy ? "half_cauchy(2)" : "half_normal(1.5)");
        int tau_inside = 0, b_inside = 0;
        for (int i = 0; i < n; ++i) {
            const Eigen::VectorXd th = draw_prior(m.graph, rng);
            const double tau = std::exp(th[6]);
            tau_inside += tau < (cauchy ? 2.0 : 1.5);  // half-Cauchy: P(τ < s) = 1/2; half-normal: 2Φ(1) − 1
            b_inside += std::abs(th[0] - 0.5) < tau;   // b | τ ~ N(0.5, τ²): 2Φ(1) − 1
        }
        const double p_tau = cauchy ? 0.5 : 0.682689492137;
        const double p_b = 0.682689492137;
        // Four binomial standard errors.
        CHECK(std::abs(tau_inside / double(n) - p_tau) < 4 * std::sqrt(p_tau * (1 - p_tau) / n));
        CHECK(std::abs(b_inside / double(n) - p_b) < 4 * std::sqrt(p_b * (1 - p_b) / n));
    }
}
