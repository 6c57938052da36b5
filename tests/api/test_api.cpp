// The embedding API through the public header only: every entry point, every error kind,
// callbacks, cancellation, and fits run concurrently in threads giving the same numbers bit
// for bit as the same fits run alone.
#include <vbn/vbn.hpp>

#include "../support/quadrature.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

const std::string source_dir = VBN_SOURCE_DIR;
const std::string wells_model = source_dir + "/examples/wells/wells.vbn";
const std::string wells_csv = source_dir + "/examples/wells/wells.csv";

// A small network with a hidden cause: the posterior couples the weights.
const char* const multimodal_text = R"(
node h hidden ~ bernoulli(0.6);
node o        ~ bernoulli(0.5);
node y        ~ logistic(2 + w * [h, o]);
w ~ normal(3, sqrt(10));
)";

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// o, y rows with a deterministic mix of values and one missing y.
Eigen::MatrixXd multimodal_rows() {
    Eigen::MatrixXd m(40, 2);
    for (int r = 0; r < 40; ++r) {
        m(r, 0) = (r % 3 == 0) ? -1 : 1;
        m(r, 1) = (r % 5 == 0) ? -1 : 1;
    }
    m(7, 1) = std::nan("");
    return m;
}

vbn::FitOptions small_options(const std::string& method, std::uint64_t seed) {
    vbn::FitOptions o;
    o.method = method;
    o.chains = 2;
    o.warmup = 150;
    o.draws = 150;
    o.threads = 2;
    o.seed = seed;
    return o;
}

template <class E, class F>
E expect_throw(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e;
    } catch (const std::exception& e) {
        FAIL("wrong exception: " << e.what());
    }
    FAIL("no exception");
    throw std::logic_error("unreachable");
}

bool same(const vbn::FitResult& a, const vbn::FitResult& b) {
    if (a.chains.size() != b.chains.size() || a.method != b.method) return false;
    for (std::size_t c = 0; c < a.chains.size(); ++c) {
        const auto& x = a.chains[c];
        const auto& y = b.chains[c];
        if (x.draws.rows() != y.draws.rows() || x.draws.cols() != y.draws.cols()) return false;
        if (x.draws != y.draws || x.log_density != y.log_density) return false;
    }
    return a.variational.mean == b.variational.mean && a.variational.covariance == b.variational.covariance &&
           a.variational.elbo == b.variational.elbo;
}

}  // namespace

TEST_CASE("api: version and models from a string and a file") {
    CHECK(!vbn::version().empty());
    const vbn::Model m = vbn::Model::from_string(multimodal_text, "multimodal");
    CHECK(m.name() == "multimodal");
    CHECK(m.dimension() == 2);
    CHECK(m.parameter_names() == std::vector<std::string>{"w[1]", "w[2]"});
    CHECK(m.binary_columns() == std::vector<std::string>{"o", "y"});
    CHECK(m.covariate_columns().empty());
    CHECK(m.describe().find("hidden") != std::string::npos);

    const vbn::Model w = vbn::Model::from_file(wells_model);
    CHECK(w.name() == wells_model);
    CHECK(w.parameter_names() == std::vector<std::string>{"a", "b[1]", "b[2]"});
    CHECK(w.binary_columns() == std::vector<std::string>{"switched"});
    CHECK(w.covariate_columns() == std::vector<std::string>{"dist100", "arsenic"});

    // Matrices are reported column-major, as CmdStan writes them.
    const vbn::Model mat = vbn::Model::from_string(
        "node h[2] hidden ~ bernoulli(0.5);\nnode v[3] ~ logistic(W * h);\nW ~ normal(0, 1);\n", "matrix");
    CHECK(mat.parameter_names() ==
          std::vector<std::string>{"W[1,1]", "W[2,1]", "W[3,1]", "W[1,2]", "W[2,2]", "W[3,2]"});
}

TEST_CASE("api: model errors carry kind, line and column") {
    const auto e = expect_throw<vbn::ModelError>(
        [] { vbn::Model::from_string("node q2 ~ bernoulli(0.5);\nnode y ~ logistic(2 + 3 * q);\n", "bad.vbn"); });
    CHECK(e.kind() == vbn::ErrorKind::model);
    CHECK(e.line() == 2);
    CHECK(e.column() == 27);
    CHECK(std::string(e.what()).find("bad.vbn:2:27: error: unknown parent 'q'") != std::string::npos);

    const auto io = expect_throw<vbn::IoError>([] { vbn::Model::from_file(source_dir + "/no/such/model.vbn"); });
    CHECK(io.kind() == vbn::ErrorKind::io);
    CHECK(std::string(io.what()).find("no/such/model.vbn") != std::string::npos);

    // Every subclass is a vbn::Error.
    const auto base = expect_throw<vbn::Error>([] { vbn::Model::from_string("node y ~ ;", "m"); });
    CHECK(base.kind() == vbn::ErrorKind::model);
}

TEST_CASE("api: a CSV file, a stream, a matrix and columns give the same dataset") {
    const vbn::Model m = vbn::Model::from_file(wells_model);
    const vbn::Dataset file = vbn::Dataset::from_csv_file(m, wells_csv);
    CHECK(file.name() == wells_csv);
    CHECK(file.rows() == 3020);

    std::istringstream in(file_text(wells_csv));
    const vbn::Dataset stream = vbn::Dataset::from_csv(m, in, "wells");
    CHECK(stream.name() == "wells");
    CHECK(stream.rows() == 3020);
    CHECK(stream.patterns() == file.patterns());

    // The same values parsed by the CSV reader into a matrix, in another column order and
    // with the binary node coded 1/0.
    std::istringstream lines(file_text(wells_csv));
    std::string line;
    std::getline(lines, line);
    std::vector<std::array<double, 3>> rows;
    while (std::getline(lines, line)) {
        std::array<double, 3> r{};
        std::istringstream f(line);
        std::string cell;
        for (double& v : r) {
            std::getline(f, cell, ',');
            v = std::stod(cell);
        }
        rows.push_back(r);
    }
    Eigen::MatrixXd mat(static_cast<Eigen::Index>(rows.size()), 3);
    std::vector<vbn::Column> cols{{"arsenic", {}}, {"switched", {}}, {"dist100", {}}};
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto i = static_cast<Eigen::Index>(r);
        mat(i, 0) = rows[r][2];
        mat(i, 1) = rows[r][0] == 1 ? 1 : 0;
        mat(i, 2) = rows[r][1];
        cols[0].values.push_back(rows[r][2]);
        cols[1].values.push_back(rows[r][0]);
        cols[2].values.push_back(rows[r][1]);
    }
    const vbn::Dataset matrix = vbn::Dataset::from_matrix(m, mat, {"arsenic", "switched", "dist100"}, "matrix");
    const vbn::Dataset columns = vbn::Dataset::from_columns(m, cols, "columns");
    CHECK(matrix.rows() == 3020);
    CHECK(matrix.patterns() == file.patterns());
    CHECK(columns.patterns() == file.patterns());

    // Bit for bit the same posterior approximation from all four.
    const vbn::VariationalResult a = vbn::variational(m, file);
    for (const vbn::Dataset* d : {&stream, &matrix, &columns}) {
        const vbn::VariationalResult b = vbn::variational(m, *d);
        CHECK(b.mean == a.mean);
        CHECK(b.covariance == a.covariance);
        CHECK(b.elbo == a.elbo);
    }
    CHECK(a.converged);
    CHECK(a.mean.size() == 3);
    CHECK(a.covariance.rows() == 3);
    CHECK(a.restart_elbos.size() == 1);
    CHECK(a.elbo_trace.back() == a.elbo);
}

TEST_CASE("api: data errors name the row and column, like the command line") {
    const vbn::Model m = vbn::Model::from_string(multimodal_text, "multimodal");
    Eigen::MatrixXd bad = multimodal_rows();
    bad(2, 1) = 0.5;  // row 3, column 2
    const auto e = expect_throw<vbn::DataError>([&] { vbn::Dataset::from_matrix(m, bad, {"o", "y"}, "mine"); });
    CHECK(e.kind() == vbn::ErrorKind::data);
    CHECK(e.row() == 3);
    CHECK(e.column() == 2);
    CHECK(std::string(e.what()).find("mine:3:2:") != std::string::npos);

    // The CSV reader counts the header as line 1.
    std::istringstream csv("o,y\n1,1\n1,maybe\n");
    const auto c = expect_throw<vbn::DataError>([&] { vbn::Dataset::from_csv(m, csv, "s.csv"); });
    CHECK(c.row() == 3);
    CHECK(c.column() == 2);
    CHECK(std::string(c.what()).find("s.csv:3:2:") != std::string::npos);

    // A missing column, a hidden node's column, no rows.
    CHECK_THROWS_AS(vbn::Dataset::from_matrix(m, Eigen::MatrixXd::Ones(3, 1), {"o"}), vbn::DataError);
    CHECK_THROWS_AS(vbn::Dataset::from_matrix(m, Eigen::MatrixXd::Ones(3, 3), {"o", "y", "h"}), vbn::DataError);
    CHECK_THROWS_AS(vbn::Dataset::from_matrix(m, Eigen::MatrixXd(0, 2), {"o", "y"}), vbn::DataError);
    // Covariates may not be missing or infinite.
    const vbn::Model w = vbn::Model::from_file(wells_model);
    Eigen::MatrixXd cov = Eigen::MatrixXd::Ones(2, 3);
    cov(1, 2) = std::nan("");
    CHECK_THROWS_AS(vbn::Dataset::from_matrix(w, cov, {"switched", "dist100", "arsenic"}), vbn::DataError);
    cov(1, 2) = INFINITY;
    CHECK_THROWS_AS(vbn::Dataset::from_matrix(w, cov, {"switched", "dist100", "arsenic"}), vbn::DataError);

    // An extra column is a note, not an error.
    Eigen::MatrixXd extra(2, 3);
    extra << 1, -1, 7, -1, 1, 8;
    const vbn::Dataset d = vbn::Dataset::from_matrix(m, extra, {"o", "y", "comment"});
    REQUIRE(d.notes().size() == 1);
    CHECK(d.notes()[0].find("comment") != std::string::npos);

    CHECK_THROWS_AS(vbn::Dataset::from_csv_file(m, source_dir + "/no/such.csv"), vbn::IoError);
}

TEST_CASE("api: usage errors") {
    const vbn::Model m = vbn::Model::from_string(multimodal_text, "multimodal");
    const vbn::Dataset d = vbn::Dataset::from_matrix(m, multimodal_rows(), {"o", "y"});
    CHECK_THROWS_AS(vbn::Dataset::from_matrix(m, multimodal_rows(), {"o"}), vbn::UsageError);
    CHECK_THROWS_AS(vbn::Dataset::from_columns(m, {{"o", {1, 1}}, {"y", {1}}}), vbn::UsageError);

    // A dataset belongs to its model (even to an identical model compiled again).
    const vbn::Model again = vbn::Model::from_string(multimodal_text, "again");
    CHECK_THROWS_AS(vbn::variational(again, d), vbn::UsageError);

    vbn::FitOptions o = small_options("nope", 1);
    const auto e = expect_throw<vbn::UsageError>([&] { vbn::fit(m, d, o); });
    CHECK(std::string(e.what()).find("unknown method 'nope'") != std::string::npos);
    o = small_options("varmix", 1);
    o.chains = 0;
    CHECK_THROWS_AS(vbn::fit(m, d, o), vbn::UsageError);
    o = small_options("nuts", 1);
    o.adapt_delta = 1.2;
    const auto ad = expect_throw<vbn::UsageError>([&] { vbn::fit(m, d, o); });
    CHECK(std::string(ad.what()).find("--adapt-delta must lie strictly between 0 and 1, got 1.2") != std::string::npos);
    o = small_options("varblock", 1);
    o.overrelax = 1;
    const auto orx = expect_throw<vbn::UsageError>([&] { vbn::fit(m, d, o); });
    CHECK(std::string(orx.what()).find("--overrelax must lie strictly between -1 and 1, got 1") != std::string::npos);
}

TEST_CASE("api: limit and inference errors") {
    // Fourteen hidden parents of one node must be summed out jointly: 2^14 terms per row.
    const vbn::Model big = vbn::Model::from_string(
        "node h[14] hidden ~ bernoulli(0.5);\nnode y ~ logistic(w * h);\nw ~ normal(0, 1);\n", "big");
    const vbn::Dataset d = vbn::Dataset::from_columns(big, {{"y", {1, -1, 1}}});
    const auto e = expect_throw<vbn::LimitError>([&] { vbn::fit(big, d, small_options("varmix", 1)); });
    CHECK(e.kind() == vbn::ErrorKind::limit);
    // auto samples the hidden values instead (the gibbs method) rather than refusing.
    CHECK(vbn::fit(big, d, small_options("auto", 1)).method == "gibbs");

    // A covariate so large that its square overflows: refused as the data are read into the
    // model, naming the row, rather than a NaN (or, as before, an error from deep inside the
    // variational fit).
    const vbn::Model huge = vbn::Model::from_string("covariate x;\nnode y ~ logistic(b * x);\nb ~ normal(0, 1);\n", "huge");
    const vbn::Dataset dh = vbn::Dataset::from_columns(huge, {{"y", {1, -1, 1}}, {"x", {1, 2, 1e200}}});
    const auto i = expect_throw<vbn::DataError>([&] { vbn::variational(huge, dh); });
    CHECK(i.kind() == vbn::ErrorKind::data);
    CHECK(std::string(i.what()).find("a learned term's feature of 1e+200 in this row, beyond ±1e100") != std::string::npos);
}

TEST_CASE("api: fit results, callbacks and streamed draws") {
    const vbn::Model m = vbn::Model::from_string(multimodal_text, "multimodal");
    const vbn::Dataset d = vbn::Dataset::from_matrix(m, multimodal_rows(), {"o", "y"});
    const vbn::FitOptions o = small_options("auto", 7);

    std::mutex mutex;
    std::vector<std::vector<Eigen::VectorXd>> streamed(2);
    std::vector<std::vector<double>> streamed_lp(2);
    std::vector<int> last_progress(2, -1);
    std::vector<std::string> log;
    bool ordered = true;
    vbn::Callbacks cb;
    cb.on_draw = [&](int chain, int draw, const Eigen::VectorXd& values, double lp) {
        std::lock_guard lock(mutex);
        auto& s = streamed[static_cast<std::size_t>(chain)];
        ordered = ordered && draw == static_cast<int>(s.size());
        s.push_back(values);
        streamed_lp[static_cast<std::size_t>(chain)].push_back(lp);
    };
    cb.progress = [&](const vbn::Progress& p) {
        std::lock_guard lock(mutex);
        if (!p.warmup && p.iteration == p.iterations) last_progress[static_cast<std::size_t>(p.chain)] = p.iteration;
    };
    cb.log = [&](vbn::LogLevel, const std::string& message) { log.push_back(message); };

    const auto started = std::chrono::steady_clock::now();
    const vbn::FitResult r = vbn::fit(m, d, o, cb);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(r.method == "varmix");  // a hidden node and a missing value
    // The phases' wall times: each measured, and together within the call's.
    for (const double s : {r.target_seconds, r.variational.seconds, r.proposal_seconds, r.warmup_seconds, r.sampling_seconds,
                           r.summary_seconds})
        CHECK(s > 0);
    CHECK(r.target_seconds + r.variational.seconds + r.proposal_seconds + r.warmup_seconds + r.sampling_seconds +
              r.summary_seconds <=
          elapsed);
    CHECK(!r.kernel.empty());
    CHECK(r.names == m.parameter_names());
    REQUIRE(r.chains.size() == 2);
    CHECK(ordered);
    for (int c = 0; c < 2; ++c) {
        const vbn::Chain& ch = r.chains[static_cast<std::size_t>(c)];
        CHECK(ch.error.empty());
        REQUIRE(ch.draws.rows() == 150);
        REQUIRE(ch.draws.cols() == 2);
        REQUIRE(streamed[static_cast<std::size_t>(c)].size() == 150);
        for (int k = 0; k < 150; ++k) {
            CHECK(streamed[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)] == ch.draws.row(k).transpose());
            CHECK(streamed_lp[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)] == ch.log_density[k]);
        }
        CHECK(last_progress[static_cast<std::size_t>(c)] == 150);
        // One move of the method and one symmetry jump per iteration (flipping h is a symmetry
        // only P(h = +1) and the prior break: docs/methods.md, "Symmetry jumps").
        long proposed = 0, jumps = 0;
        for (const auto& a : ch.acceptance) (a.kernel == "symmetry jump" ? jumps : proposed) += a.proposed;
        CHECK(proposed == 150);
        CHECK(jumps == 150);
    }
    // The note saying what auto chose went to the log and into the result.
    REQUIRE(!r.notes.empty());
    CHECK(r.notes[0].find("method auto chose varmix") != std::string::npos);
    CHECK(log.size() == r.notes.size() + r.warnings.size());

    // The summary is over the pooled draws.
    REQUIRE(r.summary.size() == 2);
    for (Eigen::Index j = 0; j < 2; ++j) {
        const double mean = (r.chains[0].draws.col(j).sum() + r.chains[1].draws.col(j).sum()) / 300.0;
        CHECK(r.summary[static_cast<std::size_t>(j)].name == r.names[static_cast<std::size_t>(j)]);
        CHECK(r.summary[static_cast<std::size_t>(j)].mean == doctest::Approx(mean).epsilon(1e-12));
        CHECK(r.summary[static_cast<std::size_t>(j)].q5 < r.summary[static_cast<std::size_t>(j)].q95);
    }
    CHECK(r.table.find("w[1]") != std::string::npos);
    long total = 0;
    for (const auto& a : r.acceptance)
        if (a.kernel != "symmetry jump") total += a.proposed;
    CHECK(total == 300);

    // The fit's variational part is variational() with the same options.
    const vbn::VariationalResult v = vbn::variational(m, d, o.variational);
    CHECK(v.mean == r.variational.mean);
    CHECK(v.covariance == r.variational.covariance);

    // keep_draws = false: streamed, not kept.
    vbn::FitOptions lean = o;
    lean.keep_draws = false;
    int count = 0;
    vbn::Callbacks counting;
    counting.on_draw = [&](int, int, const Eigen::VectorXd&, double) {
        std::lock_guard lock(mutex);
        ++count;
    };
    const vbn::FitResult l = vbn::fit(m, d, lean, counting);
    CHECK(count == 300);
    CHECK(l.chains[0].draws.rows() == 0);
    CHECK(l.summary.empty());
    CHECK(l.summary_seconds == 0);
}

TEST_CASE("api: cancellation") {
    const vbn::Model m = vbn::Model::from_file(wells_model);
    const vbn::Dataset d = vbn::Dataset::from_csv_file(m, wells_csv);
    vbn::Callbacks cb;
    cb.cancel = vbn::CancellationToken();

    // Cancelled before it starts: the variational fit stops at once.
    cb.cancel->cancel();
    CHECK_THROWS_AS(vbn::fit(m, d, small_options("varblock", 1), cb), vbn::CancelledError);

    // Cancelled from another thread while the chains run: they stop long before the end.
    cb.cancel->reset();
    std::atomic<int> draws{0};
    cb.on_draw = [&](int, int, const Eigen::VectorXd&, double) {
        if (++draws == 10) cb.cancel->cancel();
    };
    vbn::FitOptions o = small_options("varblock", 1);
    o.draws = 1000000;
    const auto e = expect_throw<vbn::CancelledError>([&] { vbn::fit(m, d, o, cb); });
    CHECK(e.kind() == vbn::ErrorKind::cancelled);
    CHECK(draws.load() < 1000);
}

TEST_CASE("api: fits in concurrent threads equal the same fits run alone") {
    const vbn::Model wells = vbn::Model::from_file(wells_model);
    const vbn::Dataset wells_data = vbn::Dataset::from_csv_file(wells, wells_csv);
    const vbn::Model multi = vbn::Model::from_string(multimodal_text, "multimodal");
    const vbn::Dataset multi_data = vbn::Dataset::from_matrix(multi, multimodal_rows(), {"o", "y"});

    struct Job {
        const vbn::Model* model;
        const vbn::Dataset* data;
        vbn::FitOptions options;
    };
    const std::vector<Job> jobs{
        {&wells, &wells_data, small_options("varblock", 3)}, {&multi, &multi_data, small_options("varmix", 4)},
        {&wells, &wells_data, small_options("nuts", 5)},     {&multi, &multi_data, small_options("regen", 6)},
        {&multi, &multi_data, small_options("rwm", 6)},      {&wells, &wells_data, small_options("varmh", 8)},
    };
    std::vector<vbn::FitResult> alone;
    for (const auto& j : jobs) alone.push_back(vbn::fit(*j.model, *j.data, j.options));

    std::vector<vbn::FitResult> together(jobs.size());
    std::vector<std::string> errors(jobs.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < jobs.size(); ++i)
        threads.emplace_back([&, i] {
            try {
                vbn::Callbacks cb;  // exercise the callback paths concurrently too
                cb.progress = [](const vbn::Progress&) {};
                cb.on_draw = [](int, int, const Eigen::VectorXd&, double) {};
                together[i] = vbn::fit(*jobs[i].model, *jobs[i].data, jobs[i].options, cb);
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        INFO("job " << i << " (" << jobs[i].options.method << ")");
        CHECK(errors[i].empty());
        CHECK(same(alone[i], together[i]));
    }
}

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The columns of draws in Model::parameter_names() order, from draws of b and w.
Eigen::MatrixXd named_draws(const vbn::Model& m, const Eigen::VectorXd& b, const Eigen::VectorXd& w) {
    Eigen::MatrixXd d(b.size(), 2);
    const auto& names = m.parameter_names();
    REQUIRE(names.size() == 2);
    for (int j = 0; j < 2; ++j) d.col(j) = names[static_cast<std::size_t>(j)] == "b" ? b : w;
    return d;
}

using vbn::quadrature::log_integral_1d;

const char* const regression_text = "node x ~ bernoulli(0.5);\nnode y ~ logistic(b + w * x);\nb ~ normal(0, 1);\nw ~ normal(0, 1);\n";

}  // namespace

TEST_CASE("api: predict from draws against the formula, by row and node, with scores") {
    const vbn::Model m = vbn::Model::from_string(regression_text, "regression");
    const double nan = std::nan("");
    // Row 1: x = +1, y unknown; row 2: x unknown, y = +1; row 3: both known; row 4: nothing known.
    Eigen::MatrixXd rows(4, 2);
    rows << 1, nan, nan, 1, -1, -1, nan, nan;
    const vbn::Dataset d = vbn::Dataset::from_matrix(m, rows, {"x", "y"});
    Eigen::VectorXd b(3), w(3);
    b << -0.5, 0.2, 1.0;
    w << 1.5, -0.3, 0.7;
    const vbn::PredictResult r = vbn::predict(m, d, named_draws(m, b, w));
    CHECK(r.draws == 3);
    REQUIRE(r.predictions.size() == 4);
    CHECK_FALSE(r.scores);
    // P(y = +1 | x = +1) = mean of σ(b + w): x's probability does not depend on θ.
    double py = 0;
    for (int s = 0; s < 3; ++s) py += sigmoid(b[s] + w[s]) / 3;
    CHECK(r.predictions[0].row == 1);
    CHECK(r.predictions[0].node == "y");
    CHECK(r.predictions[0].p == doctest::Approx(py).epsilon(1e-12));
    CHECK(r.predictions[0].truth == 0);
    // P(x = +1 | y = +1) = Σ σ(b + w) / Σ (σ(b + w) + σ(b − w)): y weighs the draws.
    double num = 0, den = 0;
    for (int s = 0; s < 3; ++s) {
        num += sigmoid(b[s] + w[s]);
        den += sigmoid(b[s] + w[s]) + sigmoid(b[s] - w[s]);
    }
    CHECK(r.predictions[1].row == 2);
    CHECK(r.predictions[1].node == "x");
    CHECK(r.predictions[1].p == doctest::Approx(num / den).epsilon(1e-12));
    // Row 4: x, then y (declaration order); P(x = +1) = 0.5, P(y = +1) = mean of the average.
    CHECK(r.predictions[2].row == 4);
    CHECK(r.predictions[2].node == "x");
    CHECK(r.predictions[2].p == doctest::Approx(0.5).epsilon(1e-12));
    double py_any = 0;
    for (int s = 0; s < 3; ++s) py_any += 0.5 * (sigmoid(b[s] + w[s]) + sigmoid(b[s] - w[s])) / 3;
    CHECK(r.predictions[3].node == "y");
    CHECK(r.predictions[3].p == doctest::Approx(py_any).epsilon(1e-12));

    // With a target, every row predicts it and the known values are scored.
    vbn::PredictOptions o;
    o.target = "y";
    const vbn::PredictResult t = vbn::predict(m, d, named_draws(m, b, w), o);
    REQUIRE(t.predictions.size() == 4);
    REQUIRE(t.scores);
    CHECK(t.scores->scored == 2);  // rows 2 (y = +1) and 3 (y = −1)
    double py3 = 0;  // P(y = +1 | x = −1)
    for (int s = 0; s < 3; ++s) py3 += sigmoid(b[s] - w[s]) / 3;
    CHECK(t.predictions[1].truth == 1);
    CHECK(t.predictions[2].truth == -1);
    CHECK(t.predictions[2].p == doctest::Approx(py3).epsilon(1e-12));
    const double p2 = t.predictions[1].p;
    CHECK(p2 == doctest::Approx(py_any).epsilon(1e-12));  // row 2's x is unknown
    CHECK(t.scores->log_loss == doctest::Approx(-(std::log(p2) + std::log(1 - py3)) / 2).epsilon(1e-12));
    CHECK(t.scores->brier == doctest::Approx(((1 - p2) * (1 - p2) + py3 * py3) / 2).epsilon(1e-12));
    CHECK(t.scores->accuracy == doctest::Approx(((p2 > 0.5 ? 1 : 0) + (py3 <= 0.5 ? 1 : 0)) / 2.0));

    o.target = "nope";
    CHECK_THROWS_AS(vbn::predict(m, d, named_draws(m, b, w), o), vbn::UsageError);
    CHECK_THROWS_AS(vbn::predict(m, d, Eigen::MatrixXd::Zero(3, 1)), vbn::UsageError);
    const vbn::Model again = vbn::Model::from_string(regression_text, "again");
    CHECK_THROWS_AS(vbn::predict(again, d, named_draws(m, b, w)), vbn::UsageError);
}

TEST_CASE("api: predict from a variational fit against Gaussian quadrature") {
    const vbn::Model m = vbn::Model::from_string(regression_text, "regression");
    Eigen::MatrixXd train(30, 2);
    for (int r = 0; r < 30; ++r) {
        train(r, 0) = r % 2 == 0 ? 1 : -1;
        train(r, 1) = (r % 2 == 0) == (r % 7 != 0) ? 1 : -1;  // y mostly follows x
    }
    const vbn::VariationalResult q = vbn::variational(m, vbn::Dataset::from_matrix(m, train, {"x", "y"}));
    Eigen::MatrixXd rows(1, 2);
    rows << 1, std::nan("");
    const vbn::Dataset d = vbn::Dataset::from_matrix(m, rows, {"x", "y"});
    const vbn::PredictResult r = vbn::predict(m, d, q);
    CHECK(r.draws == 4000);
    REQUIRE(r.predictions.size() == 1);
    // b + w ~ N(μ, v) under q: E σ(b + w) and its sd by quadrature.
    const Eigen::VectorXd a = Eigen::VectorXd::Ones(2);
    const double mu = a.dot(q.mean), sd = std::sqrt(a.dot(q.covariance * a));
    double e1 = 0, e2 = 0, z = 0;
    for (int i = -4000; i <= 4000; ++i) {
        const double t = mu + sd * i / 400.0, dens = std::exp(-0.5 * (i / 400.0) * (i / 400.0));
        z += dens;
        e1 += dens * sigmoid(t);
        e2 += dens * sigmoid(t) * sigmoid(t);
    }
    e1 /= z;
    e2 /= z;
    const double mcse = std::sqrt(e2 - e1 * e1) / std::sqrt(4000.0);
    CAPTURE(e1);
    CHECK(std::abs(r.predictions[0].p - e1) < 4 * mcse);
    // The same seed gives the same numbers; another seed other ones.
    vbn::PredictOptions o;
    CHECK(vbn::predict(m, d, q, o).predictions[0].p == r.predictions[0].p);
    o.seed = 2;
    CHECK(vbn::predict(m, d, q, o).predictions[0].p != r.predictions[0].p);
    o.vb_draws = 0;
    CHECK_THROWS_AS(vbn::predict(m, d, q, o), vbn::UsageError);
}

TEST_CASE("api: evidence against quadrature, and exact without parameters") {
    const vbn::Model m = vbn::Model::from_string("node y ~ logistic(b);\nb ~ normal(0.5, 2);\n", "one");
    const vbn::Dataset d = vbn::Dataset::from_columns(m, {{"y", {1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1}}});  // 9 of 12
    auto log_sigmoid = [](double x) { return -std::log1p(std::exp(-x)); };
    const double exact = log_integral_1d(
        [&](double b) { return vbn::quadrature::log_normal_pdf(b, 0.5, 2) + 9 * log_sigmoid(b) + 3 * log_sigmoid(-b); },
        -20, 20, 4000);
    // Seeds 1–5: within 3 standard errors, k-hat at most 0.5 (the tolerances of the runtime's
    // own evidence test, tests/runtime/test_evidence.cpp, which says how they were measured).
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        vbn::EvidenceOptions o;
        o.seed = seed;
        const vbn::EvidenceResult e = vbn::evidence(m, d, o);
        CAPTURE(seed);
        CAPTURE(e.log_evidence);
        // The round stops when its weights' ESS reaches 2,000, before its 4,000 draws.
        CHECK(e.draws >= 2000);
        CHECK(e.draws < 4000);
        CHECK(e.from_mode);
        CHECK(e.se > 0);
        CHECK(std::abs(e.log_evidence - exact) < 3 * e.se);
        CHECK(e.pareto_k < 0.5);
        CHECK(e.elbo < exact);
        CHECK(e.elbo == vbn::variational(m, d).elbo);
    }

    const vbn::Model fixed = vbn::Model::from_string("node y ~ bernoulli(0.3);\n", "fixed");
    const vbn::EvidenceResult e = vbn::evidence(fixed, vbn::Dataset::from_columns(fixed, {{"y", {1, -1, -1}}}));
    CHECK(e.draws == 0);
    CHECK(e.log_evidence == doctest::Approx(std::log(0.3) + 2 * std::log(0.7)).epsilon(1e-12));
    CHECK(std::isnan(e.pareto_k));

    vbn::EvidenceOptions bad;
    bad.draws = 5;
    CHECK_THROWS_AS(vbn::evidence(m, d, bad), vbn::UsageError);
    const vbn::Model big = vbn::Model::from_string(
        "node h[14] hidden ~ bernoulli(0.5);\nnode y ~ logistic(w * h);\nw ~ normal(0, 1);\n", "big");
    CHECK_THROWS_AS(vbn::evidence(big, vbn::Dataset::from_columns(big, {{"y", {1, -1, 1}}})), vbn::LimitError);
}

TEST_CASE("api: the README and docs/embedding.md snippets run as written") {
    vbn::Model model = vbn::Model::from_string("node y ~ logistic(b);  b ~ normal(0, 2);", "coin");
    vbn::Dataset data = vbn::Dataset::from_columns(model, {{"y", {1, 1, -1, 1}}});
    vbn::FitResult fit = vbn::fit(model, data);
    CHECK(fit.summary.size() == 1);
    CHECK(fit.summary[0].mean > 0);  // three heads in four
    CHECK(fit.chains.size() == 4);
    CHECK(fit.chains[0].draws.rows() == 1000);
    // docs/embedding.md's predict snippet.
    vbn::PredictOptions po;
    po.target = "y";
    const vbn::PredictResult pr = vbn::predict(model, data, fit.chains[0].draws, po);
    CHECK(pr.predictions.size() == 4);
    REQUIRE(pr.scores);
    CHECK(pr.scores->scored == 4);
    CHECK(pr.predictions[0].node == "y");

    const auto e = expect_throw<vbn::ModelError>([] { vbn::Model::from_string("node y ~ logistic(2 + 3 * q);", "m"); });
    CHECK(e.line() == 1);
    CHECK(e.column() == 27);
    CHECK(std::string(e.what()).rfind("m:1:27: error: unknown parent 'q'", 0) == 0);
}

TEST_CASE("api: methods() lists what FitOptions::method takes, auto first") {
    const std::vector<vbn::MethodDescription> all = vbn::methods();
    REQUIRE(all.size() > 1);
    CHECK(all.front().name == "auto");
    for (const auto& m : all) {
        CAPTURE(m.name);
        CHECK_FALSE(m.description.empty());
    }
    CHECK(std::any_of(all.begin(), all.end(), [](const vbn::MethodDescription& m) { return m.name == "gibbs"; }));
}

TEST_CASE("api: FitResult::modes are the summary's minor modes, counted from the draws") {
    // examples/paper/multimodal: flipping h with w[1] keeps the likelihood but for P(h) = 0.6,
    // and w's prior mean 3 breaks it further, so the flipped copy is a minor mode that the
    // symmetry jumps visit. A draw belongs to the copy whose w[1] has its sign.
    const vbn::Model m = vbn::Model::from_file(source_dir + "/examples/paper/multimodal.vbn");
    const vbn::Dataset d = vbn::Dataset::from_csv_file(m, source_dir + "/examples/paper/multimodal.csv");
    vbn::FitOptions o;
    o.seed = 3;
    o.warmup = 300;
    o.draws = 500;
    const vbn::FitResult r = vbn::fit(m, d, o);
    REQUIRE(r.modes.size() == 1);
    CHECK(r.modes[0].flip == "h");
    const auto w1 = static_cast<Eigen::Index>(std::find(r.names.begin(), r.names.end(), "w[1]") - r.names.begin());
    REQUIRE(w1 < static_cast<Eigen::Index>(r.names.size()));
    double negative = 0, total = 0;
    for (const vbn::Chain& c : r.chains) {
        negative += (c.draws.col(w1).array() < 0).cast<double>().sum();
        total += static_cast<double>(c.draws.rows());
    }
    const double minor = std::min(negative, total - negative) / total;  // the copy with fewer draws
    CHECK(r.modes[0].mass == doctest::Approx(minor).epsilon(1e-12));
    CHECK(r.modes[0].mass > 0.02);  // the copy is visited: the check above has something to count
    CHECK(r.modes[0].mcse > 0);
    CHECK(r.modes[0].mcse < r.modes[0].mass);
    CHECK(r.table.find("Minor modes") != std::string::npos);
    // The same copy weighed by importance sampling from the major copy's draws: a second,
    // independent estimate of its mass, which must agree with the share within their errors.
    const vbn::ModeMass& mm = r.modes[0];
    REQUIRE(std::isfinite(mm.importance));
    CHECK(mm.importance_mcse > 0);
    CHECK(mm.importance_khat < 0.7);
    CHECK(std::abs(mm.importance - mm.mass) < 4 * std::hypot(mm.mcse, mm.importance_mcse));
    CHECK(r.table.find(fmt::format("{:.2f}% +- {:.2f}%", 100 * mm.importance, 100 * mm.importance_mcse)) != std::string::npos);
}

TEST_CASE("api: FitOptions::log_lik gives each row's log-likelihood at every kept draw") {
    const vbn::Model m = vbn::Model::from_string(multimodal_text, "multimodal");
    const Eigen::MatrixXd rows = multimodal_rows();
    const vbn::Dataset d = vbn::Dataset::from_matrix(m, rows, {"o", "y"});
    vbn::FitOptions o = small_options("auto", 4);
    o.log_lik = true;
    const vbn::FitResult r = vbn::fit(m, d, o);
    REQUIRE(r.chains.size() == 2);
    for (const vbn::Chain& c : r.chains) {
        REQUIRE(c.log_lik.rows() == c.draws.rows());
        REQUIRE(c.log_lik.cols() == rows.rows());
        for (Eigen::Index s = 0; s < c.draws.rows(); s += 7) {
            const double w1 = c.draws(s, 0), w2 = c.draws(s, 1);
            for (Eigen::Index i = 0; i < rows.rows(); ++i) {
                // p(o) p(y | o) with h summed out; the row whose y is missing keeps p(o) alone.
                const double obs = rows(i, 0), y = rows(i, 1);
                double p = 0.5;
                if (!std::isnan(y))
                    p *= 0.6 * sigmoid(y * (2 + w1 + w2 * obs)) + 0.4 * sigmoid(y * (2 - w1 + w2 * obs));
                CHECK(c.log_lik(s, i) == doctest::Approx(std::log(p)).epsilon(1e-12));
            }
        }
    }
    o.keep_draws = false;
    CHECK_THROWS_AS(vbn::fit(m, d, o), vbn::UsageError);
}

TEST_CASE("api: simulate draws rows forward from given or prior parameters") {
    const vbn::Model m = vbn::Model::from_string("node y ~ logistic(b);  node z ~ logistic(w * [y]);  b ~ normal(0, 2);  w ~ normal(0, 1);",
                                                 "sim");
    vbn::SimulateOptions o;
    o.rows = 20000;
    o.seed = 11;
    o.params_json = R"({"b": 1.0})";
    const vbn::SimulateResult r = vbn::simulate(m, o);
    REQUIRE(r.columns.size() == 2);
    CHECK(r.columns[0].name == "y");
    CHECK(r.columns[1].name == "z");
    REQUIRE(r.columns[0].values.size() == 20000);
    // b given, w[1] from its prior (a note says so).
    REQUIRE(r.parameters.size() == 2);
    CHECK(r.parameters[0] == 1.0);
    CHECK(std::find_if(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.find("priors") != std::string::npos; }) !=
          r.notes.end());
    // P(y = +1) = sigmoid(1) = 0.7311; 20000 rows give a standard error of 0.0031.
    long up = 0;
    for (double v : r.columns[0].values) {
        CHECK((v == 1 || v == -1));
        up += v == 1 ? 1 : 0;
    }
    CHECK(static_cast<double>(up) / 20000 == doctest::Approx(sigmoid(1.0)).epsilon(0.02));
    // The same seed, the same rows; another seed, others.
    const vbn::SimulateResult again = vbn::simulate(m, o);
    CHECK(again.columns[1].values == r.columns[1].values);
    CHECK(again.parameters == r.parameters);
    o.seed = 12;
    CHECK(vbn::simulate(m, o).columns[1].values != r.columns[1].values);

    o.params_json = "{\"b\": ";
    CHECK_THROWS_AS(vbn::simulate(m, o), vbn::UsageError);
    o.params_json = R"({"q": 1})";
    CHECK_THROWS_AS(vbn::simulate(m, o), vbn::UsageError);
    o.params_json.clear();
    o.rows = 0;
    CHECK_THROWS_AS(vbn::simulate(m, o), vbn::UsageError);
}

TEST_CASE("api: each kept draw carries the sampler statistics of the CSV's columns") {
    const vbn::Model m = vbn::Model::from_file(wells_model);
    const vbn::Dataset d = vbn::Dataset::from_csv_file(m, wells_csv);
    const vbn::FitResult r = vbn::fit(m, d, small_options("nuts", 7));
    REQUIRE(r.chains.size() == 2);
    for (const vbn::Chain& c : r.chains) {
        const vbn::SamplerStats& s = c.sampler;
        const Eigen::Index n = c.draws.rows();
        REQUIRE(n == 150);
        REQUIRE((s.accept_stat.size() == n && s.stepsize.size() == n && s.treedepth.size() == n &&
                 s.n_leapfrog.size() == n && s.divergent.size() == n && s.energy.size() == n));
        long divergent = 0;
        for (Eigen::Index k = 0; k < n; ++k) {
            CAPTURE(k);
            CHECK((s.accept_stat[k] >= 0 && s.accept_stat[k] <= 1));
            CHECK(s.stepsize[k] > 0);
            // After warmup the step size is the adapted one, the same for every draw.
            CHECK(s.stepsize[k] == s.stepsize[0]);
            CHECK(s.treedepth[k] >= 0);
            // A tree of depth d has 2^d - 1 leapfrog steps, or up to 2^(d+1) - 1 when the
            // subtree that would have made it d + 1 was abandoned.
            CHECK((s.n_leapfrog[k] >= 1 && s.n_leapfrog[k] < (2 << s.treedepth[k])));
            CHECK((s.divergent[k] == 0 || s.divergent[k] == 1));
            divergent += s.divergent[k];
            // energy = -lp + kinetic energy, and the kinetic energy is not negative.
            CHECK(s.energy[k] >= -c.log_density[k] - 1e-9 * std::abs(c.log_density[k]));
        }
        CHECK(divergent == c.divergent);
        // The statistics move from draw to draw (not one value copied to every draw).
        CHECK(s.accept_stat.maxCoeff() > s.accept_stat.minCoeff());
        CHECK(s.energy.maxCoeff() > s.energy.minCoeff());
    }

    // Kernels other than NUTS fill accept_stat and leave HMC's statistics at 0.
    const vbn::FitResult mh = vbn::fit(m, d, small_options("varblock", 7));
    for (const vbn::Chain& c : mh.chains) {
        REQUIRE(c.sampler.accept_stat.size() == c.draws.rows());
        CHECK(((c.sampler.accept_stat.array() >= 0).all() && (c.sampler.accept_stat.array() <= 1).all()));
        CHECK(c.sampler.accept_stat.maxCoeff() > c.sampler.accept_stat.minCoeff());
        CHECK((c.sampler.stepsize.array() == 0).all());
        CHECK((c.sampler.n_leapfrog.array() == 0).all());
    }

    // Without kept draws there are no per-draw statistics either.
    vbn::FitOptions streamed = small_options("nuts", 7);
    streamed.keep_draws = false;
    for (const vbn::Chain& c : vbn::fit(m, d, streamed).chains) CHECK(c.sampler.accept_stat.size() == 0);
}

namespace {

// A file of `text` in the temporary directory, removed at the end of the scope.
struct TempFile {
    std::string path;
    TempFile(const std::string& name, const std::string& text)
        : path((std::filesystem::temp_directory_path() / ("vbn-test-api-" + std::to_string(::getpid()) + "-" + name)).string()) {
        std::ofstream(path) << text;
    }
    ~TempFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("api: read_draws reads a CmdStan CSV file as vbn summary does") {
    // Saved warmup rows come before "# Adaptation terminated" and are left out.
    const TempFile good("good.csv", "# model = wells\n# algorithm = hmc (Default)\n# engine = nuts\n# seed = 3\n"
                                    "# save_warmup = 1\n"
                                    "lp__,accept_stat__,stepsize__,a,b.1,log_lik.1\n"
                                    "-9,0.5,1.5,7,7,7\n"
                                    "# Adaptation terminated\n# Step size = 0.8\n"
                                    "-7.5,0.9,0.8,0.25,-1,-0.5\n"
                                    "-7.25,1,0.8,0.5,-2,-0.75\n"
                                    "#  Elapsed Time: 0.1 seconds (Warm-up)\n");
    const vbn::DrawsFile f = vbn::read_draws(good.path);
    CHECK(f.path == good.path);
    CHECK(f.setting("algorithm") == "hmc");  // "(Default)" dropped
    CHECK(f.setting("seed") == "3");
    CHECK_FALSE(f.setting("thin").has_value());
    CHECK(f.config.front() == std::pair<std::string, std::string>{"model", "wells"});
    CHECK(f.sampler_columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__"});
    CHECK(f.parameter_columns == std::vector<std::string>{"a", "b.1", "log_lik.1"});
    REQUIRE(f.draws.rows() == 2);
    REQUIRE(f.sampler.rows() == 2);
    CHECK(f.sampler(1, 0) == -7.25);
    CHECK(f.sampler(0, 1) == 0.9);
    CHECK(f.draws(0, 0) == 0.25);
    CHECK(f.draws(1, 1) == -2);
    CHECK(f.draws(1, 2) == -0.75);

    // Malformed files: the reader's located message, as vbn summary prints it.
    const TempFile ragged("ragged.csv", "lp__,a\n-1,2\n-1,2,3\n");
    const auto r = expect_throw<vbn::DataError>([&] { vbn::read_draws(ragged.path); });
    CHECK(r.row() == 3);
    CHECK(std::string(r.what()) == ragged.path + ":3: a draw has 3 values but the header has 2 columns (a truncated file?)");
    const TempFile text("text.csv", "lp__,a\n-1,x2\n");
    const auto t = expect_throw<vbn::DataError>([&] { vbn::read_draws(text.path); });
    CHECK(std::string(t.what()) == text.path + ":2: column 2 (a): 'x2' is not a number");
    CHECK((t.row() == 2 && t.column() == 2));
    const TempFile empty("empty.csv", "# model = m\n");
    CHECK(std::string(expect_throw<vbn::DataError>([&] { vbn::read_draws(empty.path); }).what()).find(
              "no header line: this is not a Stan CSV file") != std::string::npos);
    const auto missing = expect_throw<vbn::IoError>([&] { vbn::read_draws(good.path + ".none"); });
    CHECK(std::string(missing.what()).find("no such file") != std::string::npos);
}
