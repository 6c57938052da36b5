// The importance-sampled log evidence (the importance correction of runtime/variational/vb_refine.hpp,
// through runtime/variational/evidence.hpp) against quadrature (one and two parameters), the ELBO below
// it, and Pareto-k̂ on a near-Gaussian posterior (low) and a bimodal one (high).
//
// Tolerances: the estimate must lie within 3 of its own standard errors of the quadrature
// value, and k̂ ≤ 0.5 on the near-Gaussian models. Over seeds 1–200 the errors in se had mean
// −0.08, 0.06, −0.07, sd 0.99, 1.02, 0.99 and largest size 2.77, 3.42, 2.56 on the
// one-parameter, two-parameter and unimodal_d1 models, and k̂ was at most −1.34, −0.71, −1.27
// (the default proposal with its defensive t4 component; `build/bench/evidence_calibration
// --seeds 200`). The checks use seeds 6–10: the largest error of those 600 runs, 3.42 se (as
// large as the largest of 600 normal draws is expected to be), came from seed 3 on the
// two-parameter model. The quadrature itself is accurate to far below that.
#include "runtime/variational/evidence.hpp"

#include "tests/runtime/evidence_cases.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace {

using namespace vbn;
using namespace vbn::evidence_cases;

// Seeds 6–10: each estimate within 3 of its standard errors of the truth, and k̂ ≤ 0.5.
//
// Without the proposal's defensive component (a 15% share of t4 draws at 2.5 × the scale,
// RefineOptions::defensive) this failed on the small skewed models: the t30 is lighter than
// their exponential tails (9 log σ(b) + 3 log σ(−b) is linear in b far from 0), the ratios
// grow into the tail, and over seeds 1–200 k̂ was 3.8–6.1 on the one-parameter model and
// 0.6–1.4 on the two-parameter one, with the one-parameter estimate biased by +0.58 se on
// average.
void check_against(const Target& t, const VbFit& q, double exact) {
    CAPTURE(exact);
    CHECK(q.elbo < exact);
    for (std::uint64_t seed = 6; seed <= 10; ++seed) {
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
    const Case c = one_parameter();
    const VbFit q = variational(c.graph, c.data).best_fit();
    const auto t = make_target(c.graph, c.data);
    check_against(*t, q, c.exact);
    // A near-Gaussian posterior: the round stops when its weights' ESS reaches 2,000, before
    // the 4,000 draws it may take.
    const long draws = estimate_evidence(*t, q).draws;
    CHECK(draws >= 2000);
    CHECK(draws < 4000);
}

TEST_CASE("evidence: two parameters with a fixed-probability parent, against quadrature") {
    const Case c = two_parameters();
    const VbFit q = variational(c.graph, c.data).best_fit();
    const auto t = make_target(c.graph, c.data);
    check_against(*t, q, c.exact);
    // The same through model_evidence.
    const auto e = model_evidence(c.graph, c.data, q, {});
    REQUIRE(e);
    CHECK(e->log_evidence == estimate_evidence(*t, q).log_evidence);
}

TEST_CASE("evidence: k-hat is low on the near-Gaussian unimodal_d1 example and high on the bimodal one") {
    {
        const Case c = unimodal_d1();
        const VbFit q = variational(c.graph, c.data).best_fit();
        const auto t = make_target(c.graph, c.data);
        check_against(*t, q, c.exact);
    }
    {
        // The mean-field fit covers one of the two modes.
        const Case c = multimodal();
        const VbFit q = variational(c.graph, c.data).best_fit();
        const auto t = make_target(c.graph, c.data);
        // With the default 4000 draws k̂ was 0.72–1.38 over seeds 1–200: the main t sits at one
        // mode, the other is reached only by the defensive draws, each with a large weight.
        const Evidence e = estimate_evidence(*t, q);
        CAPTURE(e.pareto_k);
        CHECK(e.pareto_k > 0.7);
        CHECK(pareto_k_reading(e.pareto_k).rfind("unreliable", 0) == 0);
        const double exact = c.exact;
        CAPTURE(exact);
        CHECK(q.elbo < exact);
        // Because the defensive component covers the second mode the ratios are bounded and
        // the estimate converges: with 20000 draws its error over seeds 1–200 had mean 0.04 se,
        // sd 0.84 se, at most 2.93 se (the t30 alone: mean −3.6 se, the second mode lost).
        EvidenceOptions o;
        o.draws = 20000;
        const Evidence e20 = estimate_evidence(*t, q, o);
        CAPTURE(e20.log_evidence);
        CAPTURE(e20.se);
        CHECK(std::abs(e20.log_evidence - exact) < 3 * e20.se);
        MESSAGE("multimodal: quadrature " << exact << ", ELBO " << q.elbo << ", IS " << e.log_evidence << " ± " << e.se
                                          << ", k-hat " << e.pareto_k << "; with 20000 draws " << e20.log_evidence << " ± "
                                          << e20.se << ", k-hat " << e20.pareto_k);
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

