// Families whose parents are all ±1 with 8 or more weights are evaluated from packed signs and
// per-pattern sums (runtime/target/target.cpp): checked here against the log posterior, its gradient
// and its negative Hessian written out directly from the CSV rows, in long double, on the
// paper's 10-, 20- and 50-parent examples (10 = one group of 8 parents and one of 2; with
// AVX-512, η comes from groups of 4, 13 of them at 50 parents, in two passes) and on 70 parents
// (more than a sign word holds: groups of 8 on every CPU), whole and cut to row counts that are
// odd and not a multiple of 8 (the packed loops' tails), on 2,500 rows of 70 parents, and on
// rows repeated so often that the runs of equal weights are short.
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "tests/runtime/paper_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace vbn;

using test::paper;

// The first `keep` rows of a CSV of ±1 values whose last column is y (after a header line),
// and the CSV text of those rows.
std::vector<std::vector<double>> read_rows(const std::string& path, std::size_t keep, std::string& csv) {
    std::ifstream in(path);
    REQUIRE(in);
    std::string line;
    std::getline(in, line);
    csv = line + "\n";
    std::vector<std::vector<double>> rows;
    while (rows.size() < keep && std::getline(in, line)) {
        if (line.empty()) continue;
        csv += line + "\n";
        std::vector<double> row;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ',')) row.push_back(std::stod(cell));
        rows.push_back(row);
    }
    return rows;
}

void check_at(const Target& target, Target::Workspace& ws, const std::vector<std::vector<double>>& rows,
              const Eigen::VectorXd& theta);

// The checks on one data set: `rows` are its CSV's rows as numbers (y last), for a model
// y ~ logistic(0.5 + w * x), w ~ normal(0, 10), at weights `thetas` or, if none are given, at
// the ones below.
void check_against_rows(const ir::Graph& g, const std::string& csv, const std::vector<std::vector<double>>& rows,
                        const std::string& name, const std::vector<Eigen::VectorXd>& thetas = {}) {
    std::istringstream csv_in(csv);
    const Dataset data = load_csv(g, csv_in, name);
    const Target target(g, data);
    const int k = target.dim();
    REQUIRE(static_cast<int>(rows.front().size()) == k + 1);
    auto ws = target.make_workspace();
    for (const Eigen::VectorXd& theta : thetas) check_at(target, ws, rows, theta);
    if (!thetas.empty()) return;
    // Moderate weights, large ones of both signs (|η| up to ~10^3), and none (η = 0.5 in
    // every row, so that each row's factor 1 + e^-|η| is 1.6 and a product over more than
    // about 1,500 rows would overflow). Where 0.5 + Σ_j |θ_j| <= 64 the target multiplies
    // tables of e^θ instead of taking exp(-|η|) row by row (complete_term_by_products): so
    // for 0.3 and 0 and the first of the two scales that put that bound a hair either side
    // of 64.
    double sum_abs = 0;
    for (int j = 0; j < k; ++j) sum_abs += std::abs(std::sin(1.7 * j + 0.4));
    for (const double scale : {0.3, 60.0, 0.0, 63.5 * (1 - 1e-9) / sum_abs, 63.5 * (1 + 1e-9) / sum_abs}) {
        CAPTURE(scale);
        Eigen::VectorXd theta(k);
        for (int j = 0; j < k; ++j) theta[j] = scale * std::sin(1.7 * j + 0.4);
        check_at(target, ws, rows, theta);
    }
}

// Log density, gradient and Hessian at theta against the direct sums in long double.
void check_at(const Target& target, Target::Workspace& ws, const std::vector<std::vector<double>>& rows,
              const Eigen::VectorXd& theta) {
    const int k = target.dim();
    {
        // y ~ logistic(0.5 + w·x), w ~ N(0, 10²): Σ_t log g(y_t η_t) − θ'θ / 200, and
        // its gradient Σ_t y_t g(−y_t η_t) x_t − θ / 100.
        long double value = 0;
        std::vector<long double> grad(static_cast<std::size_t>(k), 0.0L);
        // −∇² = Σ_t g(η_t) g(−η_t) x_t x_t' + I / 100.
        std::vector<long double> hess(static_cast<std::size_t>(k * k), 0.0L);
        for (const auto& r : rows) {
            long double eta = 0.5L;
            for (int j = 0; j < k; ++j) eta += static_cast<long double>(theta[j]) * r[static_cast<std::size_t>(j)];
            const long double z = r.back() * eta;
            value += -(z < 0 ? -z + std::log1p(std::exp(z)) : std::log1p(std::exp(-z)));
            const long double resid = r.back() / (1.0L + std::exp(z));
            for (int j = 0; j < k; ++j) grad[static_cast<std::size_t>(j)] += resid * r[static_cast<std::size_t>(j)];
            const long double e = std::exp(-std::abs(eta)), curvature = e / ((1 + e) * (1 + e));
            for (int j = 0; j < k; ++j)
                for (int l = 0; l < k; ++l)
                    hess[static_cast<std::size_t>(j * k + l)] +=
                        curvature * r[static_cast<std::size_t>(j)] * r[static_cast<std::size_t>(l)];
        }
        for (int j = 0; j < k; ++j) {
            value -= static_cast<long double>(theta[j]) * theta[j] / 200.0L;
            grad[static_cast<std::size_t>(j)] -= theta[j] / 100.0L;
            hess[static_cast<std::size_t>(j * k + j)] += 1 / 100.0L;
        }
        Eigen::VectorXd g_out(k);
        const double lp = target.log_density_gradient(theta, g_out, ws);
        CHECK(std::abs(lp - static_cast<double>(value)) <= 1e-11 * std::max(1.0, std::abs(static_cast<double>(value))));
        CHECK(target.log_density(theta, ws) == lp);
        // The workspace left by a gradient gives the same bits as a fresh one.
        Eigen::VectorXd g_again(k), g_fresh(k);
        auto fresh = target.make_workspace();
        CHECK(target.log_density_gradient(theta, g_again, ws) == lp);
        CHECK(target.log_density_gradient(theta, g_fresh, fresh) == lp);
        CHECK(g_again == g_out);
        CHECK(g_fresh == g_out);
        double gmax = 1;
        for (const long double v : grad) gmax = std::max(gmax, static_cast<double>(std::abs(v)));
        for (int j = 0; j < k; ++j) {
            CAPTURE(j);
            CHECK(std::abs(g_out[j] - static_cast<double>(grad[static_cast<std::size_t>(j)])) <= 1e-11 * gmax);
        }
        REQUIRE(target.complete_block(0));
        const Eigen::MatrixXd h = target.complete_block_negative_hessian(0, theta, ws);
        double hmax = 0, herr = 0;
        for (int j = 0; j < k; ++j)
            for (int l = 0; l < k; ++l) {
                const long double want = hess[static_cast<std::size_t>(j * k + l)];
                hmax = std::max(hmax, static_cast<double>(std::abs(want)));
                herr = std::max(herr, static_cast<double>(std::abs(h(j, l) - want)));
            }
        CHECK(herr <= 1e-12 * hmax);
    }
}

}  // namespace

TEST_CASE("±1 parents packed as signs: log density, gradient and Hessian equal the direct sum over rows to rounding") {
    for (const std::string name : {"unimodal_d10", "unimodal_d20", "unimodal_d50"})
        for (const std::size_t keep : {std::size_t{1000}, std::size_t{517}, std::size_t{251}}) {
            CAPTURE(name);
            CAPTURE(keep);
            const ir::Graph g = load_model(paper + name + ".vbn");
            std::string csv;
            const auto rows = read_rows(paper + name + ".csv", keep, csv);
            REQUIRE(rows.size() == keep);
            check_against_rows(g, csv, rows, name);
        }
}

namespace {

// y ~ logistic(0.5 + w * x) with d parents x, w ~ normal(0, 10).
ir::Graph unimodal_model(int d, const std::string& name) {
    return compile_model(fmt::format("node x[{}] ~ bernoulli(0.5);\nnode y ~ logistic(0.5 + w * x);\nw ~ normal(0, 10);\n", d),
                         name);
}

// ±1 values from a fixed linear congruential sequence.
struct Signs {
    std::uint64_t state;
    double operator()() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (state >> 62) & 1u ? 1.0 : -1.0;
    }
};

// The CSV text of rows of d parents and y (last), ±1 each.
std::string sign_csv(int d, const std::vector<std::vector<double>>& rows) {
    std::string csv;
    for (int j = 1; j <= d; ++j) csv += "x[" + std::to_string(j) + "],";
    csv += "y\n";
    for (const auto& row : rows)
        for (std::size_t j = 0; j < row.size(); ++j)
            csv += std::string(row[j] > 0 ? "1" : "-1") + (j + 1 < row.size() ? "," : "\n");
    return csv;
}

}  // namespace

TEST_CASE("±1 parents packed as signs: 70 parents, past a sign word's 64") {
    const int d = 70;
    const ir::Graph g = unimodal_model(d, "wide70");
    // Rows from a fixed sequence of signs (distinct rows, both signs of y).
    Signs next_sign{12345};
    // 2,500 rows: one run of equal weights longer than a product of factors may hold (1,000).
    for (const std::size_t keep : {std::size_t{300}, std::size_t{251}, std::size_t{2500}}) {
        CAPTURE(keep);
        std::vector<std::vector<double>> rows;
        for (std::size_t t = 0; t < keep; ++t) {
            std::vector<double> row;
            for (int j = 0; j <= d; ++j) row.push_back(next_sign());
            rows.push_back(row);
        }
        check_against_rows(g, sign_csv(d, rows), rows, "wide70");
    }
}

TEST_CASE("±1 parents packed as signs: many short runs of equal weights (a log per row)") {
    // 40 distinct rows of 10 parents, row i repeated 1 + i % 7 times: seven weights, too many
    // runs for one log per run (the target then takes a log per merged row).
    const int d = 10;
    const ir::Graph g = unimodal_model(d, "runs10");
    Signs next_sign{777};
    std::vector<std::vector<double>> rows;
    for (int i = 0; i < 40; ++i) {
        std::vector<double> row;
        for (int j = 0; j <= d; ++j) row.push_back(next_sign());
        for (int copy = 0; copy <= i % 7; ++copy) rows.push_back(row);
    }
    check_against_rows(g, sign_csv(d, rows), rows, "runs10");
}

TEST_CASE("±1 parents packed as signs: every row's |η| near the bound of the evaluation by products") {
    // One weight of 55 and 19 that share 8.5: 0.5 + Σ_j |θ_j| = 64, the largest bound at
    // which the target multiplies tables of e^θ, and every row's |η| at least 46.5, so that
    // each factor 1 + e^η of the rows with x[1] = +1 is above 2^67 and a lane may hold no more
    // than ten of them. 1,000 distinct rows, half with x[1] = +1.
    const int d = 20;
    const ir::Graph g = unimodal_model(d, "near_bound");
    std::vector<std::vector<double>> rows;
    for (int t = 0; t < 1000; ++t) {
        std::vector<double> row;
        row.push_back(t % 2 == 0 ? 1.0 : -1.0);
        for (int j = 1; j < d; ++j) row.push_back((t / 2 >> (j - 1)) & 1 ? 1.0 : -1.0);
        row.push_back(t % 3 == 0 ? 1.0 : -1.0);
        rows.push_back(row);
    }
    const std::string csv = sign_csv(d, rows);
    Eigen::VectorXd theta(d);
    theta[0] = 55;
    for (int j = 1; j < d; ++j) theta[j] = (j % 2 == 0 ? 8.5 : -8.5) / (d - 1);
    for (const double shrink : {1.0, 1 - 1e-12, 1 + 1e-12}) {
        CAPTURE(shrink);
        check_against_rows(g, csv, rows, "near_bound", {theta * shrink});
    }
}
