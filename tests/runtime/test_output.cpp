// Outputs of a run: CmdStan CSV files (write, read back, read CmdStan's own), the summary
// table and warnings (golden text), the summary JSON, and `vbn summary`.
#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/report/output_csv.hpp"
#include "runtime/report/summary.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace vbn;
namespace fs = std::filesystem;

namespace {

// A fresh directory for one test's files, removed afterwards.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& tag) {
        path = fs::temp_directory_path() / fmt::format("vbn-test-output-{}-{}", tag, ::getpid());
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string replace_version_line(std::string text) {
    const std::string key = "# vbn_version = ";
    const auto at = text.find(key);
    if (at == std::string::npos) return text;
    const auto end = text.find('\n', at);
    return text.replace(at, end - at, key + "X");
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string line;
    while (std::getline(ss, line)) out.push_back(line);
    return out;
}

CsvConfig small_config() {
    CsvConfig c;
    c.model = "multimodal";
    c.algorithm = "varblock";
    c.engine = "";
    c.num_samples = 3;
    c.num_warmup = 2;
    c.seed = 42;
    c.chain_id = 2;
    c.data_file = "data.csv";
    c.extra = {{"threads", "1"}};
    return c;
}

// Draws with values that stress a text round trip.
Eigen::MatrixXd awkward_draws(long n, int p, std::uint64_t seed) {
    vbn::inference::Rng rng(seed, 0);
    Eigen::MatrixXd x(n, p);
    for (long i = 0; i < n; ++i)
        for (int j = 0; j < p; ++j) x(i, j) = rng.normal() * std::pow(10.0, (i + j) % 7 - 3);
    if (n >= 6 && p >= 1) {
        x(0, 0) = 1.0 / 3.0;
        x(1, 0) = 5e-324;  // smallest denormal
        x(2, 0) = -1.2345678901234567e+200;
        x(3, 0) = -0.0;
        x(4, 0) = std::nextafter(1.0, 2.0);
        x(5, 0) = 0.1 + 0.2;
    }
    return x;
}

SamplerValues sampler_for(long i) {
    return SamplerValues{-7.25 - 0.001 * static_cast<double>(i), 1.0 / (static_cast<double>(i) + 3), 0.8125,
                         static_cast<int>(i % 4), static_cast<int>(i % 13), i % 17 == 5, 8.5 + static_cast<double>(i)};
}

std::vector<SummaryRow> golden_rows() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    SummaryRow a{"w[1]", 2.41349, 0.532118, 0.0121345, 1.53412, 2.40087, 3.30121, 1931.4, 2105.6, 1.00213};
    SummaryRow b{"W[2,3]", -0.000123456, 12345.6, 0.5, -20000, 0, 19999.5, 350.2, 80.7, 1.0234};
    SummaryRow c{"b", 1.5, 0, nan, 1.5, 1.5, 1.5, nan, nan, nan};
    c.constant = true;
    return {a, b, c};
}

RunFacts golden_facts() {
    RunFacts f;
    f.model = "multimodal";
    f.method = "varblock";
    f.chains = 4;
    f.draws = 1000;
    f.warmup = 500;
    f.warmup_seconds = 0.1234;
    f.sampling_seconds = 1.5;
    f.kernels = {{"varblock", 4000, 1660}, {"rwm", 1000, 30}};
    f.regenerations = 17;
    f.elbo = -123.4567891;
    return f;
}

}  // namespace

TEST_CASE("chain files are FILE_<chain>.csv and names map between w[1] and w.1") {
    CHECK(chain_file_path("out/fit.csv", 1) == "out/fit_1.csv");
    CHECK(chain_file_path("fit", 3) == "fit_3.csv");
    CHECK(csv_column_name("w[1]") == "w.1");
    CHECK(csv_column_name("W[2,3]") == "W.2.3");
    CHECK(csv_column_name("W[2, 3]") == "W.2.3");
    CHECK(csv_column_name("b") == "b");
    CHECK(display_name("W.2.3") == "W[2,3]");
    CHECK(display_name("w.1") == "w[1]");
    CHECK(display_name("lp__") == "lp__");
}

TEST_CASE("the CSV header, adaptation block and timing block are exactly CmdStan's layout") {
    std::ostringstream out;
    {
        CsvWriter w(out, small_config(), {"w[1]", "W[2,3]"});
        w.adaptation_terminated(1.0);
        Eigen::Vector2d x(0.1, -2);
        w.write_draw(SamplerValues{-7.25, 0.5, 1, 0, 0, false, 0}, x);
        w.write_draw(SamplerValues{-7, 1, 1, 3, 7, true, 9.5}, x * 3);
        w.finish(0.125, 2.0);
    }
    const std::string expected = R"(# model = multimodal
# method = sample
#   sample
#     num_samples = 3
#     num_warmup = 2
#     save_warmup = 0
#     thin = 1
#     algorithm = varblock
#         max_depth = 10
#       metric = unit_e
# id = 2
# data
#   file = data.csv
# random
#   seed = 42
# threads = 1
# vbn_version = X
lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,w.1,W.2.3
# Adaptation terminated
# Step size = 1
-7.25,0.5,1,0,0,0,0,0.1,-2
-7,1,1,3,7,1,9.5,0.30000000000000004,-6
# 
#  Elapsed Time: 0.125 seconds (Warm-up)
#                2.000 seconds (Sampling)
#                2.125 seconds (Total)
# 
)";
    CHECK(replace_version_line(out.str()) == expected);
}

TEST_CASE("diag_e and dense_e metrics are written as CmdStan writes them and read back") {
    CsvConfig c = small_config();
    c.algorithm = "hmc";
    c.engine = "nuts";
    c.metric = MetricKind::diag_e;
    std::ostringstream out;
    CsvWriter w(out, c, {"a", "b"});
    w.adaptation_terminated(0.75, Eigen::Vector2d(0.5, 2.25));
    const auto lines = lines_of(out.str());
    REQUIRE(lines.size() >= 4);
    CHECK(lines[lines.size() - 4] == "# Adaptation terminated");
    CHECK(lines[lines.size() - 3] == "# Step size = 0.75");
    CHECK(lines[lines.size() - 2] == "# Diagonal elements of inverse mass matrix:");
    CHECK(lines[lines.size() - 1] == "# 0.5, 2.25");
    CHECK(out.str().find("#       engine = nuts\n") != std::string::npos);
    CHECK(out.str().find("#       metric = diag_e\n") != std::string::npos);

    c.metric = MetricKind::dense_e;
    std::ostringstream dense;
    CsvWriter d(dense, c, {"a", "b"});
    Eigen::Matrix2d m;
    m << 1, 0.5, 0.5, 2;
    d.adaptation_terminated(0.5, m);
    d.write_draw(SamplerValues{}, Eigen::Vector2d(1, 2));
    d.finish(0, 0);
    std::istringstream in(dense.str());
    const StanCsv r = read_stan_csv(in, "dense.csv");
    REQUIRE(r.inverse_metric.rows() == 2);
    REQUIRE(r.inverse_metric.cols() == 2);
    CHECK(r.inverse_metric == m);
    CHECK(r.step_size == 0.5);
    CHECK(r.draws.rows() == 1);

    std::ostringstream wrong;
    CsvWriter bad(wrong, c, {"a", "b"});
    CHECK_THROWS_AS(bad.adaptation_terminated(0.5, Eigen::Vector3d(1, 2, 3)), std::logic_error);
}

TEST_CASE("draws written to a file read back bit for bit, with sampler columns, config and times") {
    TempDir dir("roundtrip");
    const long n = 257;
    const Eigen::MatrixXd x = awkward_draws(n, 4, 99);
    const std::vector<std::string> names{"w[1]", "w[2]", "W[1,1]", "b"};
    CsvConfig c = small_config();
    c.num_samples = n;
    c.metric = MetricKind::diag_e;
    const std::string path = chain_file_path((dir.path / "fit.csv").string(), 2);
    {
        CsvWriter w(path, c, names);
        w.adaptation_terminated(0.8125, Eigen::Vector4d(1, 0.5, 0.25, 1e-3));
        for (long i = 0; i < n; ++i) w.write_draw(sampler_for(i), x.row(i).transpose());
        CHECK(w.draws_written() == n);
        w.finish(0.0123, 4.5678);
    }
    CHECK(fs::exists(dir.path / "fit_2.csv"));

    const StanCsv r = read_stan_csv(path);
    CHECK(r.path == path);
    CHECK(r.parameter_columns == std::vector<std::string>{"w.1", "w.2", "W.1.1", "b"});
    CHECK(r.sampler_columns == sampler_column_names());
    REQUIRE(r.draws.rows() == n);
    REQUIRE(r.draws.cols() == 4);
    bool identical = true;
    for (long i = 0; i < n; ++i)
        for (int j = 0; j < 4; ++j)
            identical = identical && std::signbit(r.draws(i, j)) == std::signbit(x(i, j)) && r.draws(i, j) == x(i, j);
    CHECK(identical);
    CHECK(r.draws(1, 0) == 5e-324);
    CHECK(std::signbit(r.draws(3, 0)));
    for (long i = 0; i < n; ++i) {
        const SamplerValues s = sampler_for(i);
        CHECK(r.sampler(i, 0) == s.lp);
        CHECK(r.sampler(i, 1) == s.accept_stat);
        CHECK(r.sampler(i, 3) == s.treedepth);
        CHECK(r.sampler(i, 5) == (s.divergent ? 1.0 : 0.0));
    }
    CHECK(r.config_value("model") == "multimodal");
    CHECK(r.config_value("num_samples") == std::to_string(n));
    CHECK(r.config_value("id") == "2");
    CHECK(r.config_value("metric") == "diag_e");
    CHECK(r.step_size == 0.8125);
    CHECK(r.inverse_metric.size() == 4);
    CHECK(r.inverse_metric(0, 3) == 1e-3);
    REQUIRE(r.warmup_seconds);
    CHECK(*r.warmup_seconds == 0.012);  // written with 3 decimals, as CmdStan
    CHECK(*r.sampling_seconds == 4.568);
}

TEST_CASE("our files have the line structure cmdstanpy, ArviZ and rstan scan for") {
    std::ostringstream out;
    CsvConfig c = small_config();
    c.num_samples = 5;
    {
        CsvWriter w(out, c, {"w[1]"});
        w.adaptation_terminated(1.0);
        for (long i = 0; i < 5; ++i) w.write_draw(sampler_for(i), Eigen::VectorXd::Constant(1, 0.5 * static_cast<double>(i)));
        w.finish(1, 2);
    }
    const auto lines = lines_of(out.str());
    std::size_t k = 0;
    // Config: '#' lines, each with at most one '=' (cmdstanpy splits on it).
    std::vector<std::string> keys;
    for (; k < lines.size() && lines[k].rfind('#', 0) == 0; ++k) {
        const auto eq = lines[k].find('=');
        CHECK(lines[k].find('=', eq == std::string::npos ? 0 : eq + 1) == std::string::npos);
        if (eq != std::string::npos) {
            const auto b = lines[k].find_first_not_of("# \t");
            keys.push_back(lines[k].substr(b, lines[k].find_last_not_of(' ', eq - 1) - b + 1));
        }
    }
    for (const char* required : {"model", "method", "num_samples", "num_warmup", "save_warmup", "thin", "max_depth", "metric"})
        CHECK_MESSAGE(std::find(keys.begin(), keys.end(), required) != keys.end(), "missing config key " << required);
    REQUIRE(k + 3 < lines.size());
    CHECK(lines[k].rfind("lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,", 0) == 0);
    CHECK(lines[k + 1] == "# Adaptation terminated");
    CHECK(lines[k + 2].rfind("# Step size = ", 0) == 0);
    // unit_e: the draws follow at once, as many as num_samples, up to the next '#' line.
    long draws = 0;
    for (k += 3; k < lines.size() && lines[k].rfind('#', 0) != 0; ++k) {
        ++draws;
        std::vector<std::string> fields;
        std::stringstream ss(lines[k]);
        std::string f;
        while (std::getline(ss, f, ',')) fields.push_back(f);
        REQUIRE(fields.size() == 8);
        for (int integer_col : {3, 4, 5}) CHECK(fields[static_cast<std::size_t>(integer_col)].find_first_not_of("0123456789") == std::string::npos);
    }
    CHECK(draws == c.num_samples);
    // rstan: the "Elapsed Time" line and the next hold plain decimals.
    REQUIRE(k + 2 < lines.size());
    CHECK(lines[k + 1] == "#  Elapsed Time: 1.000 seconds (Warm-up)");
    CHECK(lines[k + 2] == "#                2.000 seconds (Sampling)");
}

TEST_CASE("a CmdStan-written file is read: nested config, (Default), saved warmup, diag metric, timing") {
    // As CmdStan 2.3x writes it for `sample save_warmup=1 num_warmup=2 num_samples=3`.
    const std::string text = R"(# stan_version_major = 2
# stan_version_minor = 33
# stan_version_patch = 1
# model = bernoulli_model
# start_datetime = 2024-01-01 12:00:00 UTC
# method = sample (Default)
#   sample
#     num_samples = 3
#     num_warmup = 2
#     save_warmup = 1
#     thin = 1 (Default)
#     adapt
#       engaged = 1 (Default)
#       gamma = 0.050000000000000003 (Default)
#       delta = 0.80000000000000004 (Default)
#     algorithm = hmc (Default)
#       hmc
#         engine = nuts (Default)
#           nuts
#             max_depth = 10 (Default)
#         metric = diag_e (Default)
#         metric_file =  (Default)
#         stepsize = 1 (Default)
# id = 1 (Default)
# data
#   file = bernoulli.data.json
# init = 2 (Default)
# random
#   seed = 1234
# output
#   file = output.csv (Default)
#   diagnostic_file =  (Default)
#   refresh = 100 (Default)
# stanc_version = stanc3 v2.33.1
# stancflags = 
lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,theta
-7.0,0.9,1,1,1,0,7.1,0.2
-6.9,1,1.5,1,3,0,7.0,0.25
# Adaptation terminated
# Step size = 0.932037
# Diagonal elements of inverse mass matrix:
# 0.452898
-6.74827,0.937483,0.932037,2,3,0,6.84808,0.247596
-6.75211,0.999981,0.932037,1,3,0,6.7536,0.24293
-7.54006,0.823627,0.932037,2,3,0,7.64355,0.1309
# 
#  Elapsed Time: 0.003 seconds (Warm-up)
#                0.009 seconds (Sampling)
#                0.012 seconds (Total)
# 
)";
    std::istringstream in(text);
    const StanCsv r = read_stan_csv(in, "bernoulli-1.csv");
    CHECK(r.config_value("model") == "bernoulli_model");
    CHECK(r.config_value("method") == "sample");
    CHECK(r.config_value("thin") == "1");
    CHECK(r.config_value("metric_file") == "");
    CHECK(r.config_value("stanc_version") == "stanc3 v2.33.1");
    CHECK(r.parameter_columns == std::vector<std::string>{"theta"});
    REQUIRE(r.draws.rows() == 3);
    CHECK(r.draws(0, 0) == 0.247596);
    CHECK(r.draws(2, 0) == 0.1309);
    CHECK(r.warmup_draws.rows() == 2);
    CHECK(r.warmup_draws(1, 7) == 0.25);
    CHECK(r.step_size == 0.932037);
    CHECK(r.inverse_metric.size() == 1);
    CHECK(r.inverse_metric(0, 0) == 0.452898);
    CHECK(r.warmup_seconds == 0.003);
    CHECK(r.sampling_seconds == 0.009);
    const auto treedepth = r.sampler_column("treedepth__");
    REQUIRE(treedepth);
    CHECK(treedepth->sum() == 5);
}

TEST_CASE("bad CSV files give errors naming the file, line and column") {
    const std::string head = "# model = m\nlp__,accept_stat__,w.1\n";
    {
        std::istringstream in(head + "1,0.5,2\n1,0.5\n");
        CHECK_THROWS_WITH(read_stan_csv(in, "f.csv"), doctest::Contains("f.csv:4: a draw has 2 values but the header has 3 columns"));
    }
    {
        std::istringstream in(head + "1,0.5,abc\n");
        try {
            read_stan_csv(in, "f.csv");
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(std::string(e.what()) == "f.csv:3: column 3 (w.1): 'abc' is not a number");
            CHECK(e.line() == 3);
            CHECK(e.column() == 3);
            CHECK(e.kind() == ErrorKind::data);
        }
    }
    {
        std::istringstream in("# only = comments\n");
        CHECK_THROWS_WITH(read_stan_csv(in, "g.csv"), doctest::Contains("g.csv:1: no header line"));
    }
    {
        std::istringstream in(head + "# Adaptation terminated\n# Step size = fast\n");
        CHECK_THROWS_WITH(read_stan_csv(in, "h.csv"), doctest::Contains("h.csv:4: expected '# Step size = <number>'"));
    }
    try {
        read_stan_csv("/nonexistent/dir/x_1.csv");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::io);
        CHECK(std::string(e.what()).find("/nonexistent/dir/x_1.csv") != std::string::npos);
    }
    CHECK_THROWS_AS(CsvWriter("/nonexistent/dir/x_1.csv", small_config(), {"a"}), Error);
}

TEST_CASE("nan and infinities round-trip in the CmdStan spelling") {
    std::ostringstream out;
    CsvWriter w(out, small_config(), {"a", "b", "c"});
    w.adaptation_terminated(1);
    w.write_draw(SamplerValues{}, Eigen::Vector3d(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                                  -std::numeric_limits<double>::infinity()));
    CHECK(out.str().find(",nan,inf,-inf\n") != std::string::npos);
    std::istringstream in(out.str());
    const StanCsv r = read_stan_csv(in, "x.csv");
    CHECK(std::isnan(r.draws(0, 0)));
    CHECK(r.draws(0, 1) == std::numeric_limits<double>::infinity());
    CHECK(r.draws(0, 2) == -std::numeric_limits<double>::infinity());
}

TEST_CASE("read_stan_csv of a range of parameter columns keeps those and the sampler columns only") {
    std::ostringstream out;
    CsvWriter w(out, small_config(), {"a", "b", "c", "d"});
    w.adaptation_terminated(1);
    for (int i = 0; i < 3; ++i) w.write_draw(SamplerValues{}, Eigen::Vector4d(i, 10 + i, 20 + i, 30 + i));
    const std::string text = out.str();
    std::istringstream whole_in(text);
    const StanCsv whole = read_stan_csv(whole_in, "x.csv");
    for (std::size_t first = 0; first <= 4; ++first) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{9}}) {
            CAPTURE(first);
            CAPTURE(count);
            std::istringstream in(text);
            const StanCsv part = read_stan_csv(in, "x.csv", ParameterRange{first, count});
            const auto n = static_cast<Eigen::Index>(std::min<std::size_t>(count, 4 - first));
            REQUIRE(part.draws.cols() == n);
            CHECK(part.draws == whole.draws.middleCols(static_cast<Eigen::Index>(first), n));
            CHECK(part.sampler == whole.sampler);
            CHECK(part.parameter_columns == whole.parameter_columns);
        }
    }
}

TEST_CASE("the summary table has aligned columns, the run's facts and plain-words warnings (golden)") {
    const std::string expected =
        "Inference for multimodal: method varblock, 4 chains x 1000 draws after 500 warmup.\n"
        "\n"
        "name          mean         sd   mcse      5%    50%    95%  ess_bulk  ess_tail   rhat\n"
        "w[1]         2.413     0.5321  0.012   1.534  2.401  3.301      1931      2106  1.002\n"
        "W[2,3]  -0.0001235  1.235e+04    0.5  -2e+04      0  2e+04       350        81  1.023\n"
        "b              1.5          0     NA     1.5    1.5    1.5        NA        NA     NA\n"
        "\n"
        "Acceptance: varblock 41.5% (1660 of 4000); rwm 3.0% (30 of 1000)\n"
        "Regenerations: 17\n"
        "ELBO: -123.457\n"
        "Elapsed time: 0.123 s warmup, 1.500 s sampling\n"
        "\n"
        "Warnings:\n"
        "  - 1 parameter never moved (b): constant draws leave R-hat and ESS undefined (NA).\n"
        "  - R-hat above 1.01 for 1 parameter (W[2,3] 1.023): the chains disagree, so they have not converged; run "
        "longer chains or check the model.\n"
        "  - Bulk-ESS below 100 per chain (400 for 4 chains) for 1 parameter (W[2,3] 350): means and medians are "
        "unreliable; run more draws.\n"
        "  - Tail-ESS below 100 per chain (400 for 4 chains) for 1 parameter (W[2,3] 81): the 5% and 95% quantiles are "
        "unreliable; run more draws.\n"
        "  - Kernel rwm accepted 3.0% of its proposals (below 5%): its proposals are too wide or far from the posterior, "
        "so the chain barely moves; try --method nuts, which moves every weight by gradient steps.\n";
    CHECK(format_summary(golden_rows(), golden_facts()) == expected);
}

TEST_CASE("a clean run prints no warnings; divergences and low acceptance are reported") {
    std::vector<SummaryRow> rows{golden_rows()[0]};
    RunFacts f;
    f.method = "nuts";
    f.chains = 1;
    f.draws = 2000;
    const std::string text = format_summary(rows, f);
    CHECK(text.find("Warnings") == std::string::npos);
    CHECK(text.rfind("Inference for the model: method nuts, 1 chain x 2000 draws.\n", 0) == 0);

    f.divergent = 3;
    f.mean_accept_stat = 0.01;
    const auto w = summary_warnings(rows, f);
    REQUIRE(w.size() == 2);
    CHECK(w[0] == "The mean acceptance statistic is 1.0% (below 5%): the chain barely moves; raise --adapt-delta (e.g. "
                  "0.95) so that NUTS takes smaller steps.");
    CHECK(w[1].rfind("3 divergent transitions after warmup:", 0) == 0);
    f.divergent = 1;
    CHECK(summary_warnings(rows, f)[1].rfind("1 divergent transition after warmup:", 0) == 0);
}

TEST_CASE("with hidden nodes, a far-off R-hat's warning names relabelling and --restarts") {
    std::vector<SummaryRow> rows{golden_rows()[1]};  // R-hat 1.023
    RunFacts f;
    f.method = "varmix";
    f.chains = 4;
    f.draws = 1000;
    f.hidden = true;
    // Just above 1.01: chains too short, whatever the model.
    const auto mild = summary_warnings(rows, f);
    REQUIRE(!mild.empty());
    CHECK(mild[0].find("run longer chains or check the model.") != std::string::npos);
    CHECK(mild[0].find("--restarts") == std::string::npos);
    rows[0].rhat = 1.62;
    const auto hidden = summary_warnings(rows, f);
    REQUIRE(!hidden.empty());
    CHECK(hidden[0].rfind("R-hat above 1.01 for 1 parameter (W[2,3] 1.620): the chains disagree", 0) == 0);
    CHECK(hidden[0].find("relabellings of a hidden node") != std::string::npos);
    CHECK(hidden[0].find("--restarts K (e.g. 8), or try --method nuts.") != std::string::npos);
    f.method = "nuts";
    CHECK(summary_warnings(rows, f)[0].find("--restarts K (e.g. 8).") != std::string::npos);
    f.hidden = false;  // without hidden nodes there is no relabelling to speak of
    CHECK(summary_warnings(rows, f)[0].find("run longer chains or check the model.") != std::string::npos);
}

TEST_CASE("a known symmetry is a fact of the run, makes R-hat's warning definite and is in the JSON") {
    std::vector<SummaryRow> rows{golden_rows()[1]};
    rows[0].rhat = 1.62;
    RunFacts f;
    f.method = "varmix";
    f.chains = 4;
    f.draws = 1000;
    f.hidden = true;
    f.symmetry = "2 equivalent labelings: h flips sign with its weights";
    f.labelings = 2;
    const auto w = summary_warnings(rows, f);
    REQUIRE(!w.empty());
    CHECK(w[0].find("the model's posterior has equivalent labelings (see Symmetry above)") != std::string::npos);
    CHECK(w[0].find("usually sit in different modes") == std::string::npos);
    CHECK(w[0].find("vbn fit --relabel pivot") == std::string::npos);  // relabelling not known to be possible
    f.relabel = {"none", "relabel = none", 0, 0};
    CHECK(summary_warnings(rows, f)[0].find("Relabel the draws to one labeling (vbn fit --relabel pivot)") != std::string::npos);
    CHECK(format_summary(rows, f).find("\nSymmetry: 2 equivalent labelings: h flips sign with its weights; not relabelled "
                                       "(relabel = none): chains may sit in different labelings\n") != std::string::npos);
    CHECK(summary_json(rows, f)["labelings"] == 2);
    CHECK(summary_json(rows, f)["relabel"] == "none");
    CHECK(summary_json(rows, f)["relabelled"].is_null());
    // Relabelled: the line says how many draws moved, and R-hat's warning now means modes.
    f.relabel = {"pivot", "", 1234, 4000};
    CHECK(format_summary(rows, f).find("\nSymmetry: 2 equivalent labelings: h flips sign with its weights; draws "
                                       "relabelled to one labeling (pivot): 1234 of 4000 (31%)\n") != std::string::npos);
    CHECK(summary_warnings(rows, f)[0].find("sit in different modes, not different labelings") != std::string::npos);
    CHECK(summary_json(rows, f)["relabel"] == "pivot");
    CHECK(summary_json(rows, f)["relabelled"] == 1234);
    f.relabel = {};
    f.symmetry.clear();  // none known: the hedged advice, no line
    f.labelings = 1;
    CHECK(summary_warnings(rows, f)[0].find("usually sit in different modes") != std::string::npos);
    CHECK(format_summary(rows, f).find("Symmetry:") == std::string::npos);
    CHECK(summary_json(rows, f)["labelings"] == 1);
}

TEST_CASE("a chain that never moves a parameter while the others do is named") {
    // Chain 3 of 4 sits still on w[1] and w[2]; every chain moves b.
    std::vector<Eigen::MatrixXd> chains;
    vbn::inference::Rng rng(7, 0);
    for (int c = 0; c < 4; ++c) {
        Eigen::MatrixXd x(200, 3);
        for (Eigen::Index i = 0; i < x.rows(); ++i)
            for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = c == 2 && j < 2 ? 0.25 : rng.normal();
        chains.push_back(x);
    }
    const auto rows = summarize({"w[1]", "w[2]", "b"}, chains);
    CHECK(rows[0].stuck_chains == std::vector<int>{3});
    CHECK(rows[1].stuck_chains == std::vector<int>{3});
    CHECK(rows[2].stuck_chains.empty());
    CHECK_FALSE(rows[0].constant);
    RunFacts f;
    f.method = "varblock";
    f.chains = 4;
    f.draws = 200;
    const auto w = summary_warnings(rows, f);
    REQUIRE(!w.empty());
    CHECK(w[0] == "Chain 3 never moved 2 parameters (w[1], w[2]) while the other chains did: it is stuck where it "
                  "started, and its draws distort the summary (tail-ESS can be NA); try --method nuts, which moves "
                  "every weight by gradient steps.");
    // Every chain constant: the parameter never moved at all, said once, with no chain named.
    for (auto& x : chains) x.col(2).setConstant(1.0);
    const auto still = summarize({"w[1]", "w[2]", "b"}, chains);
    CHECK(still[2].constant);
    CHECK(still[2].stuck_chains.empty());
}

TEST_CASE("warnings list at most eight names and count the rest") {
    std::vector<SummaryRow> rows;
    for (int i = 1; i <= 11; ++i) rows.push_back(SummaryRow{fmt::format("w[{}]", i), 0, 1, 0.01, -1.6, 0, 1.6, 50, 500, 1.0});
    RunFacts f;
    f.chains = 1;
    const auto w = summary_warnings(rows, f);
    REQUIRE(w.size() == 1);
    CHECK(w[0] ==
          "Bulk-ESS below 100 per chain (100) for 11 parameters (w[1] 50, w[2] 50, w[3] 50, w[4] 50, w[5] 50, w[6] 50, "
          "w[7] 50, w[8] 50 and 3 more): means and medians are unreliable; run more draws.");
}

TEST_CASE("merging kernel counters adds chains up by kernel name") {
    using vbn::inference::KernelStats;
    const auto merged = merge_kernel_stats({{{"a", 10, 5}, {"b", 4, 1}}, {{"a", 10, 7}, {"b", 6, 0}}});
    REQUIRE(merged.size() == 2);
    CHECK(merged[0].name == "a");
    CHECK(merged[0].proposed == 20);
    CHECK(merged[0].accepted == 12);
    CHECK(merged[1].accepted == 1);
}

TEST_CASE("the summary JSON has docs/design.md's keys in order and null for NaN") {
    const std::vector<SummaryRow> rows{golden_rows()[2]};
    const auto doc = summary_json(rows, golden_facts());
    CHECK(doc.dump() ==
          R"({"method":"varblock","chains":4,"draws":1000,"elbo":-123.4567891,"warmup_seconds":0.1234,"sampling_seconds":1.5,)"
          R"("parameters":[{"name":"b","mean":1.5,"sd":0.0,"mcse_mean":null,"q5":1.5,"q50":1.5,"q95":1.5,"ess_bulk":null,)"
          R"("ess_tail":null,"rhat":null}],"warmup":500,"divergent":0,"regenerations":17,"acceptance":[)"
          R"({"kernel":"varblock","accepted":1660,"proposed":4000,"rate":0.415},{"kernel":"rwm","accepted":30,"proposed":1000,"rate":0.03}],"labelings":null,)"
          R"("relabel":null,"relabelled":null})");
    RunFacts bare;
    bare.method = "nuts";
    const auto d2 = summary_json(golden_rows(), bare);
    CHECK(d2["elbo"].is_null());
    CHECK(d2["warmup_seconds"].is_null());
    CHECK(d2["regenerations"].is_null());
    CHECK(d2["parameters"][1]["name"] == "W[2,3]");
    CHECK(d2["parameters"][1]["ess_tail"] == 80.7);
}

TEST_CASE("the summary JSON gives the run's phase times last, in order, and only where they are known") {
    RunFacts facts = golden_facts();
    CHECK(summary_json(golden_rows(), facts).contains("timings") == false);
    facts.phase_seconds = {{"load", 0.001}, {"target", 0.002}, {"variational", 0.25}, {"summary", 0.5}};
    const auto doc = summary_json(golden_rows(), facts);
    REQUIRE(doc.contains("timings"));
    CHECK((--doc.end()).key() == "timings");
    CHECK(doc["timings"].dump() == R"({"load":0.001,"target":0.002,"variational":0.25,"summary":0.5})");
}

TEST_CASE("the vb JSON has the same shape with the variational means, sds and Gaussian quantiles") {
    VbFacts f;
    f.elbo = -50.25;
    f.iterations = 12;
    f.converged = true;
    const auto doc = vb_summary_json({{"w[1]", 2, 0.5}}, f);
    CHECK(doc["method"] == "vb");
    CHECK(doc["chains"].is_null());
    CHECK(doc["elbo"] == -50.25);
    CHECK(doc["iterations"] == 12);
    CHECK(doc["converged"] == true);
    CHECK(doc.contains("log_evidence") == false);
    const auto& p = doc["parameters"][0];
    CHECK(p["mean"] == 2.0);
    CHECK(p["sd"] == 0.5);
    CHECK(p["q5"].get<double>() == doctest::Approx(2 - 0.5 * 1.6448536269514722));
    CHECK(p["q95"].get<double>() == doctest::Approx(2 + 0.5 * 1.6448536269514722));
    CHECK(p.contains("ess_bulk") == false);
    const std::vector<std::string> keys{"method", "chains", "draws", "elbo", "warmup_seconds", "sampling_seconds", "parameters"};
    auto it = doc.begin();
    for (const auto& k : keys) CHECK((it++).key() == k);
    CHECK(p.contains("corrected_mean") == false);

    // With the importance correction: mean, sd and the quantiles stay the variational ones
    // (docs/design.md §4), the corrected moments have keys of their own.
    VbParameter corrected{"w[1]", 2, 0.5};
    corrected.corrected = CorrectedMarginal{2.25, 0.625, 0.01, 1.25, 2.2, 3.5, 2.3};
    const auto c = vb_summary_json({corrected}, f)["parameters"][0];
    CHECK(c.dump() == R"({"name":"w[1]","mean":2.0,"sd":0.5,"q5":1.1775731865242638,"q50":2.0,"q95":2.822426813475736,)"
                      R"("vb_mean":2.0,"vb_sd":0.5,"corrected_mean":2.25,"corrected_sd":0.625,"corrected_mcse_mean":0.01,)"
                      R"("corrected_q5":1.25,"corrected_q50":2.2,"corrected_q95":3.5,"corrected_mean_abs":2.3})");
}

TEST_CASE("summarize rejects chains of different shapes with a message") {
    CHECK_THROWS_WITH(summarize({"a"}, {Eigen::MatrixXd::Zero(10, 1), Eigen::MatrixXd::Zero(9, 1)}),
                      doctest::Contains("chain 2 has 9 draws of 1 parameters, chain 1 has 10 of 1"));
    CHECK_THROWS_WITH(summarize({"a", "b"}, {Eigen::MatrixXd::Zero(10, 1)}), doctest::Contains("2 names for 1 parameter"));
}

TEST_CASE("summarize gives the same rows, bit for bit, whatever the number of threads") {
    inference::Rng rng(11, 0);
    std::vector<Eigen::MatrixXd> chains(3, Eigen::MatrixXd(400, 7));
    for (auto& c : chains)
        for (Eigen::Index j = 0; j < c.cols(); ++j) {
            double x = 0;  // AR(1) with a different correlation per column; column 6 constant
            for (Eigen::Index i = 0; i < c.rows(); ++i) {
                x = 0.1 * static_cast<double>(j) * x + rng.normal();
                c(i, j) = j == 6 ? 1.5 : x;
            }
        }
    const std::vector<std::string> names{"a", "b", "c", "d", "e", "f", "g"};
    const std::vector<SummaryRow> one = summarize(names, chains, 1);
    for (int threads : {2, 3, 16}) {
        const std::vector<SummaryRow> many = summarize(names, chains, threads);
        REQUIRE(many.size() == one.size());
        for (std::size_t p = 0; p < one.size(); ++p) {
            INFO("threads " << threads << ", column " << p);
            CHECK(many[p].name == one[p].name);
            const SummaryRow &a = many[p], &b = one[p];
            auto same = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };  // NaN too
            CHECK((same(a.mean, b.mean) && same(a.sd, b.sd) && same(a.mcse_mean, b.mcse_mean) && same(a.q5, b.q5) &&
                   same(a.q50, b.q50) && same(a.q95, b.q95) && same(a.ess_bulk, b.ess_bulk) &&
                   same(a.ess_tail, b.ess_tail) && same(a.rhat, b.rhat) && same(a.mcse_q5, b.mcse_q5) &&
                   same(a.mcse_q95, b.mcse_q95)));
            CHECK(many[p].constant == one[p].constant);
        }
    }
    CHECK(one[6].constant);
}

TEST_CASE("summarize_files reads the chain files and gives the same table as the in-memory summary") {
    TempDir dir("summary");
    const long n = 400;
    const std::vector<std::string> names{"w[1]", "W[1,2]"};
    std::vector<Eigen::MatrixXd> chains;
    std::vector<std::string> files;
    for (int c = 1; c <= 3; ++c) {
        chains.push_back(awkward_draws(n, 2, 1000 + static_cast<std::uint64_t>(c)));
        CsvConfig cfg = small_config();
        cfg.num_samples = n;
        cfg.num_warmup = 100;
        cfg.chain_id = c;
        files.push_back(chain_file_path((dir.path / "run.csv").string(), c));
        CsvWriter w(files.back(), cfg, names);
        w.adaptation_terminated(1);
        for (long i = 0; i < n; ++i) w.write_draw(sampler_for(i), chains.back().row(i).transpose());
        w.finish(0.5, 1.25);
    }
    const FilesSummary whole = summarize_files(files);
    std::ostringstream out;
    out << format_summary(whole.rows, whole.facts);
    // Read in groups of one column (a budget of 1 byte): the same table.
    const FilesSummary by_column = summarize_files(files, 1.0);
    CHECK(format_summary(by_column.rows, by_column.facts) == out.str());
    RunFacts f;
    f.model = "multimodal";
    f.method = "varblock";
    f.chains = 3;
    f.draws = n;
    f.warmup = 100;
    f.chain_seconds = {{0.5, 1.25}, {0.5, 1.25}, {0.5, 1.25}};
    double accept = 0;
    for (long i = 0; i < n; ++i) accept += sampler_for(i).accept_stat;
    f.mean_accept_stat = accept / static_cast<double>(n);
    for (long i = 0; i < n; ++i) f.divergent += sampler_for(i).divergent ? 3 : 0;
    CHECK(out.str() == format_summary(summarize(names, chains), f));
    CHECK(out.str().find("Chain 3: 0.500 s warmup, 1.250 s sampling") != std::string::npos);

    // A shorter chain (as an interrupted run leaves) cuts the others to its length, and a file
    // without draws is left out; the note says so. A file from another model is refused.
    CsvConfig cfg = small_config();
    const std::string short_file = (dir.path / "short.csv").string();
    {
        CsvWriter w(short_file, cfg, names);
        w.adaptation_terminated(1);
        for (long i = 0; i < 3; ++i) w.write_draw(sampler_for(i), chains[1].row(i).transpose());
    }
    const std::string empty_file = (dir.path / "empty.csv").string();
    CsvWriter(empty_file, cfg, names).finish(0, 0);
    const FilesSummary cut = summarize_files({files[0], short_file, empty_file});
    CHECK(cut.facts.chains == 2);
    CHECK(cut.facts.draws == 3);
    CHECK(cut.truncation == fmt::format("chains of unequal length (draws per chain: {}: {}, {}: 3, {}: 0): the summary uses "
                                        "{}, {} truncated to the shortest, 3 draws each; {} has no draws and is left out",
                                        files[0], n, short_file, empty_file, files[0], short_file, empty_file));
    CHECK(format_summary(cut.rows, cut.facts) ==
          format_summary(summarize(names, {chains[0].topRows(3), chains[1].topRows(3)}), cut.facts));
    const FilesSummary grouped = summarize_files({files[0], short_file, empty_file}, 1.0);  // a column at a time
    CHECK(format_summary(grouped.rows, grouped.facts) == format_summary(cut.rows, cut.facts));
    CHECK(grouped.truncation == cut.truncation);
    CHECK(summarize_files(files).truncation.empty());
    CHECK_THROWS_WITH(summarize_files({empty_file}), doctest::Contains("the file holds no draws"));
    const std::string other = (dir.path / "other.csv").string();
    {
        CsvWriter w(other, cfg, {"v"});
        w.adaptation_terminated(1);
        w.write_draw(SamplerValues{}, Eigen::VectorXd::Constant(1, 1.0));
    }
    const std::string other_message = other + ": its parameter columns differ";
    CHECK_THROWS_WITH(summarize_files({files[0], other}), doctest::Contains(other_message.c_str()));
    CHECK_THROWS_WITH(summarize_files({}), doctest::Contains("needs one or more CmdStan CSV files"));
    CHECK_THROWS_WITH(summarize_files({(dir.path / "missing_1.csv").string()}), doctest::Contains("no such file"));
}

namespace {
// The R cross-checks may skip only where R is not meant to be: CI sets CI=true, and
// VBN_REQUIRE_R=1 asks for them elsewhere.
bool r_required() {
    const char* ci = std::getenv("CI");
    const char* require = std::getenv("VBN_REQUIRE_R");
    return (ci && std::string(ci) == "true") || (require && std::string(require) == "1");
}
}  // namespace

TEST_CASE("R reads our CSV files (rstan::read_stan_csv) and posterior agrees with our summary; skipped only without Rscript") {
    if (std::system("command -v Rscript > /dev/null 2>&1") != 0) {
        // Where R is meant to be installed (CI, or VBN_REQUIRE_R=1), its absence is a failure.
        if (r_required()) FAIL("Rscript not found, but R is required here (CI=true or VBN_REQUIRE_R=1); scripts/install-deps.sh installs it");
        MESSAGE("SKIPPED: Rscript not found, so R did not read our CSV files (scripts/install-deps.sh installs R)");
        return;
    }
    TempDir dir("rstan");
    const long n = 500;
    // rstan rebuilds array shapes from the names, so a matrix needs all its elements, in
    // CmdStan's column-major order.
    const std::vector<std::string> names{"w[1]", "w[2]", "W[1,1]", "W[2,1]"};
    std::vector<Eigen::MatrixXd> chains;
    std::vector<std::string> files;
    vbn::inference::Rng rng(31, 0);
    for (int c = 1; c <= 4; ++c) {
        Eigen::MatrixXd x(n, 4);
        double a = rng.normal();
        for (long i = 0; i < n; ++i) {
            a = 0.6 * a + 0.8 * rng.normal();
            x(i, 0) = a;
            x(i, 1) = rng.normal() + 0.1 * c;
            x(i, 2) = std::exp(rng.normal());
            x(i, 3) = i % 3 == 0 ? 1.0 : rng.normal();
        }
        chains.push_back(x);
        CsvConfig cfg = small_config();
        cfg.model = "rcheck";
        cfg.num_samples = n;
        cfg.num_warmup = 200;
        cfg.chain_id = c;
        cfg.metric = MetricKind::diag_e;
        // The variational fit as `vbn fit` records it: comma-separated lists R must not trip on.
        cfg.extra = {{"vb_elbo", "-123.25"}, {"vb_mean", "0.5, -1.25e-3, 1, 0"}, {"vb_sd", "1, 2, 0.5, 1"}};
        files.push_back(chain_file_path((dir.path / "rcheck.csv").string(), c));
        CsvWriter w(files.back(), cfg, names);
        w.adaptation_terminated(0.9, Eigen::Vector4d(1, 1, 1, 1));
        for (long i = 0; i < n; ++i) w.write_draw(sampler_for(i), x.row(i).transpose());
        w.finish(0.25, 0.75);
    }
    const auto rows = summarize(names, chains);
    const std::string ours = (dir.path / "ours.csv").string();
    {
        std::ofstream o(ours);
        o << "name,mean,sd,mcse_mean,q5,q50,q95,ess_bulk,ess_tail,rhat\n";
        for (const auto& r : rows)
            o << fmt::format("\"{}\",{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}\n", r.name, r.mean,
                             r.sd, r.mcse_mean, r.q5, r.q50, r.q95, r.ess_bulk, r.ess_tail, r.rhat);
    }
    std::string cmd = fmt::format("Rscript {}/scripts/check-csv-with-r.R {}", VBN_SOURCE_DIR, ours);
    for (const auto& f : files) cmd += " " + f;
    const std::string log = (dir.path / "r.log").string();
    const int status = std::system((cmd + " > " + log + " 2>&1").c_str());
    std::ifstream l(log);
    const std::string output((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    // With R present, missing rstan or posterior (exit status 2) is a failure, not a skip.
    INFO(output);
    CHECK(code == 0);
}
