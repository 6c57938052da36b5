// The gibbs method (runtime/sampling/gibbs.hpp) against exact answers: the complete-data density
// against the exact target of the same model with the hidden values observed, each
// conditional draw against brute-force enumeration of the joint, gradients and curvature
// against finite differences, and the posterior of the weights against grid integration of
// the exact posterior — on the multimodal example and on data whose rows have 15 linked
// unobserved values, more than the exact target sums out by default.
#include "runtime/sampling/gibbs.hpp"

#include "inference/diagnostics.hpp"
#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "runtime/data/csv.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "tests/runtime/paper_dir.hpp"
#include "tests/runtime/same_chains.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace vbn;
using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

using test::paper;

Dataset csv_from_text(const ir::Graph& g, const std::string& text) {
    std::istringstream in(text);
    return load_csv(g, in, "test.csv");
}

// The exact posterior of a 2-parameter model on a regular grid (rectangle rule), checked to
// be negligible at the edges.
struct Grid {
    Vec mean = Vec::Zero(2);
    Mat cov = Mat::Zero(2, 2);
};

Grid grid_posterior(const std::function<double(const Vec&)>& log_density, Vec lo, Vec hi, int n) {
    std::vector<double> lp(static_cast<std::size_t>(n * n));
    double top = -INFINITY, edge = -INFINITY;
    Vec x(2);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            x << lo[0] + (hi[0] - lo[0]) * i / (n - 1), lo[1] + (hi[1] - lo[1]) * j / (n - 1);
            const double v = log_density(x);
            lp[static_cast<std::size_t>(i * n + j)] = v;
            top = std::max(top, v);
            if (i == 0 || j == 0 || i == n - 1 || j == n - 1) edge = std::max(edge, v);
        }
    REQUIRE(edge - top < -25);
    Grid g;
    double z = 0;
    Mat second = Mat::Zero(2, 2);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            x << lo[0] + (hi[0] - lo[0]) * i / (n - 1), lo[1] + (hi[1] - lo[1]) * j / (n - 1);
            const double p = std::exp(lp[static_cast<std::size_t>(i * n + j)] - top);
            z += p;
            g.mean += p * x;
            second += p * x * x.transpose();
        }
    g.mean /= z;
    g.cov = second / z - g.mean * g.mean.transpose();
    return g;
}

// Pooled posterior mean and covariance of the draws, each with its Monte Carlo standard
// error sd / sqrt(ESS), the ESS of the (split) chains of the quantity itself.
void check_against(const FitResult& r, const Grid& exact, double sigmas) {
    const int chains = static_cast<int>(r.chains.size());
    const int n = static_cast<int>(r.chains[0].draws.rows());
    auto series = [&](const std::function<double(const Eigen::RowVectorXd&)>& f) {
        Mat m(n, chains);
        for (int c = 0; c < chains; ++c)
            for (int t = 0; t < n; ++t) m(t, c) = f(r.chains[static_cast<std::size_t>(c)].draws.row(t));
        return m;
    };
    auto check = [&](const Mat& m, double truth, const char* what) {
        const double mean = m.mean();
        const double mcse = inference::mcse_mean(m);
        INFO(what << ": draws " << mean << " ± " << mcse << " (ess " << inference::ess_mean(m) << "), exact " << truth);
        CHECK(std::isfinite(mcse));
        CHECK(std::abs(mean - truth) < sigmas * mcse);
    };
    for (int k = 0; k < 2; ++k) check(series([&](const auto& x) { return x[k]; }), exact.mean[k], "mean");
    for (int a = 0; a < 2; ++a)
        for (int b = a; b < 2; ++b)
            check(series([&](const auto& x) { return (x[a] - exact.mean[a]) * (x[b] - exact.mean[b]); }), exact.cov(a, b),
                  "covariance");
}

// The over-limit model: 14 hidden causes and a partly missing observed one, all feeding two
// observed children through fixed weights, so each row links 14–15 unobserved values; the
// free parameters are the children's two biases.
const char* const wide_model = R"(
node h[14] hidden ~ bernoulli(0.5);
node m ~ bernoulli(0.3);
node y[2] ~ logistic(b + 0.3 * h + 0.8 * m);
b ~ normal(0, 2);
)";

// T rows simulated with b = (0.5, -1); m missing in every third row.
std::string wide_data(int rows, std::uint64_t seed) {
    inference::Rng rng(seed, 0);
    std::string csv = "m,y[1],y[2]\n";
    const double b[2] = {0.5, -1};
    for (int t = 0; t < rows; ++t) {
        double s = 0;
        for (int k = 0; k < 14; ++k) s += rng.bernoulli(0.5) ? 1 : -1;
        const int m = rng.bernoulli(0.3) ? 1 : -1;
        csv += t % 3 == 0 ? "NA" : std::to_string(m);
        for (double bk : b) csv += rng.bernoulli(inference::inv_logit(bk + 0.3 * s + 0.8 * m)) ? ",1" : ",-1";
        csv += "\n";
    }
    return csv;
}

int column(const ir::Graph& g, const Dataset& d, const std::string& name) {
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == name) return d.column_of[e];
    FAIL("no element " << name);
    return -1;
}

// The same posterior by summing over Σh (binomial) and m by hand: log p(b) + log p(y | b),
// with the Target's conventions (no prior normaliser, no term for an observed m).
double wide_log_posterior(const ir::Graph& g, const Dataset& d, const Vec& b) {
    const int cm = column(g, d, "m");
    const int cy[2] = {column(g, d, "y[1]"), column(g, d, "y[2]")};
    double log_binom[15];
    for (int ones = 0; ones <= 14; ++ones)
        log_binom[ones] = std::lgamma(15) - std::lgamma(ones + 1) - std::lgamma(15 - ones) - 14 * std::log(2);
    double lp = -0.5 * b.squaredNorm() / 4;
    for (int p = 0; p < d.patterns; ++p) {
        const int m_obs = d.value(p, cm);
        double row = -INFINITY;
        for (int ones = 0; ones <= 14; ++ones) {
            const double s = 2 * ones - 14;
            for (int m : {-1, 1}) {
                if (m_obs != 0 && m != m_obs) continue;
                double v = log_binom[ones] + (m_obs == 0 ? std::log(m > 0 ? 0.3 : 0.7) : 0);
                for (int k = 0; k < 2; ++k) v += inference::log_inv_logit(d.value(p, cy[k]) * (b[k] + 0.3 * s + 0.8 * m));
                row = inference::log_sum_exp(row, v);
            }
        }
        lp += d.count[static_cast<std::size_t>(p)] * row;
    }
    return lp;
}

FitOptions gibbs_options(int draws, std::uint64_t seed) {
    FitOptions o;
    o.method = "gibbs";
    o.warmup = 500;
    o.draws = draws;
    o.seed = seed;
    return o;
}

}  // namespace

TEST_CASE("gibbs: the complete-data density is the exact density of the model with the hidden values observed") {
    const ir::Graph g = load_model(paper + "multimodal.vbn");
    const Dataset d = load_csv(g, paper + "multimodal.csv");
    const auto target = make_complete_data_target(g, d);
    GibbsModel model(g, *target);
    GibbsDensity density(model);
    CHECK(model.hidden_values() == 50);  // one hidden h per row
    // A target that sums nothing out refuses to evaluate the marginal density.
    CHECK_THROWS_AS(static_cast<void>(target->log_density(Vec{{1.0, 1.0}})), Error);

    inference::Rng rng(5, 0);
    density.randomise(rng);
    // The same model with h observed, and the data with the chain's values of h filled in.
    std::string text = read_file(paper + "multimodal.vbn");
    text.replace(text.find("node h hidden"), 13, "node h");
    const ir::Graph observed = compile_model(text, "observed.vbn");
    std::string csv = "h,o,y\n";
    const Families& fam = target->families();
    for (std::size_t c = 0; c < model.cases().size(); ++c) {
        const auto& cs = model.cases()[c];
        const Factor& fy = fam.components[c].factors.back();  // y's CPD with o folded in
        REQUIRE(cs.size == 1);
        const int o = fy.f[1] > 0 ? 1 : -1;
        for (long r = 0; r < cs.rows; ++r)
            csv += fmt::format("{},{},{}\n", density.hidden()[static_cast<std::size_t>(cs.offset + r)], o, fy.value);
    }
    const Dataset completed = csv_from_text(observed, csv);
    const Target exact(observed, completed);
    for (const Vec& theta : {Vec{{2.0, -1.0}}, Vec{{-0.5, 3.0}}, Vec{{0.0, 0.0}}}) {
        const double a = density.log_density(theta) + target->log_constant();
        const double b = exact.log_density(theta) + exact.log_constant();
        CHECK(a == doctest::Approx(b).epsilon(1e-12));
        // Block terms change exactly as the whole density does.
        Vec moved = theta;
        moved[1] += 0.7;
        CHECK(density.block_log_density(0, moved) - density.block_log_density(0, theta) ==
              doctest::Approx(density.log_density(moved) - density.log_density(theta)).epsilon(1e-12));
    }
}

TEST_CASE("gibbs: each conditional draw matches brute-force enumeration of the joint") {
    const ir::Graph g = compile_model(wide_model, "wide.vbn");
    const Dataset d = csv_from_text(g, wide_data(12, 3));
    const auto target = make_complete_data_target(g, d);
    GibbsModel model(g, *target);
    GibbsDensity density(model);
    inference::Rng rng(9, 0);
    density.randomise(rng);
    const Vec theta{{0.8, -1.3}};
    int checked = 0;
    for (int c = 0; c < static_cast<int>(model.cases().size()); ++c) {
        const auto& cs = model.cases()[static_cast<std::size_t>(c)];
        CHECK(cs.size >= 14);
        for (int k = 0; k < cs.size; ++k) {
            // The joint at both values of entry k of row 0, everything else as it is.
            std::vector<std::int8_t> h = density.hidden();
            const std::size_t at = static_cast<std::size_t>(cs.offset + k);
            h[at] = 1;
            density.set_hidden(h);
            const double plus = density.log_density(theta);
            h[at] = -1;
            density.set_hidden(h);
            const double minus = density.log_density(theta);
            CHECK(density.conditional_log_odds(theta, c, 0, k) == doctest::Approx(plus - minus).epsilon(1e-10));
            ++checked;
        }
    }
    CHECK(checked >= 14);

    // The sweep draws with those odds: the frequency of +1 of one entry over many sweeps
    // from the same state, within 4 binomial standard errors.
    const std::vector<std::int8_t> start = density.hidden();
    // Entry 0 of row 0 of case 0 is the first the sweep draws, so from `start`.
    const double p = inference::inv_logit(density.conditional_log_odds(theta, 0, 0, 0));
    const int n = 4000;
    int ones = 0;
    for (int i = 0; i < n; ++i) {
        density.set_hidden(start);
        density.sweep(theta, rng);
        ones += density.hidden()[static_cast<std::size_t>(model.cases()[0].offset)] > 0;
    }
    CHECK(std::abs(ones - n * p) < 4 * std::sqrt(n * p * (1 - p)));
}

TEST_CASE("gibbs: gradient and curvature of the complete-data density against finite differences") {
    const ir::Graph g = compile_model(wide_model, "wide.vbn");
    const Dataset d = csv_from_text(g, wide_data(20, 4));
    const auto target = make_complete_data_target(g, d);
    GibbsModel model(g, *target);
    GibbsDensity density(model);
    inference::Rng rng(2, 0);
    density.randomise(rng);
    const Vec theta{{0.3, -0.6}};
    Vec grad(2);
    density.log_density_gradient(theta, grad);
    const double h = 1e-5;
    for (int k = 0; k < 2; ++k) {
        Vec up = theta, down = theta;
        up[k] += h;
        down[k] -= h;
        CHECK(grad[k] == doctest::Approx((density.log_density(up) - density.log_density(down)) / (2 * h)).epsilon(1e-6));
    }
    // One block per child: block k holds b[k].
    for (int b = 0; b < 2; ++b) {
        Vec gb(1);
        Mat hb(1, 1);
        density.block_newton_system(b, theta, gb, hb);
        CHECK(gb[0] == doctest::Approx(grad[b]).epsilon(1e-10));
        Vec up = theta, down = theta;
        up[b] += h;
        down[b] -= h;
        Vec gu(1), gd(1);
        Mat scratch(1, 1);
        density.block_newton_system(b, up, gu, scratch);
        density.block_newton_system(b, down, gd, scratch);
        CHECK(hb(0, 0) == doctest::Approx(-(gu[0] - gd[0]) / (2 * h)).epsilon(1e-6));
    }
}

TEST_CASE("gibbs on the multimodal example: posterior mean and covariance against a grid of the exact posterior") {
    const ir::Graph g = load_model(paper + "multimodal.vbn");
    const Dataset d = load_csv(g, paper + "multimodal.csv");
    const Target exact(g, d);
    const Grid grid = grid_posterior([&](const Vec& x) { return exact.log_density(x); }, Vec{{-22.0, -25.0}},
                                     Vec{{30.0, 20.0}}, 521);
    const FitResult r = fit(g, d, gibbs_options(4000, 11));
    CHECK(r.method == "gibbs");
    REQUIRE(r.chains.size() == 4);
    for (const auto& c : r.chains) REQUIRE(c.ok());
    check_against(r, grid, 4);
    // Both kernels report; the θ move is accepted most of the time.
    REQUIRE(r.chains[0].stats.size() == 2);
    CHECK(r.chains[0].stats[0].rate() == 1.0);
    CHECK(r.chains[0].stats[1].rate() > 0.5);
}

TEST_CASE("gibbs where the exact target refuses: 15 linked unobserved values per row against the exact posterior") {
    const ir::Graph g = compile_model(wide_model, "wide.vbn");
    const Dataset d = csv_from_text(g, wide_data(40, 7));
    // The default target refuses; one allowed to enumerate 2^15 agrees with the hand sum.
    CHECK_THROWS_AS(static_cast<void>(Target(g, d)), Error);
    TargetOptions big;
    big.max_enumerated = 16;
    const Target exact(g, d, big);
    CHECK(exact.families().largest_component == 15);
    for (const Vec& b : {Vec{{0.5, -1.0}}, Vec{{-1.0, 2.0}}})
        CHECK(exact.log_density(b) == doctest::Approx(wide_log_posterior(g, d, b)).epsilon(1e-10));

    const Grid grid = grid_posterior([&](const Vec& b) { return wide_log_posterior(g, d, b); }, Vec{{-6.0, -7.0}},
                                     Vec{{6.0, 5.0}}, 161);
    const FitResult r = fit(g, d, gibbs_options(2000, 5));
    for (const auto& c : r.chains) REQUIRE(c.ok());
    check_against(r, grid, 4);
}

TEST_CASE("gibbs: the same seed gives the same draws with 1 or 2 threads") {
    const ir::Graph g = compile_model(wide_model, "wide.vbn");
    const Dataset d = csv_from_text(g, wide_data(30, 8));
    FitOptions o = gibbs_options(200, 21);
    o.warmup = 100;
    o.threads = 1;
    const FitResult one = fit(g, d, o);
    o.threads = 2;
    const FitResult two = fit(g, d, o);
    CHECK(vbn::test::same_chains(one, two));
    // Different chains do differ.
    CHECK(one.chains[0].draws != one.chains[1].draws);
}

TEST_CASE("auto falls back to gibbs when the exact target refuses, and says so") {
    const ir::Graph g = compile_model(wide_model, "wide.vbn");
    const Dataset d = csv_from_text(g, wide_data(30, 8));
    FitOptions o;
    o.warmup = 100;
    o.draws = 100;
    const FitResult r = fit(g, d, o);
    CHECK(r.method == "gibbs");
    bool noted = false;
    for (const auto& n : r.notes) noted = noted || n.find("auto chose gibbs") != std::string::npos;
    CHECK(noted);
    for (const auto& c : r.chains) CHECK(c.ok());
    // An explicit exact method still refuses, pointing to gibbs.
    o.method = "varmix";
    try {
        fit(g, d, o);
        FAIL("varmix should refuse");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::limit);
        CHECK(std::string(e.what()).find("--method gibbs") != std::string::npos);
    }
    // Data the exact target sums out: auto keeps its choice.
    const ir::Graph mm = load_model(paper + "multimodal.vbn");
    o.method = "auto";
    const Dataset mm_data = load_csv(mm, paper + "multimodal.csv");
    CHECK(fit(mm, mm_data, o).method == choose_method(mm, mm_data));
    CHECK(choose_method(mm, mm_data) != "gibbs");
}

// Products of parents (interactions) with several unobserved factors: x_k's full conditional
// takes a product's slope coef Π (other factors), and the complete-data gradient the
// product's value, both against the density itself.
TEST_CASE("gibbs with products of hidden parents: conditionals and gradient against the density") {
    const ir::Graph g = compile_model("node h[3] hidden ~ bernoulli(0.5);\nnode m ~ bernoulli(0.3);\n"
                                      "node y[2] ~ logistic(b + w * [h[1] * h[2], h[2] * m, h[1] * h[2] * h[3]] + "
                                      "0.4 * h[3] * m);\nb, w ~ normal(0, 2);\n",
                                      "products.vbn");
    const Dataset d = csv_from_text(g, "m,y[1],y[2]\n1,1,-1\nNA,1,1\n-1,-1,1\nNA,-1,-1\n1,1,1\nNA,1,-1\n");
    const auto target = make_complete_data_target(g, d);
    GibbsModel model(g, *target);
    GibbsDensity density(model);
    inference::Rng rng(12, 0);
    density.randomise(rng);
    Vec theta(g.dim);
    for (int k = 0; k < g.dim; ++k) theta[k] = 1.5 * rng.normal();
    int checked = 0;
    for (int c = 0; c < static_cast<int>(model.cases().size()); ++c) {
        const auto& cs = model.cases()[static_cast<std::size_t>(c)];
        for (int k = 0; k < cs.size; ++k) {
            std::vector<std::int8_t> h = density.hidden();
            const std::size_t at = static_cast<std::size_t>(cs.offset + k);
            h[at] = 1;
            density.set_hidden(h);
            const double plus = density.log_density(theta);
            h[at] = -1;
            density.set_hidden(h);
            const double minus = density.log_density(theta);
            CHECK(density.conditional_log_odds(theta, c, 0, k) == doctest::Approx(plus - minus).epsilon(1e-10));
            ++checked;
        }
    }
    CHECK(checked >= 6);
    Vec grad(g.dim);
    density.log_density_gradient(theta, grad);
    const double step = 1e-5;
    for (int k = 0; k < g.dim; ++k) {
        Vec up = theta, down = theta;
        up[k] += step;
        down[k] -= step;
        CHECK(grad[k] ==
              doctest::Approx((density.log_density(up) - density.log_density(down)) / (2 * step)).epsilon(1e-6));
    }
}
