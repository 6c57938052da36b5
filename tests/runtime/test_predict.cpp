// Posterior predictive probabilities against brute-force enumeration of every unobserved
// value (hidden nodes, missing entries, a covariate), draws read back from CmdStan CSV, the
// enumeration limit and the scores.
#include "runtime/predictive/predict.hpp"

#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/data/model.hpp"
#include "runtime/report/output_csv.hpp"
#include "runtime/index.hpp"
#include "tests/runtime/theta_index.hpp"

#include <fmt/format.h>

#include <doctest/doctest.h>

#include <cmath>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace vbn;
using inference::log_inv_logit;
using test::theta_index;

// h hidden → a (with a covariate z) → c (with h): every kind of unobserved value.
const char* kPredictModel = R"(
node h hidden ~ bernoulli(0.3);
covariate z;
node a ~ logistic(b1 + w1 * [h, z]);
node c ~ logistic(b2 + w2 * [h, a]);
b1, b2 ~ normal(0, 1);
w1, w2 ~ normal(0, 2);
)";

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("vbn_test_predict_" + name)).string();
}

Dataset prediction_rows(const ir::Graph& g, const std::string& csv, const std::string& name) {
    const std::string path = temp_path(name);
    std::ofstream(path) << csv;
    Dataset d = load_prediction_csv(g, path);
    std::remove(path.c_str());
    return d;
}

// log p(h, a, c | θ, z) written out from the model text.
struct BrutePredictive {
    int b1, w11, w12, b2, w21, w22;
    explicit BrutePredictive(const ir::Graph& g)
        : b1(theta_index(g, "b1")), w11(theta_index(g, "w1[1]")), w12(theta_index(g, "w1[2]")), b2(theta_index(g, "b2")),
          w21(theta_index(g, "w2[1]")), w22(theta_index(g, "w2[2]")) {}
    double joint(const Eigen::VectorXd& t, double h, double a, double c, double z) const {
        return log_inv_logit(h * inference::logit(0.3)) + log_inv_logit(a * (t[b1] + t[w11] * h + t[w12] * z)) +
               log_inv_logit(c * (t[b2] + t[w21] * h + t[w22] * a));
    }
    // P(x_query = +1 | observed) with the draws weighted by p(observed | θ): values 0 are
    // unobserved; query 0 = h, 1 = a, 2 = c.
    double predictive(const Eigen::MatrixXd& draws, std::array<double, 3> obs, double z, int query) const {
        double num = 0, den = 0;
        for (Eigen::Index s = 0; s < draws.rows(); ++s) {
            const Eigen::VectorXd t = draws.row(s).transpose();
            for (int cfg = 0; cfg < 8; ++cfg) {
                const std::array<double, 3> x{cfg & 1 ? 1.0 : -1.0, cfg & 2 ? 1.0 : -1.0, cfg & 4 ? 1.0 : -1.0};
                bool fits = true;
                for (int i = 0; i < 3; ++i) fits = fits && (obs[static_cast<std::size_t>(i)] == 0 || obs[static_cast<std::size_t>(i)] == x[static_cast<std::size_t>(i)]);
                if (!fits) continue;
                const double p = std::exp(joint(t, x[0], x[1], x[2], z));
                den += p;
                if (x[static_cast<std::size_t>(query)] > 0) num += p;
            }
        }
        return num / den;
    }
};

Eigen::MatrixXd random_draws(int dim, int n, std::uint64_t seed) {
    inference::Rng rng(seed, 0);
    Eigen::MatrixXd d(n, dim);
    for (int s = 0; s < n; ++s)
        for (int k = 0; k < dim; ++k) d(s, k) = 1.5 * rng.normal();
    return d;
}

std::string element_name(const ir::Graph& g, int e) { return g.elements[static_cast<std::size_t>(e)].name; }
}  // namespace

TEST_CASE("predict: every unobserved node of every row against brute-force enumeration") {
    const ir::Graph g = compile_model(kPredictModel, "m.vbn");
    const BrutePredictive brute(g);
    // Rows: a missing; c missing; both missing; both observed (only h is predicted); a
    // repeated row (one pattern, two rows).
    const Dataset d = prediction_rows(g, "a,c,z\n1,,0.5\n,-1,-1.2\n,,0.3\n1,1,2\n1,,0.5\n", "rows.csv");
    REQUIRE(d.rows == 5);
    const Eigen::MatrixXd draws = random_draws(g.dim, 50, 11);
    const auto ps = predict(g, d, draws);
    const std::map<std::string, int> query{{"h", 0}, {"a", 1}, {"c", 2}};
    const std::vector<std::array<double, 3>> obs{{0, 1, 0}, {0, 0, -1}, {0, 0, 0}, {0, 1, 1}, {0, 1, 0}};
    const std::vector<double> z{0.5, -1.2, 0.3, 2, 0.5};
    const std::vector<std::vector<std::string>> expected{{"h", "c"}, {"h", "a"}, {"h", "a", "c"}, {"h"}, {"h", "c"}};
    std::size_t i = 0;
    for (std::size_t r = 0; r < expected.size(); ++r) {
        for (const auto& name : expected[r]) {
            REQUIRE(i < ps.size());
            CAPTURE(r);
            CAPTURE(name);
            CHECK(ps[i].row == static_cast<long>(r + 1));
            CHECK(element_name(g, ps[i].element) == name);
            CHECK(ps[i].truth == 0);
            CHECK(ps[i].p == doctest::Approx(brute.predictive(draws, obs[r], z[r], query.at(name))).epsilon(1e-10));
            ++i;
        }
    }
    CHECK(i == ps.size());
    // The row's observed values weigh the draws: with one draw the answer is the plain
    // conditional; with two it is not the mean of the two conditionals.
    const auto one = predict(g, d, draws.topRows(1));
    CHECK(one[0].p == doctest::Approx(brute.predictive(draws.topRows(1), obs[0], z[0], 0)).epsilon(1e-10));
    const double mean2 = 0.5 * (brute.predictive(draws.topRows(1), obs[0], z[0], 0) + brute.predictive(draws.middleRows(1, 1), obs[0], z[0], 0));
    const auto two = predict(g, d, draws.topRows(2));
    CHECK(two[0].p != doctest::Approx(mean2).epsilon(1e-6));
}

TEST_CASE("predict: --target hides the target's values, keeps them for scoring, sums the rest out") {
    const ir::Graph g = compile_model(kPredictModel, "m.vbn");
    const BrutePredictive brute(g);
    const Dataset d = prediction_rows(g, "z,a,c\n0.5,1,1\n-1.2,-1,\n0.3,,-1\n", "target.csv");
    const Eigen::MatrixXd draws = random_draws(g.dim, 40, 12);
    PredictOptions o;
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == "a") o.target = static_cast<int>(e);
    REQUIRE(element_name(g, o.target) == "a");
    const auto ps = predict(g, d, draws, o);
    REQUIRE(ps.size() == 3);
    CHECK(ps[0].truth == 1);
    CHECK(ps[1].truth == -1);
    CHECK(ps[2].truth == 0);
    CHECK(ps[0].p == doctest::Approx(brute.predictive(draws, {0, 0, 1}, 0.5, 1)).epsilon(1e-10));
    CHECK(ps[1].p == doctest::Approx(brute.predictive(draws, {0, 0, 0}, -1.2, 1)).epsilon(1e-10));
    CHECK(ps[2].p == doctest::Approx(brute.predictive(draws, {0, 0, -1}, 0.3, 1)).epsilon(1e-10));
    const PredictionScores s = score_predictions(ps);
    CHECK(s.scored == 2);
    const double p0 = ps[0].p, p1 = ps[1].p;
    CHECK(s.log_loss == doctest::Approx(-(std::log(p0) + std::log(1 - p1)) / 2));
    CHECK(s.brier == doctest::Approx(((p0 - 1) * (p0 - 1) + p1 * p1) / 2));
    CHECK(s.accuracy == doctest::Approx(((p0 > 0.5 ? 1 : 0) + (p1 <= 0.5 ? 1 : 0)) / 2.0));
}

TEST_CASE("predict: a node without a column is predicted in every row; bad input is refused") {
    const ir::Graph g = compile_model(kPredictModel, "m.vbn");
    std::vector<std::string> notes;
    const std::string path = temp_path("absent.csv");
    std::ofstream(path) << "z\n0.1\n-0.4\n";
    const Dataset d = load_prediction_csv(g, path, &notes);
    std::remove(path.c_str());
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("no column for a, c") != std::string::npos);
    const auto ps = predict(g, d, random_draws(g.dim, 5, 3));
    CHECK(ps.size() == 6);
    CHECK_THROWS_AS(predict(g, d, Eigen::MatrixXd(5, g.dim + 1)), Error);
    CHECK_THROWS_AS(predict(g, d, Eigen::MatrixXd(0, g.dim)), Error);
    Eigen::MatrixXd nan_draws = random_draws(g.dim, 5, 3);
    nan_draws(2, 1) = std::nan("");
    CHECK_THROWS_AS(predict(g, d, nan_draws), Error);
}

TEST_CASE("predict: more unobserved values summed out together than the limit is a limit error naming the line") {
    const ir::Graph g = compile_model("node h[13] hidden ~ bernoulli(0.5);\nnode y ~ logistic(w * h);\nw ~ normal(0, 1);\n", "big.vbn");
    const Dataset d = prediction_rows(g, "y\n1\n-1\n", "big.csv");
    PredictOptions o;
    try {
        predict(g, d, Eigen::MatrixXd::Zero(2, g.dim), o);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::limit);
        CHECK(std::string(e.what()).find(":2:") != std::string::npos);
        CHECK(std::string(e.what()).find("the limit is 12") != std::string::npos);
    }
    o.max_enumerated = 13;
    CHECK(predict(g, d, Eigen::MatrixXd::Zero(2, g.dim), o).size() == 26);  // 13 hidden nodes in 2 rows
}

// Hidden values linked in a loop (h1 → h2 → h3 → h4 and h1 → h4), a fixed term, a
// covariate and observed children, some of them missing: rows whose groups hold 2 to 7
// unobserved values with widths of 2 and 3.
const char* kLoopModel = R"(
covariate z;
node h1 hidden ~ bernoulli(0.4);
node h2 hidden ~ logistic(a2 + v2 * h1);
node h3 hidden ~ logistic(a3 + v3 * [h2, z]);
node h4 hidden ~ logistic(a4 + 0.7 * h1 + v4 * h3);
node o1 ~ logistic(c1 + u1 * [h1, h2]);
node o2 ~ logistic(c2 + u2 * [h3, z]);
node o3 ~ logistic(c3 + u3 * h4);
a2, a3, a4, c1, c2, c3 ~ normal(0, 1);
v2, v3, v4, u1, u2, u3 ~ normal(0, 2);
)";

TEST_CASE("predict: groups summed by variable elimination give the enumerated answer") {
    const ir::Graph g = compile_model(kLoopModel, "loop.vbn");
    const Dataset d = prediction_rows(g, "o1,o2,o3,z\n1,-1,1,0.4\n,1,-1,-0.8\n1,,,1.5\n,,,0\n-1,1,,2\n", "loop.csv");
    const Eigen::MatrixXd draws = random_draws(g.dim, 30, 21);
    PredictOptions enumerate, eliminate;
    eliminate.max_enumerated = 3;  // every group of 4 or more is eliminated, at width 3 at most
    const auto want = predict(g, d, draws, enumerate);
    const auto got = predict(g, d, draws, eliminate);
    REQUIRE(got.size() == want.size());
    CHECK(want.size() == 4 + 5 + 6 + 7 + 5);
    for (std::size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(got[i].row == want[i].row);
        CHECK(got[i].element == want[i].element);
        CHECK(got[i].p == doctest::Approx(want[i].p).epsilon(1e-10));
    }
    // One target: the other unobserved values of its row are summed out by elimination.
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == "o2") enumerate.target = eliminate.target = static_cast<int>(e);
    const auto want_t = predict(g, d, draws, enumerate);
    const auto got_t = predict(g, d, draws, eliminate);
    REQUIRE(got_t.size() == 5);
    for (std::size_t i = 0; i < want_t.size(); ++i) CHECK(got_t[i].p == doctest::Approx(want_t[i].p).epsilon(1e-10));
    // Width 3 is the least these groups need: a limit of 2 is refused, naming the width.
    eliminate.max_enumerated = 2;
    try {
        predict(g, d, draws, eliminate);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::limit);
        CHECK(std::string(e.what()).find("still sums 3 of them at once") != std::string::npos);
    }
}

TEST_CASE("predict: a hidden chain of 20 is predicted by elimination, against the forward-backward answer") {
    // h1 → … → h20 by a fixed weight, each h_i with one observed child o_i; one draw, so the
    // prediction is the plain conditional P(h_i = +1 | o), which forward-backward gives.
    std::string model = "node h1 hidden ~ bernoulli(0.7);\n";
    for (int i = 2; i <= 20; ++i) model += fmt::format("node h{} hidden ~ logistic(1.5 * h{});\n", i, i - 1);
    for (int i = 1; i <= 20; ++i) model += fmt::format("node o{} ~ logistic(w{} * h{});\nw{} ~ normal(0, 1);\n", i, i, i, i);
    const ir::Graph g = compile_model(model, "chain.vbn");
    std::string header, row;
    for (int i = 1; i <= 20; ++i) {
        header += fmt::format("{}o{}", i > 1 ? "," : "", i);
        row += fmt::format("{}{}", i > 1 ? "," : "", i % 3 == 0 ? "-1" : "1");
    }
    const Dataset d = prediction_rows(g, header + "\n" + row + "\n", "chain.csv");
    const Eigen::MatrixXd draws = random_draws(g.dim, 1, 31);
    const auto ps = predict(g, d, draws);
    REQUIRE(ps.size() == 20);
    // Forward-backward in probability space (20 steps: no underflow).
    std::vector<double> w(20), o(20);
    for (int i = 0; i < 20; ++i) {
        w[sz(i)] = draws(0, theta_index(g, fmt::format("w{}", i + 1)));
        o[sz(i)] = (i + 1) % 3 == 0 ? -1 : 1;
    }
    auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
    auto emit = [&](int i, double h) { return sig(o[sz(i)] * w[sz(i)] * h); };
    auto step = [&](double from, double to) { return sig(to * 1.5 * from); };
    std::vector<std::array<double, 2>> fwd(20), bwd(20);  // index 0: h = −1, 1: h = +1
    fwd[0] = {0.3 * emit(0, -1), 0.7 * emit(0, 1)};
    for (int i = 1; i < 20; ++i)
        for (int b = 0; b < 2; ++b) {
            const double h = b ? 1 : -1;
            fwd[sz(i)][sz(b)] = emit(i, h) * (fwd[sz(i - 1)][0] * step(-1, h) + fwd[sz(i - 1)][1] * step(1, h));
        }
    bwd[19] = {1, 1};
    for (int i = 18; i >= 0; --i)
        for (int b = 0; b < 2; ++b) {
            const double h = b ? 1 : -1;
            bwd[sz(i)][sz(b)] = step(h, -1) * emit(i + 1, -1) * bwd[sz(i + 1)][0] + step(h, 1) * emit(i + 1, 1) * bwd[sz(i + 1)][1];
        }
    for (int i = 0; i < 20; ++i) {
        CAPTURE(i);
        CHECK(element_name(g, ps[sz(i)].element) == fmt::format("h{}", i + 1));
        const double plus = fwd[sz(i)][1] * bwd[sz(i)][1], minus = fwd[sz(i)][0] * bwd[sz(i)][0];
        CHECK(ps[sz(i)].p == doctest::Approx(plus / (plus + minus)).epsilon(1e-10));
    }
}

TEST_CASE("predict: draws from CmdStan CSV are matched to parameters by name") {
    const ir::Graph g = compile_model(kPredictModel, "m.vbn");
    const Eigen::MatrixXd draws = random_draws(g.dim, 7, 5);
    // Columns in reverse order, plus one the model does not have.
    std::vector<std::string> names;
    for (int k = g.dim - 1; k >= 0; --k) names.push_back(g.theta_csv_name(k));
    names.push_back("extra");
    const std::string path = temp_path("draws_1.csv");
    {
        CsvConfig cfg;
        cfg.model = "m";
        CsvWriter w(path, cfg, names);
        w.adaptation_terminated(1.0);
        for (int s = 0; s < draws.rows(); ++s) {
            Eigen::VectorXd x(g.dim + 1);
            for (int k = 0; k < g.dim; ++k) x[g.dim - 1 - k] = draws(s, k);
            x[g.dim] = 42;
            w.write_draw(SamplerValues{}, x);
        }
        w.finish(0, 0);
    }
    std::vector<std::string> notes;
    const Eigen::MatrixXd back = draws_from_stan_csv(g, {path, path}, &notes);
    REQUIRE(back.rows() == 14);
    CHECK((back.topRows(7) - draws).cwiseAbs().maxCoeff() == 0);
    CHECK((back.bottomRows(7) - draws).cwiseAbs().maxCoeff() == 0);
    CHECK(notes.size() == 2);
    // A model with a parameter the file lacks.
    const ir::Graph other = compile_model("node y ~ logistic(v);\nv ~ normal(0, 1);\n", "other.vbn");
    try {
        draws_from_stan_csv(other, {path});
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::data);
        CHECK(std::string(e.what()).find("no column 'v'") != std::string::npos);
    }
    std::remove(path.c_str());
}
