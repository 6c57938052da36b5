// PSIS-LOO against R's loo 2.5.1 on committed fixtures (scripts/make-loo-fixtures.R):
// Metropolis chains of a normal mean, whose repeated draws make ties and r_eff well below 1,
// with outlying rows whose k̂ exceeds 0.7; every estimate, se and pointwise value to 1e-8.
#include "inference/loo.hpp"

#include "tests/inference/fixture_csv.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace vbn::inference;

namespace {

const std::string kLooFixtures = vbn::test::fixture_dir("loo/");
using vbn::test::parse_value;
using vbn::test::split_commas;

// A CSV file's lines (comment lines skipped) as named columns.
std::map<std::string, std::vector<double>> read_columns(const std::string& file, std::vector<std::string>* text_first = nullptr) {
    std::ifstream in(kLooFixtures + file);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << file);
    std::string line;
    std::vector<std::string> names;
    std::map<std::string, std::vector<double>> cols;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto fields = split_commas(line);
        if (names.empty()) {
            names = fields;
            continue;
        }
        REQUIRE(fields.size() == names.size());
        for (std::size_t j = 0; j < fields.size(); ++j) {
            if (j == 0 && text_first != nullptr)
                text_first->push_back(fields[j]);
            else
                cols[names[j]].push_back(parse_value(fields[j]));
        }
    }
    return cols;
}

// CASE.csv: a column `chain`, then log_lik.1 … log_lik.N; one matrix per chain.
std::vector<Eigen::MatrixXd> read_log_lik(const std::string& name) {
    auto cols = read_columns(name + ".csv");
    const std::vector<double>& chain = cols["chain"];
    const auto rows = static_cast<Eigen::Index>(cols.size() - 1);
    const int chains = static_cast<int>(chain.back());
    const auto iters = static_cast<Eigen::Index>(chain.size()) / chains;
    std::vector<Eigen::MatrixXd> out(static_cast<std::size_t>(chains), Eigen::MatrixXd(iters, rows));
    for (Eigen::Index i = 0; i < rows; ++i) {
        const std::vector<double>& v = cols["log_lik." + std::to_string(i + 1)];
        for (std::size_t d = 0; d < v.size(); ++d)
            out[static_cast<std::size_t>(chain[d]) - 1](static_cast<Eigen::Index>(d) % iters, i) = v[d];
    }
    return out;
}

void check_close(double got, double want, const std::string& what) {
    INFO(what << ": got " << got << ", loo " << want);
    if (std::isnan(want)) {
        CHECK(std::isnan(got));
    } else {
        CHECK(std::abs(got - want) <= 1e-8 * std::max(1.0, std::abs(want)));
    }
}

void check_case(const std::string& name, const std::map<std::string, double>& est) {
    const LooResult r = psis_loo(read_log_lik(name));
    check_close(r.elpd_loo, est.at("elpd_loo"), name + " elpd_loo");
    check_close(r.se_elpd_loo, est.at("se_elpd_loo"), name + " se_elpd_loo");
    check_close(r.p_loo, est.at("p_loo"), name + " p_loo");
    check_close(r.se_p_loo, est.at("se_p_loo"), name + " se_p_loo");
    check_close(r.looic, est.at("looic"), name + " looic");
    check_close(r.se_looic, est.at("se_looic"), name + " se_looic");
    check_close(r.mcse_elpd_loo, est.at("mcse_elpd_loo"), name + " mcse_elpd_loo");
    auto pw = read_columns(name + "_pointwise.csv");
    REQUIRE(r.points.size() == pw["elpd_loo"].size());
    int bad = 0;
    for (std::size_t i = 0; i < r.points.size(); ++i) {
        const LooPoint& p = r.points[i];
        const std::string row = name + " row " + std::to_string(i + 1);
        check_close(p.elpd_loo, pw["elpd_loo"][i], row + " elpd_loo");
        check_close(p.mcse_elpd_loo, pw["mcse_elpd_loo"][i], row + " mcse_elpd_loo");
        check_close(p.p_loo, pw["p_loo"][i], row + " p_loo");
        check_close(p.looic, pw["looic"][i], row + " looic");
        check_close(p.pareto_k, pw["influence_pareto_k"][i], row + " k");
        check_close(p.n_eff, pw["n_eff"][i], row + " n_eff");
        check_close(p.r_eff, pw["r_eff"][i], row + " r_eff");
        bad += p.pareto_k > 0.7 ? 1 : 0;
    }
    CHECK(bad > 0);  // the fixtures include rows whose k̂ is too high
}

}  // namespace

TEST_CASE("loo: psis_loo matches R's loo 2.5.1 to 1e-8") {
    std::vector<std::string> cases;
    auto est = read_columns("estimates.csv", &cases);
    REQUIRE(cases.size() == 2);
    for (std::size_t c = 0; c < cases.size(); ++c) {
        std::map<std::string, double> e;
        for (const auto& [key, values] : est) e[key] = values[c];
        check_case(cases[c], e);
    }
}

TEST_CASE("loo: k̂ bins and refused input") {
    CHECK(pareto_k_bin(0.5) == 0);
    CHECK(pareto_k_bin(0.5000001) == 1);
    CHECK(pareto_k_bin(0.7) == 1);
    CHECK(pareto_k_bin(1.0) == 2);
    CHECK(pareto_k_bin(std::numeric_limits<double>::infinity()) == 3);
    CHECK(pareto_k_bin(std::numeric_limits<double>::quiet_NaN()) == 3);
    CHECK_THROWS_AS(psis_loo({}), std::invalid_argument);
    CHECK_THROWS_AS(psis_loo({Eigen::MatrixXd::Zero(10, 3), Eigen::MatrixXd::Zero(10, 4)}), std::invalid_argument);
    Eigen::MatrixXd nan = Eigen::MatrixXd::Zero(10, 3);
    nan(4, 1) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(psis_loo({nan}), std::invalid_argument);
}
