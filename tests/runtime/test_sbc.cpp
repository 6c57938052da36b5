// Simulation-based calibration, reduced for CI (the full run over every method is bench/sbc):
// 200 replications of varmix, regen and nuts on a small fully observed model and on the paper's
// multimodal model (varblock there is an expected failure, see below), 100 of nuts on an
// occupancy model with a hidden node and 11 weights, and a miscalibrated fit
// that the test must reject. Fixed seeds; about 45 s on 2 cores in Release.
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "validation/sbc.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace vbn;

namespace {

const std::string observed_model = R"(
node x[2] ~ bernoulli(0.5);
node y    ~ logistic(b + w * x);
b ~ normal(0, 1);
w ~ normal(0, 1);
)";

// The methods calibrated in CI; adding one is one line.
// varblock is auto's choice for fully observed models, where it overrelaxes its moves.
const std::vector<std::string> sbc_methods{"varmix", "regen", "nuts", "varblock"};
// Those known to fail on the multimodal model (see the expected-failure case below).
// nuts left the list when the variational fit that starts its chains became the best of 8
// starts on a model with hidden nodes (w[1] p 0.27): its chains now start in the heavier mode.
const std::vector<std::string> multimodal_known_failures{"varblock"};

// With about 15 p-values per run (models × methods × parameters) a family-wise level of 1%
// asks each to be above 0.001.
constexpr double min_p = 1e-3;

std::string histogram_text(const SbcResult& r) {
    std::string out;
    for (std::size_t k = 0; k < r.names.size(); ++k) {
        out += fmt::format("{}: chi2 {:.2f}, p {:.4g}, bins", r.names[k], r.chi_square[k], r.p_value[k]);
        for (int n : r.histogram[k]) out += fmt::format(" {}", n);
        out += "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("chi-square upper tail matches tabulated values") {
    CHECK(chi_square_upper_tail(16.919, 9) == doctest::Approx(0.05).epsilon(1e-3));
    CHECK(chi_square_upper_tail(21.666, 9) == doctest::Approx(0.01).epsilon(1e-3));
    CHECK(chi_square_upper_tail(0, 9) == 1.0);
}

SbcResult run_reduced(const ir::Graph& graph, const std::string& method) {
    SbcOptions o;
    o.method = method;
    o.replications = 200;
    o.seed = 11;
    return run_sbc(graph, o);
}

void check_uniform(const ir::Graph& graph, const std::string& method) {
    CAPTURE(method);
    const SbcResult r = run_reduced(graph, method);
    INFO(histogram_text(r));
    CHECK(r.failed_fits == 0);
    CHECK(r.min_p_value() > min_p);
}

bool known_failure(const std::string& method) {
    return std::find(multimodal_known_failures.begin(), multimodal_known_failures.end(), method) != multimodal_known_failures.end();
}

TEST_CASE("sbc (reduced, CI): ranks are uniform on a small fully observed model and on the multimodal model" *
          doctest::timeout(300)) {
    const ir::Graph observed = compile_model(observed_model, "sbc_observed.vbn");
    const ir::Graph multimodal = load_model(std::string(VBN_SOURCE_DIR) + "/examples/paper/multimodal.vbn");
    for (const std::string& method : sbc_methods) {
        check_uniform(observed, method);
        if (!known_failure(method)) check_uniform(multimodal, method);
    }
}

// Known failure. When the simulated w[1] is large, the posterior has a second mode at
// w[1] < 0 (the hidden cause's sign flipped, which its prior 0.6 / 0.4 only mildly
// penalises). varmix and regen pass since their proposals start from every mode the mode
// search finds (docs/methods.md); nuts passes since its chains start at the best of the
// variational fits from 8 starts, in the heavier mode; varblock has no move between modes
// and proposes from the variational fit's marginals, so its chains stay in the mode of that
// fit: w[1]'s posterior is too narrow, and its rank falls in the end bins (both ends; the
// top one alone before the 8 starts) far too often. The failure is asserted method by
// method: every fit succeeds, w[1]'s p-value is below the level and its end bins hold more
// than 1.5 times their share. Anything else fails the test: a fit that throws, one method
// failing and another not, or a method no longer failing (then move it to the passing ones).
TEST_CASE("sbc (reduced, CI): known failure, asserted per method: methods that miss a mode of the multimodal model" *
          doctest::timeout(300)) {
    const ir::Graph graph = load_model(std::string(VBN_SOURCE_DIR) + "/examples/paper/multimodal.vbn");
    for (const std::string& method : multimodal_known_failures) {
        CAPTURE(method);
        const SbcResult r = run_reduced(graph, method);
        INFO(histogram_text(r));
        CHECK(r.failed_fits == 0);
        CHECK_MESSAGE(r.min_p_value() <= min_p, "the known failure of " << method
                                                                        << " is gone: move it out of multimodal_known_failures");
        // The symptom: w[1]'s rank is an extreme one far too often.
        REQUIRE(r.names.size() == 2);
        CHECK(r.names[0] == "w[1]");
        CHECK(r.p_value[0] <= min_p);
        const auto& bins = r.histogram[0];
        const double share = 200.0 / static_cast<double>(bins.size());
        CHECK(bins.front() + bins.back() > 1.5 * 2 * share);
    }
}

// A hidden-variable model above 10 weights, where `auto` takes nuts when the variational
// proposal fails its pilot check (and varmix when it passes; both are in bench/sbc's full
// run): bench/models/sbc_occupancy.vbn, one posterior mode. 100 replications here, to keep CI
// short (10 expected per bin); bench/sbc runs 200.
TEST_CASE("sbc (reduced, CI): nuts is calibrated on an occupancy model with a hidden node, 11 weights" *
          doctest::timeout(300)) {
    const ir::Graph graph = load_model(std::string(VBN_SOURCE_DIR) + "/bench/models/sbc_occupancy.vbn");
    SbcOptions o;
    o.method = "nuts";
    o.replications = 100;
    o.rows = 50;
    o.seed = 1;
    const SbcResult r = run_sbc(graph, o);
    INFO(histogram_text(r));
    CHECK(r.names.size() == 11);
    CHECK(r.failed_fits == 0);
    CHECK(r.min_p_value() > min_p);
}

TEST_CASE("sbc rejects a fit whose prior is not the one the parameters were drawn from") {
    // θ ~ N(0, 1) but fitted with N(0, 0.3²): posteriors too narrow, ranks pile up at the ends.
    const ir::Graph truth = compile_model(observed_model, "truth.vbn");
    std::string wrong_text = observed_model;
    wrong_text.replace(wrong_text.find("w ~ normal(0, 1)"), 16, "w ~ normal(0, 0.3)");
    const ir::Graph wrong = compile_model(wrong_text, "wrong.vbn");
    SbcOptions o;
    o.method = "varmix";
    o.replications = 200;
    o.seed = 11;
    const SbcResult r = run_sbc(truth, o, &wrong);
    INFO(histogram_text(r));
    CHECK(r.min_p_value() < min_p);
    SbcOptions bad = o;
    bad.bins = 7;
    CHECK_THROWS_AS(run_sbc(truth, bad), Error);
}
