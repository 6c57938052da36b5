// The importance-sampled log evidence (the importance correction of runtime/vb_refine.hpp,
// through runtime/evidence.hpp) against quadrature (one and two parameters), the ELBO below
// it, and Pareto-k̂ on a near-Gaussian posterior (low) and a bimodal one (high).
//
// Tolerances: the estimate must lie within 4 of its own standard errors of the quadrature
// value (checked by hand with seeds 1–5; the seed is then fixed), and the quadrature itself
// is accurate to far below that.
#include "runtime/evidence.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"
#include "runtime/fit.hpp"
#include "runtime/model.hpp"
#include "runtime/target.hpp"
#include "runtime/vb.hpp"
#include "tests/support/quadrature.hpp"

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

using test::log_integral_1d;
using test::log_normal_pdf;

// Seeds 1–5: each estimate within 4 of its standard errors of the truth (the tolerance of
// the correction's own test: Pareto smoothing adds a bias the delta-method standard error
// leaves out, measured at 0.8 se on the one-parameter model's first seed), and, with
// check_k, k̂ ≤ 0.5.
//
// Why not k̂ ≤ 0.5 everywhere: with a Student-t proposal at the mode the ratios are bounded
// with a smooth maximum, so they pile up below it (a generalized Pareto tail of shape −2),
// where Zhang & Stephens' estimate is undefined (k < −1). On the 12-row one-parameter model
// it is 4.75 on seed 1's first-round ratios, and R's loo::psis gives the same 4.7467.
void check_against(const Target& t, const VbFit& q, double exact, bool check_k) {
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
        CHECK(std::abs(e.log_evidence - exact) < 4 * e.se);
        CHECK(e.from_mode);
        if (check_k) CHECK(e.pareto_k < 0.5);
    }
}
}  // namespace

TEST_CASE("evidence: one parameter, against quadrature") {
    using One = test::OneParameterEvidence;
    const ir::Graph g = compile_model(One::model, "one.vbn");
    std::string csv = "y\n";
    for (double y : One::y()) csv += y > 0 ? "1\n" : "-1\n";
    const Dataset d = data_from(g, csv);
    const VbFit q = variational(g, d).best_fit();
    const auto t = make_target(g, d);
    check_against(*t, q, One::exact(), false);
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
    check_against(*t, q, exact, false);
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
        check_against(*t, q, exact, true);
    }
    {
        // Section 5.2: w's posterior has two modes (h = ±1 explain the data equally well up to
        // the prior), the mean-field fit covers one of them.
        const ir::Graph g = load_model(dir + "multimodal.vbn");
        const Dataset d = load_csv(g, dir + "multimodal.csv");
        const VbFit q = variational(g, d).best_fit();
        const auto t = make_target(g, d);
        // 20000 draws: k̂ from 4000 varies too much (0.70–1.06 over seeds 1–6, the proposal
        // at the exact mode); with 20000 it was 0.73–0.93 over seeds 1–6.
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
