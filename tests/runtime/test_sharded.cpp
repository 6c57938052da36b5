// Rows sharded (runtime/distributed/, `vbn fit --shards`), in one process: the CSV dealt into
// shards by row order; the sum of every shard's terms against the target of all the rows, for
// a model with a hidden node, missing cells and a covariate; a target whose rows are remote
// refusing what it cannot evaluate; and fit() choosing NUTS for them. That several MPI ranks
// give the same draws as one is checked by scripts/test-mpi.sh.
#include "runtime/services/sharded.hpp"

#include "runtime/data/model.hpp"
#include "runtime/distributed/sharded_likelihood.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "tests/runtime/fit_options.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace test_sharded {

using namespace vbn;

const char* kModel = R"(
node h hidden ~ bernoulli(0.3);
covariate z;
node a ~ logistic(b1 + w1 * [h, z]);
node c ~ logistic(b2 + w2 * [h, a]);
b1, b2 ~ normal(0, 1);
w1, w2 ~ normal(0, 2);
)";

// 23 rows: a, c with some cells missing, z real. Row i is written so that it can be found again
// by its z (i / 10).
std::string csv_text() {
    std::string s = "a,c,z\n";
    for (int i = 0; i < 23; ++i) {
        const char* a = i % 7 == 3 ? "NA" : (i * 5 % 3 ? "1" : "0");
        const char* c = i % 5 == 1 ? "NA" : (i * 7 % 4 < 2 ? "1" : "0");
        s += fmt::format("{},{},{}\n", a, c, i / 10.0);
    }
    return s;
}

struct TempCsv {
    std::string path;
    explicit TempCsv(const std::string& text)
        : path((std::filesystem::temp_directory_path() / fmt::format("vbn_sharded_{}.csv", ::getpid())).string()) {
        std::ofstream(path) << text;
    }
    ~TempCsv() { std::remove(path.c_str()); }
};

// The model, its CSV, and all K shards of the rows held by this one process.
struct OneProcess {
    ir::Graph g = compile_model(kModel, "m.vbn");
    TempCsv csv{csv_text()};
    std::vector<Dataset> data;
    distributed::LocalShards local;
    distributed::SingleProcess comm;
    explicit OneProcess(int shards)
        : data(load_csv_shards(g, csv.path, shards, 0, shards)), local(g, data, {shards, 1, 0}, 12) {}
    std::shared_ptr<distributed::ShardedLikelihood> remote() {
        return std::make_shared<distributed::ShardedLikelihood>(local, comm.copies(1));
    }
    // Shard 0's target, its data terms taken from every shard.
    std::unique_ptr<Target> front() {
        std::unique_ptr<Target> t = make_target(g, data.front());
        t->set_remote(remote());
        return t;
    }
};

TEST_CASE("load_csv_shards deals data row i into shard i mod K and keeps only the shards asked for") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    const TempCsv csv(csv_text());
    const std::vector<Dataset> all = load_csv_shards(g, csv.path, 4, 0, 4);
    REQUIRE(all.size() == 4);
    long rows = 0;
    for (int k = 0; k < 4; ++k) {
        rows += all[k].rows;
        CHECK(all[k].rows == (k < 3 ? 6 : 5));  // 23 = 6 + 6 + 6 + 5
        // Each pattern's first line is a line of this shard's rows: line = row + 2.
        for (long line : all[k].first_line) CHECK((line - 2) % 4 == k);
    }
    CHECK(rows == 23);
    const std::vector<Dataset> middle = load_csv_shards(g, csv.path, 4, 1, 3);
    REQUIRE(middle.size() == 2);
    CHECK(middle[0].first_line == all[1].first_line);
    CHECK(middle[1].first_line == all[2].first_line);
    try {
        load_csv_shards(g, csv.path, 24, 0, 24);
        FAIL("24 shards of 23 rows were accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::data);
        CHECK(std::string(e.what()).find("23 data rows cannot be dealt into 24 shards") != std::string::npos);
    }
}

TEST_CASE("a column coded 1/0 in one shard's rows and 1/-1 in another's fails on every rank, as unsharded") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    std::string text = csv_text();
    const std::size_t row1 = text.find('\n', text.find('\n') + 1) + 1;  // data row 1 (shard 1 of 2), line 3
    text.replace(row1, 1, "-1");  // column a; shard 0's rows hold its 0s
    const TempCsv csv(text);
    std::string whole;
    try {
        load_csv(g, csv.path);
    } catch (const Error& e) {
        whole = e.what();
    }
    REQUIRE(whole.find("mixes the 1/0 and 1/-1 codings") != std::string::npos);
    for (const int first : {0, 1}) {
        CAPTURE(first);
        try {
            load_csv_shards(g, csv.path, 2, first, first + 1);
            FAIL("the mixed codings were accepted");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::data);
            CHECK(std::string(e.what()) == whole);
        }
    }
}

TEST_CASE("a bad value in a kept shard is reported with its line; in a shard not kept it is not read") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    std::string text = csv_text();
    const std::size_t row1 = text.find('\n', text.find('\n') + 1) + 1;  // data row 1, line 3
    text.replace(row1, 1, "x");
    const TempCsv csv(text);
    try {
        load_csv_shards(g, csv.path, 2, 1, 2);
        FAIL("a bad value was accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::data);
        CHECK(std::string(e.what()).find(":3:1:") != std::string::npos);
    }
    CHECK(load_csv_shards(g, csv.path, 2, 0, 1).front().rows == 12);
}

TEST_CASE("the shards' terms after the prior equal the log density of the target of all the rows") {
    for (int shards : {1, 3, 5}) {
        CAPTURE(shards);
        OneProcess p(shards);
        const ir::Graph& g = p.g;
        const std::unique_ptr<Target> whole = make_target(g, load_csv(g, p.csv.path));
        const std::unique_ptr<Target> front = p.front();
        for (double scale : {0.0, 0.7, 2.5}) {
            Eigen::VectorXd theta(g.dim);
            for (int k = 0; k < g.dim; ++k) theta[k] = scale * std::sin(1.0 + 3.0 * k);
            Eigen::VectorXd gw(g.dim), gs(g.dim);
            const double lw = whole->log_density_gradient(theta, gw);
            const double ls = front->log_density_gradient(theta, gs);
            CHECK(ls == doctest::Approx(lw).epsilon(1e-12));
            CHECK(front->log_density(theta) == ls);  // value alone: the same bits
            for (int k = 0; k < g.dim; ++k) CHECK(gs[k] == doctest::Approx(gw[k]).epsilon(1e-10).scale(1.0));
            Eigen::MatrixXd two(g.dim, 2);
            two << theta, 0.5 * theta;
            Eigen::VectorXd out(2);
            auto ws = front->make_workspace();
            // A batch goes to the shards at once, each evaluating it by its own batched path:
            // log_density to rounding, as Target::log_densities promises.
            front->log_densities(two, out, ws);
            CHECK(out[0] == doctest::Approx(ls).epsilon(1e-12));
            CHECK(out[1] == doctest::Approx(front->log_density(two.col(1))).epsilon(1e-12));
            Eigen::VectorXd lik(2);
            auto wws = whole->make_workspace();
            whole->log_likelihoods(two, lik, wws);
            CHECK(lik[0] == doctest::Approx(whole->log_likelihood(theta, wws)).epsilon(1e-12));
            CHECK(lik[1] == doctest::Approx(whole->log_likelihood(two.col(1), wws)).epsilon(1e-12));
        }
    }
}

TEST_CASE("a rank's shards evaluated on several threads give the same bits as on one") {
    OneProcess p(5);
    const ir::Graph& g = p.g;
    distributed::LocalShards& one = p.local;
    distributed::LocalShards three(g, p.data, {5, 1, 0}, 12, 3);
    Eigen::VectorXd theta(g.dim), a, b;
    for (int k = 0; k < g.dim; ++k) theta[k] = 0.3 * k - 1.0;
    for (bool gradient : {false, true}) {
        a.resize(5 * (gradient ? 1 + g.dim : 1));
        b.resize(a.size());
        one.evaluate(theta, gradient, a);
        three.evaluate(theta, gradient, b);
        CHECK(a == b);
        const int stride = gradient ? 1 + g.dim : 1;
        for (int k = 0; k < 5; ++k) CHECK(a[k * stride] < 0);  // every shard's log-likelihood written
    }
}

TEST_CASE("a target whose rows are remote refuses the evaluations that read rows, and nothing is separable") {
    OneProcess p(2);
    const std::unique_ptr<Target> front = p.front();
    const Eigen::VectorXd theta = Eigen::VectorXd::Zero(p.g.dim);
    auto ws = front->make_workspace();
    for (int b = 0; b < front->blocks(); ++b) {
        CHECK_FALSE(front->block_separable(b));
        CHECK_FALSE(front->complete_block(b));
        CHECK(front->block_batch(b) == 1);
        CHECK_THROWS_WITH_AS(front->block_log_density(b, theta, ws), doctest::Contains("sharded"), Error);
    }
    CHECK_THROWS_WITH_AS(front->log_likelihood(theta, ws), doctest::Contains("sharded"), Error);
}

TEST_CASE("after stop() the remote likelihood evaluates nothing") {
    OneProcess p(2);
    const auto remote = p.remote();
    const Eigen::VectorXd theta = Eigen::VectorXd::Zero(p.g.dim);
    CHECK(std::isfinite(remote->value(theta, nullptr)));
    remote->stop();
    CHECK_THROWS_WITH_AS(remote->value(theta, nullptr), doctest::Contains("stop"), Error);
}

TEST_CASE("more ranks than shards is refused before anything is read") {
    CHECK_THROWS_WITH_AS(distributed::check_plan({2, 3, 0}), doctest::Contains("--shards 3"), Error);
    CHECK_THROWS_WITH_AS(distributed::check_plan({0, 1, 0}), doctest::Contains("at least 1"), Error);
    int held = 0;
    for (int r = 0; r < 4; ++r) {
        const distributed::ShardPlan q{10, 4, r};
        CHECK(q.first() == held);
        held = q.last();
    }
    CHECK(held == 10);
}

TEST_CASE("fit over shards: auto chooses NUTS and says why; other methods are refused; the draws are the shards'") {
    const ir::Graph g = compile_model(kModel, "m.vbn");
    const TempCsv csv(csv_text());
    services::ShardedData s = services::load_sharded(g, csv.path, {3, 12, 2, 2}, nullptr);
    REQUIRE(s.rank0());
    FitOptions o = test::short_run("auto", 2, 100, 100, 5);
    o.threads = 1;
    o.sharded = s.remote;
    o.shards = 3;
    CHECK_THROWS_WITH_AS(fit(g, s.shard0, o), doctest::Contains("variational fit over the shards"), Error);
    o.sharded_variational = services::variational_over(s, g);
    const FitResult r = fit(g, s.shard0, o);
    CHECK(r.method == "nuts");
    bool said = false;
    for (const auto& n : r.notes) said = said || n.find("sharded (--shards)") != std::string::npos;
    CHECK(said);
    // Every draw's lp__ is the log density over all the rows, not over shard 0's.
    const std::unique_ptr<Target> whole = make_target(g, load_csv(g, csv.path));
    const auto& c = r.chains.front();
    REQUIRE(c.ok());
    for (int d = 0; d < 5; ++d)
        CHECK(c.lp[d] == doctest::Approx(whole->log_density(Eigen::VectorXd(c.draws.row(d).transpose()))).epsilon(1e-12));
    o.method = "varblock";
    CHECK_THROWS_WITH_AS(fit(g, s.shard0, o), doctest::Contains("use --method nuts"), Error);
}

// The variational EM over every row, run() with SQUAREM off, and over K shards, after the same
// number of iterations: the same iteration, so the same fit but for rounding (the rows' sums
// are added per shard, then over the shards).
TEST_CASE("the variational fit over shards is the fit to all the rows, restart 0, up to rounding") {
    for (const int shards : {1, 3, 5}) {
        CAPTURE(shards);
        OneProcess one(shards);
        const std::unique_ptr<Target> whole = make_target(one.g, load_csv(one.g, one.csv.path));
        VbOptions o;
        o.restarts = 1;
        o.tolerance = 0;  // exactly max_iterations iterations each
        o.max_iterations = 40;
        o.accelerate = false;
        const VbFit a = variational(one.g, whole->families(), o).best_fit();
        const VbFit b = variational(one.g, ShardedFamilies{one.local.families(), 0, shards, &one.comm}, o).best_fit();
        CHECK(b.iterations == 40);
        CHECK(b.elbo == doctest::Approx(a.elbo).epsilon(1e-12));
        REQUIRE(a.elbo_trace.size() == b.elbo_trace.size());
        for (std::size_t i = 0; i < a.elbo_trace.size(); ++i)
            CHECK(b.elbo_trace[i] == doctest::Approx(a.elbo_trace[i]).epsilon(1e-12));
        CHECK((a.mean - b.mean).cwiseAbs().maxCoeff() < 1e-10);
        REQUIRE(a.covs.size() == b.covs.size());
        for (std::size_t k = 0; k < a.covs.size(); ++k) CHECK((a.covs[k] - b.covs[k]).cwiseAbs().maxCoeff() < 1e-10);
    }
}

// With SQUAREM (fully observed models): a Student-t prior (its q(λ) per weight) and a learned
// prior scale (q(τ)), over 3 shards against the whole rows: the same iterations, the same
// steps undone, the same fit to rounding.
TEST_CASE("the variational fit over shards takes SQUAREM's steps as the fit to all the rows does") {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/";
    for (const char* name : {"cauchy/cauchy_logit", "multilevel/items", "wells/wells"}) {
        CAPTURE(name);
        const ir::Graph g = load_model(dir + name + ".vbn");
        const std::string csv = dir + name + ".csv";
        const std::unique_ptr<Target> whole = make_target(g, load_csv(g, csv));
        const std::vector<Dataset> data = load_csv_shards(g, csv, 3, 0, 3);
        const distributed::LocalShards local(g, data, {3, 1, 0}, 12);
        distributed::SingleProcess comm;
        const VbFit a = variational(g, whole->families()).best_fit();
        const VbFit b = variational(g, ShardedFamilies{local.families(), 0, 3, &comm}).best_fit();
        CHECK(a.converged);
        CHECK(b.iterations == a.iterations);
        CHECK(b.steps_undone == a.steps_undone);
        REQUIRE(a.elbo_trace.size() == b.elbo_trace.size());
        for (std::size_t i = 0; i < a.elbo_trace.size(); ++i)
            CHECK(b.elbo_trace[i] == doctest::Approx(a.elbo_trace[i]).epsilon(1e-10));
        CHECK((a.mean - b.mean).cwiseAbs().maxCoeff() < 1e-8);
    }
}

// test_vb.cpp's data whose SQUAREM steps are often taken back (67 of them): over 3 shards the
// steps are taken back too, the bound never decreases, and the fit is the whole rows' fit.
TEST_CASE("the variational fit over shards takes back SQUAREM's steps that lower a block's bound") {
    const ir::Graph g = compile_model("covariate x0;\ncovariate x1;\nnode y ~ logistic(b + w0 * x0 + w1 * x1);\n"
                                      "b, w0, w1 ~ normal(0, 100);\n",
                                      "undone.vbn");
    // test_vb.cpp's rows (x0, x1, y), y coded 1/0.
    const TempCsv csv("x0,x1,y\n1,-19.863,0\n1,0.42284,1\n1,0.59946,1\n1,-6.3186,0\n-1,-1.4008,0\n"
                      "-1,-0.46814,0\n-1,-0.1965,0\n1,-0.13323,0\n1,-20.213,0\n-1,-1.1662,0\n1,1.0952,1\n"
                      "1,-1.2447,0\n1,-8.188,0\n1,-8.0977,0\n-1,0.17979,1\n1,-0.39405,0\n-1,-0.029823,1\n"
                      "-1,-4.9082,0\n1,-1.0758,0\n1,-2.394,0\n");
    const std::vector<Dataset> data = load_csv_shards(g, csv.path, 3, 0, 3);
    const distributed::LocalShards local(g, data, {3, 1, 0}, 12);
    distributed::SingleProcess comm;
    const VbOptions o{.tolerance = 1e-14, .max_iterations = 100000};
    const VbFit a = variational(g, load_csv(g, csv.path), o).best_fit();
    const VbFit b = variational(g, ShardedFamilies{local.families(), 0, 3, &comm}, o).best_fit();
    INFO("iterations " << a.iterations << " and " << b.iterations << ", undone " << a.steps_undone << " and "
                       << b.steps_undone);
    CHECK(b.steps_undone > 10);
    CHECK(b.converged);
    double worst = 0;  // the largest decrease of the bound, relative
    for (std::size_t i = 1; i < b.elbo_trace.size(); ++i)
        worst = std::max(worst, (b.elbo_trace[i - 1] - b.elbo_trace[i]) / std::abs(b.elbo_trace[i - 1]));
    CHECK(worst <= 1e-12);
    CHECK(b.elbo == doctest::Approx(a.elbo).epsilon(1e-10));
    // EM creeps here (the data almost separate), so where the two runs stop along the flat
    // direction depends on rounding (an ASan build stopped 39 iterations apart, 2e-4 sd): the
    // bar is test_vb's for SQUAREM against plain EM on these data, 0.01 sd.
    CHECK(((a.mean - b.mean).cwiseAbs().array() / a.variances().array().sqrt()).maxCoeff() < 0.01);
}

TEST_CASE("the variational fit over shards keeps its restarts apart and finds the same optimum as the whole rows") {
    OneProcess one(3);
    const std::unique_ptr<Target> whole = make_target(one.g, load_csv(one.g, one.csv.path));
    VbOptions o;
    o.restarts = 4;
    const VbResult a = variational(one.g, whole->families(), o);
    const VbResult b = variational(one.g, ShardedFamilies{one.local.families(), 0, 3, &one.comm}, o);
    REQUIRE(b.fits.size() == 4);
    // Random starts differ from restart 0's (the model has a hidden node, so restarts matter).
    CHECK(b.fits[1].elbo_trace.front() != b.fits[0].elbo_trace.front());
    // Both converge (tolerance 1e-9 of the bound) to an optimum within that of each other.
    CHECK(b.best_fit().elbo == doctest::Approx(a.best_fit().elbo).epsilon(1e-6));
}

TEST_CASE("the variational fit over shards stops on rank 0's cancel, keeping the restarts finished") {
    OneProcess one(2);
    const ShardedFamilies rows{one.local.families(), 0, 2, &one.comm};
    std::atomic<bool> cancel{true};
    VbOptions o;
    o.restarts = 3;
    o.cancel = &cancel;
    CHECK_THROWS_WITH_AS(variational(one.g, rows, o), doctest::Contains("cancelled"), Error);
    cancel = false;
    o.keep_finished_on_cancel = true;
    o.on_restart = [&](int k) { cancel = k == 0; };
    const VbResult r = variational(one.g, rows, o);
    CHECK(r.interrupted);
    CHECK(r.fits.size() == 1);
    CHECK_THROWS_WITH_AS(variational(one.g, ShardedFamilies{one.local.families(), 1, 2, &one.comm}, o),
                         doctest::Contains("shards within 0 … 1"), Error);
}

}  // namespace test_sharded
