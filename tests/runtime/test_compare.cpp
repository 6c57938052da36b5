// The comparison job (runtime/services/compare.hpp): ranking by log evidence, log Bayes
// factors against the best, posterior model probabilities that stay finite across any gap,
// and the refusals (one model, different observed columns, no finite evidence).
#include "runtime/services/compare.hpp"

#include "runtime/data/model.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace vbn;

std::vector<Evidence> evidences(const std::vector<double>& log_evidence, double se = 0.01) {
    std::vector<Evidence> e;
    for (const double l : log_evidence) e.push_back(Evidence{l, se, 0.1, 1000, true});
    return e;
}

std::vector<std::string> names(std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < n; ++k) out.push_back("m" + std::to_string(k + 1));
    return out;
}

std::vector<services::RankedModel> rank(const std::vector<double>& log_evidence) {
    return services::rank_by_evidence(evidences(log_evidence), names(log_evidence.size()));
}

}  // namespace

TEST_CASE("compare: evidences -13, -10, -11 rank 2, 3, 1 with probabilities 1 : e^-1 : e^-3") {
    const auto r = rank({-13, -10, -11});
    REQUIRE(r.size() == 3);
    CHECK(r[0].model == 1);
    CHECK(r[1].model == 2);
    CHECK(r[2].model == 0);
    const double z = 1 + std::exp(-1.0) + std::exp(-3.0);  // 1.4176665...
    CHECK(r[0].probability == doctest::Approx(1 / z).epsilon(1e-14));  // 0.70538...
    CHECK(r[1].probability == doctest::Approx(std::exp(-1.0) / z).epsilon(1e-14));  // 0.25949...
    CHECK(r[2].probability == doctest::Approx(std::exp(-3.0) / z).epsilon(1e-14));  // 0.03511...
    CHECK(r[0].probability == doctest::Approx(0.7053845).epsilon(1e-6));
    CHECK(r[0].log_bayes_factor == 0);
    CHECK(r[1].log_bayes_factor == -1);
    CHECK(r[2].log_bayes_factor == -3);
    CHECK(r[2].log_probability == doctest::Approx(-3 - std::log(z)));
    CHECK(r[0].se == 0);
    CHECK(r[1].se == doctest::Approx(std::hypot(0.01, 0.01)));
}

TEST_CASE("compare: probabilities stay finite and sum to 1 whatever the gap or the scale") {
    // exp(-1e6) underflows: normalising exp(l_k) directly would give 0 / 0.
    const auto far = rank({-1e6, -1e6 - 2});
    CHECK(far[0].probability == doctest::Approx(1 / (1 + std::exp(-2.0))));
    CHECK(far[1].probability == doctest::Approx(std::exp(-2.0) / (1 + std::exp(-2.0))));
    // A gap of thousands of nats: the worse model's probability is 0, its log still exact.
    const auto gap = rank({-10, -5000, -10});
    CHECK(gap[0].model == 0);  // ties keep the order given
    CHECK(gap[1].model == 2);
    CHECK(gap[0].probability == doctest::Approx(0.5));
    CHECK(gap[2].probability == 0);
    CHECK(gap[2].log_probability == doctest::Approx(-4990 - std::log(2.0)));
    CHECK(gap[2].log_bayes_factor == -4990);
    for (const auto& r : {far, gap}) {
        double sum = 0;
        for (const auto& m : r) {
            CHECK(std::isfinite(m.probability));
            sum += m.probability;
        }
        CHECK(sum == doctest::Approx(1));
    }
}

TEST_CASE("compare: a model that gives the data probability 0 ranks last with probability 0") {
    const double inf = std::numeric_limits<double>::infinity();
    const auto r = rank({-inf, -3});
    CHECK(r[0].model == 1);
    CHECK(r[0].probability == 1);
    CHECK(r[1].probability == 0);
    CHECK(r[1].log_bayes_factor == -inf);
}

TEST_CASE("compare: refuses one model, and evidences that cannot be ranked") {
    const double inf = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH(services::check_model_count({"a.vbn"}), "compare needs two or more models to rank, got 1 (a.vbn)");
    CHECK_NOTHROW(services::check_model_count({"a.vbn", "a.vbn"}));
    try {
        rank({-3});
        FAIL("one model was ranked");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::usage);
    }
    CHECK_THROWS_WITH(rank({-3, std::nan("")}), doctest::Contains("m2: log evidence nan"));
    CHECK_THROWS_WITH(rank({inf, -3}), doctest::Contains("m1: log evidence inf"));
    CHECK_THROWS_WITH(rank({-inf, -inf}), doctest::Contains("every model gives the data probability 0"));
}

TEST_CASE("services::compare: each model's evidence is services::evidence's, ranked") {
    const ir::Graph wide = compile_model("node o ~ bernoulli(0.5);\nnode y ~ logistic(b + w * o);\nb, w ~ normal(0, 3);\n", "wide");
    const ir::Graph none = compile_model("node o ~ bernoulli(0.5);\nnode y ~ logistic(b);\nb ~ normal(0, 3);\n", "none");
    // y follows o in 19 of 20 rows: the model with the weight should win clearly.
    std::string text = "o,y\n";
    for (int k = 0; k < 20; ++k) text += k % 2 == 0 ? (k == 4 ? "1,-1\n" : "1,1\n") : "-1,-1\n";
    std::istringstream c1(text), c2(text);
    const Dataset d1 = load_csv(wide, c1, "d.csv"), d2 = load_csv(none, c2, "d.csv");
    services::EvidenceSettings s;
    s.evidence.draws = 1000;
    const services::CompareRun run = services::compare({{"none", &none, &d2}, {"wide", &wide, &d1}}, s);
    REQUIRE(run.evidence.size() == 2);
    CHECK(run.evidence[0].evidence.log_evidence == services::evidence(none, d2, s).evidence.log_evidence);
    CHECK(run.evidence[1].evidence.log_evidence == services::evidence(wide, d1, s).evidence.log_evidence);
    REQUIRE(run.ranking.size() == 2);
    CHECK(run.ranking[0].model == 1);
    CHECK(run.ranking[0].probability > 0.9);
    CHECK(run.ranking[1].log_bayes_factor ==
          doctest::Approx(run.evidence[0].evidence.log_evidence - run.evidence[1].evidence.log_evidence));

    const ir::Graph more = compile_model("node o ~ bernoulli(0.5);\nnode y ~ logistic(b);\nnode z ~ logistic(c);\nb, c ~ normal(0, 3);\n", "more");
    std::istringstream c3("o,y,z\n1,1,1\n");
    const Dataset d3 = load_csv(more, c3, "d.csv");
    try {
        services::compare({{"none", &none, &d2}, {"more", &more, &d3}}, s);
        FAIL("models of different data were compared");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::usage);
        CHECK(std::string(e.what()).find("none and more observe different columns (o, y vs o, y, z)") != std::string::npos);
    }
}

TEST_CASE("compare by loo: elpd differences and the se of the pointwise differences, as loo_compare") {
    // Three models of 4 rows: B best, then A, then C.
    auto result = [](std::vector<double> pointwise) {
        vbn::inference::LooResult r;
        for (double v : pointwise) {
            vbn::inference::LooPoint p;
            p.elpd_loo = v;
            r.points.push_back(p);
            r.elpd_loo += v;
        }
        return r;
    };
    const std::vector<vbn::inference::LooResult> loo{result({-1.0, -2.0, -0.5, -3.0}), result({-0.8, -1.5, -0.7, -2.0}),
                                                     result({-2.0, -2.5, -1.0, -3.5})};
    const auto ranked = vbn::services::rank_by_loo(loo, {"A", "B", "C"});
    REQUIRE(ranked.size() == 3);
    CHECK(ranked[0].model == 1);
    CHECK(ranked[0].elpd_diff == 0);
    CHECK(ranked[0].se_diff == 0);
    CHECK(ranked[1].model == 0);
    // A − B pointwise: −0.2, −0.5, 0.2, −1.0: sum −1.5, sd 0.50580 → se √4 · sd = 1.01160.
    CHECK(ranked[1].elpd_diff == doctest::Approx(-1.5).epsilon(1e-12));
    CHECK(ranked[1].se_diff == doctest::Approx(1.011599393699568).epsilon(1e-12));
    // C − B: −1.2, −1.0, −0.3, −1.5.
    CHECK(ranked[2].model == 2);
    CHECK(ranked[2].elpd_diff == doctest::Approx(-4.0).epsilon(1e-12));
    CHECK(ranked[2].se_diff == doctest::Approx(1.019803902718557).epsilon(1e-12));
    CHECK_THROWS_AS(vbn::services::rank_by_loo({loo[0], result({-1.0})}, {"A", "D"}), vbn::Error);
}
