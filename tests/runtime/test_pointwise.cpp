// The pointwise log-likelihood (`vbn fit --log-lik`) against brute-force enumeration of
// every unobserved value of each row: a hidden node, missing cells of logistic nodes and of
// an observed root with a fixed probability, a covariate, repeated rows. Then the patterns'
// values that one target forms from its shared terms (Target::pattern_log_likelihoods)
// against the target's own log-likelihood and against a target built on each row alone.
#include "runtime/target/pointwise.hpp"

#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/target/target.hpp"
#include "tests/runtime/theta_index.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace vbn;
using inference::log_inv_logit;
using test::theta_index;

const char* kModel = R"(
node h hidden ~ bernoulli(0.3);
node o ~ bernoulli(0.6);
covariate z;
node a ~ logistic(b1 + w1 * [h, z]);
node c ~ logistic(b2 + w2 * [h, a, o]);
b1, b2 ~ normal(0, 1);
w1, w2 ~ normal(0, 2);
)";

// Rows (o, a, c, z): all observed; a missing; c missing; o missing; a and c missing; o, a
// and c missing (log p = 0: nothing observed); the first row again (one pattern, two rows).
const char* kData = "o,a,c,z\n1,1,-1,0.5\n-1,,1,-1.2\n1,-1,,0.3\n,1,1,2\n-1,,,0.7\n,,,1.1\n1,1,-1,0.5\n";

// log p(o, a, c | θ, z) summed over h and the row's missing values (0), written out from
// the model text.
struct Brute {
    int b1, w11, w12, b2, w21, w22, w23;
    explicit Brute(const ir::Graph& g)
        : b1(theta_index(g, "b1")), w11(theta_index(g, "w1[1]")), w12(theta_index(g, "w1[2]")), b2(theta_index(g, "b2")),
          w21(theta_index(g, "w2[1]")), w22(theta_index(g, "w2[2]")), w23(theta_index(g, "w2[3]")) {}
    double joint(const Eigen::VectorXd& t, double h, double o, double a, double c, double z) const {
        return log_inv_logit(h * inference::logit(0.3)) + log_inv_logit(o * inference::logit(0.6)) +
               log_inv_logit(a * (t[b1] + t[w11] * h + t[w12] * z)) +
               log_inv_logit(c * (t[b2] + t[w21] * h + t[w22] * a + t[w23] * o));
    }
    double row(const Eigen::VectorXd& t, std::array<double, 3> oac, double z) const {
        double p = 0;
        for (int cfg = 0; cfg < 16; ++cfg) {
            const std::array<double, 4> x{cfg & 1 ? 1.0 : -1.0, cfg & 2 ? 1.0 : -1.0, cfg & 4 ? 1.0 : -1.0, cfg & 8 ? 1.0 : -1.0};
            bool fits = true;
            for (std::size_t i = 0; i < 3; ++i) fits = fits && (oac[i] == 0 || oac[i] == x[i + 1]);
            if (fits) p += std::exp(joint(t, x[0], x[1], x[2], x[3], z));
        }
        return std::log(p);
    }
};

const std::vector<std::array<double, 3>> kRows{{1, 1, -1}, {-1, 0, 1}, {1, -1, 0}, {0, 1, 1}, {-1, 0, 0}, {0, 0, 0}, {1, 1, -1}};
const std::vector<double> kZ{0.5, -1.2, 0.3, 2, 0.7, 1.1, 0.5};

Dataset load(const ir::Graph& g) {
    std::istringstream in(kData);
    return load_csv(g, in, "rows.csv", nullptr, true);
}

}  // namespace

TEST_CASE("pointwise log-likelihood equals brute-force enumeration of each row") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    const Dataset d = load(g);
    REQUIRE(d.rows == 7);
    REQUIRE(d.patterns == 6);
    const Brute brute(g);
    const PointwiseLogLik pw(g, d);
    REQUIRE(pw.rows() == 7);
    PointwiseLogLik::Workspace ws = pw.make_workspace();
    inference::Rng rng(5, 0);
    Eigen::VectorXd ll(pw.rows());
    for (int s = 0; s < 20; ++s) {
        Eigen::VectorXd t(g.dim);
        for (int k = 0; k < g.dim; ++k) t[k] = 1.5 * rng.normal();
        pw.evaluate(t, ll, ws);
        for (std::size_t r = 0; r < kRows.size(); ++r) {
            CAPTURE(r);
            CHECK(ll[static_cast<Eigen::Index>(r)] == doctest::Approx(brute.row(t, kRows[r], kZ[r])).epsilon(1e-12));
        }
        CHECK(std::abs(ll[5]) < 1e-12);  // nothing observed
    }
}

TEST_CASE("pointwise log-likelihood of draws in output order, and the rows' patterns required") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    const Dataset d = load(g);
    const Brute brute(g);
    const std::vector<int> order = output_order(g);
    Eigen::MatrixXd draws(3, g.dim);
    inference::Rng rng(9, 0);
    for (Eigen::Index s = 0; s < draws.rows(); ++s)
        for (Eigen::Index j = 0; j < draws.cols(); ++j) draws(s, j) = rng.normal();
    const Eigen::MatrixXd ll = services::pointwise_log_lik(g, d, draws, 12);
    REQUIRE(ll.rows() == 3);
    REQUIRE(ll.cols() == 7);
    for (Eigen::Index s = 0; s < draws.rows(); ++s) {
        Eigen::VectorXd t(g.dim);
        for (std::size_t j = 0; j < order.size(); ++j) t[order[j]] = draws(s, static_cast<Eigen::Index>(j));
        for (std::size_t r = 0; r < kRows.size(); ++r)
            CHECK(ll(s, static_cast<Eigen::Index>(r)) == doctest::Approx(brute.row(t, kRows[r], kZ[r])).epsilon(1e-12));
    }
    std::istringstream in(kData);
    const Dataset no_rows = load_csv(g, in, "rows.csv");
    CHECK_THROWS_AS(PointwiseLogLik(g, no_rows), Error);
}

namespace {

// Every kind of term at once: h hidden in every row, with a, c and the fixed-probability root
// o observed or missing and the covariate z on three values, so that rows repeat their
// summed-out factors (components from shared tables); and u missing where the covariate x is
// a real number, so that no other row reads its factors (components summed directly).
const char* kMixedModel = R"(
node h hidden ~ bernoulli(0.3);
node o ~ bernoulli(0.6);
covariate z;
node a ~ logistic(b1 + w1 * [h, z]);
node c ~ logistic(b2 + w2 * [h, a, o]);
covariate x;
node u ~ logistic(b3 + w3 * x);
node v ~ logistic(b4 + w4 * [u, x]);
b1, b2, b3, b4 ~ normal(0, 1);
w1, w2, w3, w4 ~ normal(0, 2);
)";

const char* kMixedHeader = "o,a,c,z,u,v,x\n";

// 240 rows of random values: binary cells missing with the given odds, x a real number in
// half of the rows and 0 or 1 in the others.
std::vector<std::string> mixed_rows() {
    inference::Rng rng(17, 0);
    auto cell = [&](double missing) -> std::string {
        if (rng.uniform() < missing) return "";
        return rng.uniform() < 0.5 ? "1" : "-1";
    };
    const std::array<const char*, 3> z{"-1", "0.5", "2"};
    std::vector<std::string> rows;
    for (int r = 0; r < 240; ++r) {
        std::ostringstream row;  // one draw after another, in column order
        row.precision(17);
        row << cell(0.2) << ',';
        row << cell(0.3) << ',';
        row << cell(0.2) << ',';
        row << z[static_cast<std::size_t>(rng.uniform() * 3)] << ',';
        row << cell(0.3) << ',';
        row << cell(0.1) << ',';
        row << (rng.uniform() < 0.5 ? rng.normal() : static_cast<double>(rng.uniform() < 0.5)) << '\n';
        rows.push_back(row.str());
    }
    return rows;
}

Dataset load_rows(const ir::Graph& g, const std::vector<std::string>& rows) {
    std::string csv = kMixedHeader;
    for (const auto& r : rows) csv += r;
    std::istringstream in(csv);
    return load_csv(g, in, "mixed.csv", nullptr, true);
}

}  // namespace

TEST_CASE("the patterns' log-likelihoods sum, row by row, to the target's log-likelihood") {
    const ir::Graph g = compile_model(kMixedModel, "mixed.vbn");
    const std::vector<std::string> rows = mixed_rows();
    const Dataset d = load_rows(g, rows);
    REQUIRE(d.rows == 240);
    REQUIRE(d.patterns < d.rows);  // rows repeat
    const auto target = make_target(g, d);
    REQUIRE(target->directly_summed_components() > 0);
    REQUIRE(target->tabulated_components() > 0);
    auto target_ws = target->make_workspace();
    const PointwiseLogLik pw(g, d);
    REQUIRE(pw.patterns() == d.patterns);
    auto ws = pw.make_workspace();
    inference::Rng rng(23, 0);
    Eigen::VectorXd ll(pw.rows());
    for (int s = 0; s < 10; ++s) {
        Eigen::VectorXd t(g.dim);
        for (int k = 0; k < g.dim; ++k) t[k] = 1.5 * rng.normal();
        pw.evaluate(t, ll, ws);
        const double total = target->log_likelihood(t, target_ws) + target->families().fixed_log_likelihood;
        CHECK(ll.sum() == doctest::Approx(total).epsilon(1e-12));
    }
}

TEST_CASE("each pattern's log-likelihood is that of a target built on its row alone") {
    const ir::Graph g = compile_model(kMixedModel, "mixed.vbn");
    const std::vector<std::string> rows = mixed_rows();
    const PointwiseLogLik pw(g, load_rows(g, rows));
    auto ws = pw.make_workspace();
    inference::Rng rng(29, 0);
    Eigen::VectorXd t(g.dim), ll(pw.rows());
    for (int k = 0; k < g.dim; ++k) t[k] = 1.5 * rng.normal();
    pw.evaluate(t, ll, ws);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        CAPTURE(rows[r]);
        const auto alone = make_target(g, load_rows(g, {rows[r]}));
        auto alone_ws = alone->make_workspace();
        const double expected = alone->log_likelihood(t, alone_ws) + alone->families().fixed_log_likelihood;
        CHECK(ll[static_cast<Eigen::Index>(r)] == doctest::Approx(expected).epsilon(1e-12));
    }
}

TEST_CASE("the patterns' log-likelihoods need a target that kept their terms, and room for them") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    const Dataset d = load(g);
    const Eigen::VectorXd t = Eigen::VectorXd::Zero(g.dim);
    Eigen::VectorXd out(d.patterns);
    const auto plain = make_target(g, d);
    auto plain_ws = plain->make_workspace();
    CHECK(plain->patterns() == 0);
    CHECK_THROWS_AS(plain->pattern_log_likelihoods(t, out, plain_ws), Error);
    const Target kept(g, d, TargetOptions{.pattern_terms = true});
    auto ws = kept.make_workspace();
    REQUIRE(kept.patterns() == d.patterns);
    kept.pattern_log_likelihoods(t, out, ws);
    CHECK(out.allFinite());
    Eigen::VectorXd short_out(d.patterns - 1);
    CHECK_THROWS_AS(kept.pattern_log_likelihoods(t, short_out, ws), Error);
}
