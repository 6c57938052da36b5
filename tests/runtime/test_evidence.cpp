// The importance-sampled log evidence (the importance correction of runtime/vb_refine.hpp,
// through runtime/evidence.hpp) against quadrature (one and two parameters), the ELBO below
// it, and Pareto-k̂ on a near-Gaussian posterior (low) and a bimodal one (high).
//
// Tolerances: the estimate must lie within 3 of its own standard errors of the quadrature
// value, and k̂ ≤ 0.5 on the near-Gaussian models. Over 200 seeds the errors in se had mean
// −0.05, 0.05, −0.02 and sd 1.02, 0.95, 1.01 on the one-parameter, two-parameter and
// unimodal_d1 models, and k̂ was at most −1.35, 0.43, −1.46 (the default proposal with its
// defensive t4 component); seeds 1–5 are used here. The quadrature itself is accurate to far
// below that.
#include "runtime/evidence.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"
#include "runtime/fit.hpp"
#include "runtime/model.hpp"
#include "runtime/target.hpp"
#include "runtime/vb.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <sstream>
#include <string>

namespace {

using namespace vbn;
using inference::log_inv_logit;

Dataset data_from(const ir::Graph& g, const std::string& csv) {
    std::istringstream in(csv);
    return load_csv(g, in, "data.csv");
}

double log_normal_pdf(double x, double mean, double sd) {
    const double z = (x - mean) / sd;
    return -0.5 * z * z - std::log(sd) - 0.5 * std::log(2 * std::numbers::pi);
}

// log ∫ exp(f) over [lo, hi] by the trapezoid rule on n intervals (f smooth and negligible
// at the ends, where the rule converges geometrically).
template <class F>
double log_integral_1d(F f, double lo, double hi, int n) {
    const double h = (hi - lo) / n;
    double top = -1e300;
    for (int i = 0; i <= n; ++i) top = std::max(top, f(lo + i * h));
    double s = 0;
    for (int i = 0; i <= n; ++i) s += (i == 0 || i == n ? 0.5 : 1.0) * std::exp(f(lo + i * h) - top);
    return top + std::log(s * h);
}

// Seeds 1–5: each estimate within 3 of its standard errors of the truth, and k̂ ≤ 0.5.
//
// Without the proposal's defensive component (a 10% share of t4 draws at twice the scale,
// RefineOptions::defensive) this failed on the small skewed models: the t30 is lighter than
// their exponential tails (9 log σ(b) + 3 log σ(−b) is linear in b far from 0), the ratios
// grow into the tail, and k̂ was 4.0–4.8 on the one-parameter model (seeds 1–10) and 0.7–1.2
// on the two-parameter one, with the one-parameter estimate biased by +0.58 se on average.
void check_against(const Target& t, const VbFit& q, double exact) {
    CAPTURE(exact);
    CHECK(q.elbo < exact);
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        EvidenceOptions o;
        o.seed = seed;
        const Evidence e = estimate_evidence(t, q, o);
        CAPTURE(seed);
        CAPTURE(e.log_evidence);
        CAPTURE(e.se);
        CHECK(e.se > 0);
        CHECK(e.se < 0.05);
        CHECK(std::abs(e.log_evidence - exact) < 3 * e.se);
        CHECK(e.from_mode);
        CHECK(e.pareto_k < 0.5);
    }
}
}  // namespace

TEST_CASE("evidence: one parameter, against quadrature") {
    const ir::Graph g = compile_model("node y ~ logistic(b);\nb ~ normal(0.5, 2);\n", "one.vbn");
    const Dataset d = data_from(g, "y\n1\n1\n1\n-1\n1\n1\n-1\n1\n1\n-1\n1\n1\n");  // 9 of 12
    const double exact = log_integral_1d(
        [](double b) { return log_normal_pdf(b, 0.5, 2) + 9 * log_inv_logit(b) + 3 * log_inv_logit(-b); }, -20, 20, 4000);
    const VbFit q = variational(g, d).best_fit();
    const auto t = make_target(g, d);
    check_against(*t, q, exact);
    CHECK(estimate_evidence(*t, q).draws == 4000);
}

TEST_CASE("evidence: two parameters with a fixed-probability parent, against quadrature") {
    const ir::Graph g = compile_model("node x ~ bernoulli(0.4);\nnode y ~ logistic(b + w * x);\nb ~ normal(0, 1.5);\nw ~ normal(1, 2);\n",
                                      "two.vbn");
    // (x, y) counts: (+,+) 6, (+,-) 1, (-,+) 3, (-,-) 5.
    std::string csv = "x,y\n";
    auto rows = [&](const char* r, int n) {
        for (int i = 0; i < n; ++i) csv += r;
    };
    rows("1,1\n", 6);
    rows("1,-1\n", 1);
    rows("-1,1\n", 3);
    rows("-1,-1\n", 5);
    const Dataset d = data_from(g, csv);
    const double log_px = 7 * std::log(0.4) + 8 * std::log(0.6);
    // The inner integral over w for each b, then over b.
    auto inner = [&](double b) {
        return log_integral_1d(
            [&](double w) {
                return log_normal_pdf(w, 1, 2) + 6 * log_inv_logit(b + w) + 1 * log_inv_logit(-(b + w)) + 3 * log_inv_logit(b - w) +
                       5 * log_inv_logit(-(b - w));
            },
            -20, 22, 1500);
    };
    const double exact = log_px + log_integral_1d([&](double b) { return log_normal_pdf(b, 0, 1.5) + inner(b); }, -12, 12, 1200);
    const VbFit q = variational(g, d).best_fit();
    const auto t = make_target(g, d);
    check_against(*t, q, exact);
    // The same through model_evidence.
    const auto e = model_evidence(g, d, q, {});
    REQUIRE(e);
    CHECK(e->log_evidence == estimate_evidence(*t, q).log_evidence);
}

TEST_CASE("evidence: k-hat is low on the near-Gaussian unimodal_d1 example and high on the bimodal one") {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
    {
        const ir::Graph g = load_model(dir + "unimodal_d1.vbn");
        const Dataset d = load_csv(g, dir + "unimodal_d1.csv");
        const VbFit q = variational(g, d).best_fit();
        const auto t = make_target(g, d);
        const double m = q.mean[0];
        const double exact = log_integral_1d(
            [&](double w) { return t->log_density(Eigen::VectorXd::Constant(1, w)) + t->log_constant(); }, m - 3, m + 3, 6000);
        check_against(*t, q, exact);
    }
    {
        // Section 5.2: w's posterior has two modes (h = ±1 explain the data equally well up to
        // the prior), the mean-field fit covers one of them.
        const ir::Graph g = load_model(dir + "multimodal.vbn");
        const Dataset d = load_csv(g, dir + "multimodal.csv");
        const VbFit q = variational(g, d).best_fit();
        const auto t = make_target(g, d);
        // 20000 draws: k̂ from 4000 varies more (0.76–1.12 over seeds 1–10); with 20000 it was
        // 0.90–1.15 over seeds 1–10.
        EvidenceOptions o;
        o.draws = 20000;
        const Evidence e = estimate_evidence(*t, q, o);
        CAPTURE(e.pareto_k);
        CHECK(e.pareto_k > 0.7);
        CHECK(pareto_k_reading(e.pareto_k).rfind("unreliable", 0) == 0);
        // The truth by 2-D quadrature of the exact joint p(x_v, w).
        auto inner = [&](double w1) {
            return log_integral_1d(
                [&](double w2) { return t->log_density(Eigen::Vector2d(w1, w2)) + t->log_constant(); }, -15, 21, 360);
        };
        const double exact = log_integral_1d(inner, -15, 21, 360);
        CAPTURE(exact);
        CAPTURE(e.log_evidence);
        CHECK(q.elbo < exact);
        // k̂ > 0.7 says the main proposal, at one mode, misses the other. The defensive
        // component still covers it, so the ratios are bounded and with enough draws the
        // estimate converges: at 20000 draws its error over 200 seeds had mean 0.11 se and sd
        // 0.97 se (without the defensive component, mean −3.6 se: the second mode was lost).
        CAPTURE(e.se);
        CHECK(std::abs(e.log_evidence - exact) < 3 * e.se);
        MESSAGE("multimodal: quadrature " << exact << ", ELBO " << q.elbo << ", IS " << e.log_evidence << " ± " << e.se
                                          << ", k-hat " << e.pareto_k);
    }
}

TEST_CASE("evidence: pareto_k_reading and bad options") {
    CHECK(pareto_k_reading(0.3).rfind("good", 0) == 0);
    CHECK(pareto_k_reading(0.6).rfind("ok", 0) == 0);
    CHECK(pareto_k_reading(0.9).rfind("unreliable", 0) == 0);
    const ir::Graph g = compile_model("node y ~ logistic(b);\nb ~ normal(0, 1);\n", "b.vbn");
    const Dataset d = data_from(g, "y\n1\n-1\n");
    const VbFit q = variational(g, d).best_fit();
    const auto t = make_target(g, d);
    EvidenceOptions o;
    o.draws = 5;
    CHECK_THROWS_AS(estimate_evidence(*t, q, o), Error);
    o.draws = 100;
    o.widen = 0;
    CHECK_THROWS_AS(estimate_evidence(*t, q, o), Error);
}

