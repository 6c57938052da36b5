// The services layer (runtime/services): what the command line and the embedding API both rely
// on — draws handed out in output order, counts taken as they pass, messages through the
// callbacks, CmdStan CSV files that read back to the same summary, interruption.
#include "runtime/services/evidence.hpp"
#include "runtime/services/extension.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/services/predict.hpp"
#include "runtime/services/simulate.hpp"
#include "runtime/services/variational.hpp"

#include "fit_options.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/target/target.hpp"
#include "validation/grid_posterior.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

using namespace vbn;

// A matrix parameter, so that output order (column-major, as CmdStan writes W) differs from
// the graph's layout (one block per node), and two hidden causes.
const char* sbn_model = R"(
node h[2] hidden ~ bernoulli(0.5);
node v[3] ~ logistic(b + W * h);
b ~ normal(0, 1);
W ~ normal(0, 1);
)";

Dataset sbn_data(const ir::Graph& g) {
    std::istringstream csv("v[1],v[2],v[3]\n1,1,-1\n-1,1,1\n1,-1,-1\n1,1,1\n-1,-1,1\n1,,1\n-1,1,\n1,1,1\n");
    return load_csv(g, csv, "rows.csv", nullptr, true);  // rows kept: predict reports by row
}

FitOptions small(const std::string& method) {
    FitOptions o = test::short_run(method, 2, 100, 120, 5);
    o.threads = 2;
    return o;
}

}  // namespace

TEST_CASE("services::fit hands out each draw in output order, the same as the kept draws") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    const std::vector<int> order = output_order(g);
    bool reordered = false;
    for (std::size_t j = 0; j < order.size(); ++j) reordered = reordered || order[j] != static_cast<int>(j);
    REQUIRE(reordered);  // else the test could not tell the two layouts apart

    for (const std::string method : {"nuts", "varblock"}) {
        CAPTURE(method);
        std::mutex m;
        std::map<int, std::vector<Eigen::VectorXd>> seen;
        std::map<int, long> divergent;
        std::vector<std::string> notes;
        services::Callbacks cb;
        cb.on_draw = [&](int chain, int draw, const Eigen::VectorXd& x, double, const inference::TransitionInfo& info) {
            const std::lock_guard lock(m);
            CHECK(draw == static_cast<int>(seen[chain].size()));
            seen[chain].push_back(x);
            divergent[chain] += info.divergent ? 1 : 0;
        };
        cb.log = [&](services::LogLevel level, const std::string& message) {
            if (level == services::LogLevel::note) notes.push_back(message);
        };
        // Kept draws are relabelled after sampling, streamed ones are as drawn (test_relabel.cpp
        // relates the two); here both are as drawn.
        FitOptions o = small(method);
        o.relabel = "none";
        const services::FitRun run = services::fit(g, d, o, cb);
        CHECK_FALSE(run.interrupted);
        CHECK(services::has_draws(run));
        REQUIRE(run.result.chains.size() == 2);
        for (const auto& ch : run.result.chains) {
            const Eigen::MatrixXd kept = services::output_draws(run.result, ch);
            const auto& streamed = seen[ch.chain];
            REQUIRE(static_cast<Eigen::Index>(streamed.size()) == kept.rows());
            for (Eigen::Index i = 0; i < kept.rows(); ++i) CHECK(streamed[static_cast<std::size_t>(i)] == kept.row(i).transpose());
            CHECK(run.counts[static_cast<std::size_t>(ch.chain)].divergent == divergent[ch.chain]);
        }
        // The run's notes reach the callback, not a stream.
        CHECK(notes == run.result.notes);
    }
}

TEST_CASE("services::fit: auto says what it chose before the first draw, once") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    std::mutex m;
    std::vector<std::string> events;  // notes, and "draw" for the first draw of any chain
    services::Callbacks cb;
    cb.on_draw = [&](int, int, const Eigen::VectorXd&, double, const inference::TransitionInfo&) {
        const std::lock_guard lock(m);
        if (std::find(events.begin(), events.end(), "draw") == events.end()) events.push_back("draw");
    };
    cb.log = [&](services::LogLevel level, const std::string& message) {
        const std::lock_guard lock(m);
        if (level == services::LogLevel::note) events.push_back(message);
    };
    const services::FitRun run = services::fit(g, d, small("auto"), cb);
    const auto chose = std::find_if(events.begin(), events.end(),
                                    [](const std::string& e) { return e.rfind("method auto chose ", 0) == 0; });
    REQUIRE(chose != events.end());
    CHECK(chose < std::find(events.begin(), events.end(), "draw"));
    CHECK(std::count(events.begin(), events.end(), *chose) == 1);
    CHECK(static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [](const std::string& e) {
              return e != "draw";
          })) == run.result.notes.size());
}

TEST_CASE("services: draws streamed to CmdStan CSV files give the summary of the kept draws") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    const auto dir = std::filesystem::temp_directory_path() / ("vbn-test-services-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);

    const services::FitRun kept_run = services::fit(g, d, small("varblock"), {});
    const FitSummary kept = services::summarize(kept_run, "sbn", false, {});

    FitOptions o = small("varblock");
    o.keep_draws = false;
    services::CsvDrawFiles files((dir / "fit.csv").string(), "sbn", "rows.csv", g, o);
    services::Callbacks cb;
    cb.on_draw = [&](int c, int k, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
        files.draw(c, k, x, lp, info);
    };
    services::FitRun run = services::fit(g, d, o, cb, [&](const services::FitStart& s) { files.start(s); });
    files.finish(run.result);
    files.relabel(run, 64e6);  // as the kept draws were; the files held once parsed
    CHECK(run.relabel.rule == "pivot");
    CHECK(files.files() == 2);
    CHECK(run.result.chains[0].draws.rows() == 0);  // nothing held
    for (const double budget : {64e6, 1.0}) {       // whole, and one column at a time
        const FitSummary streamed = services::summarize(
            run, "sbn", false, {}, [&](std::size_t c, Eigen::Index first, Eigen::Index n) { return files.read_back(c, first, n); },
            budget);
        REQUIRE(streamed.rows.size() == kept.rows.size());
        for (std::size_t i = 0; i < kept.rows.size(); ++i) {
            CHECK(streamed.rows[i].name == kept.rows[i].name);
            CHECK(streamed.rows[i].mean == kept.rows[i].mean);  // the same doubles: CSV keeps every digit
            CHECK(streamed.rows[i].ess_bulk == kept.rows[i].ess_bulk);
        }
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("extended_draws: enough for 1.2 times the ESS wanted at the rate seen, in hundreds, within the cap") {
    services::DrawCheck c;
    c.draws = 1000;
    c.min_ess = 343;
    CHECK(services::extended_draws(c, 400, 4000) == 1400);  // 1000 × 1.2 × 400 / 343 = 1399.4
    c.min_ess = 390;
    CHECK(services::extended_draws(c, 400, 4000) == 1300);  // at least 1.25 × 1000
    c.min_ess = 100;
    CHECK(services::extended_draws(c, 400, 4000) == 4000);  // 4800 capped
    c.min_ess = 500;                                        // only R-hat short: twice the draws
    CHECK(services::extended_draws(c, 400, 4000) == 2000);
}

TEST_CASE("services::fit runs the chains on while the ESS is short: the longer run, said and written as such") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    const auto dir = std::filesystem::temp_directory_path() / ("vbn-test-extend-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    // 2 chains of 60 draws cannot give the 200 ESS wanted (100 per chain).
    FitOptions o = test::short_run("nuts", 2, 150, 60, 9);
    o.max_draws = 2000;
    o.keep_draws = false;
    services::CsvDrawFiles files((dir / "fit.csv").string(), "sbn", "rows.csv", g, o);
    std::vector<std::string> notes;
    services::Callbacks cb;
    cb.on_draw = [&](int c, int k, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
        files.draw(c, k, x, lp, info);
    };
    cb.log = [&](services::LogLevel, const std::string& m) { notes.push_back(m); };
    services::FitRun run = services::fit(g, d, o, cb, [&](const services::FitStart& s) { files.start(s); });
    files.finish(run.result);
    files.relabel(run, 0);  // nothing held: read back from the files
    REQUIRE(run.draws > 60);
    CHECK(run.draws <= 2000);
    for (const auto& ch : run.result.chains) CHECK(ch.iterations_done == run.draws);
    const auto said = std::find_if(notes.begin(), notes.end(), [](const std::string& n) { return n.starts_with("extending the chains from 60 to "); });
    CHECK(said != notes.end());
    // The files hold, and announce, every draw.
    for (int c = 1; c <= 2; ++c) {
        const StanCsv f = read_stan_csv(chain_file_path((dir / "fit.csv").string(), c));
        CHECK(f.draws.rows() == run.draws);
        CHECK(f.config_value("num_samples") == std::to_string(run.draws));
    }
    // The chains stopped short of max_draws, so the check passed: the summary, which relabels
    // and diagnoses the same draws, warns of neither ESS nor R-hat. (The run is fixed by its
    // seed; were it to reach max_draws, this would say so rather than check nothing.)
    const FitSummary s = services::summarize(
        run, "sbn", false, {}, [&](std::size_t c, Eigen::Index first, Eigen::Index n) { return files.read_back(c, first, n); }, 64e6);
    REQUIRE(run.draws < 2000);
    for (const SummaryRow& r : s.rows) {
        CAPTURE(r.name);
        CHECK(std::min(r.ess_bulk, r.ess_tail) >= 200);
        CHECK(r.rhat <= 1.01);
    }
    // The same seed and that many draws from the start: the same draws.
    FitOptions exact = test::short_run("nuts", 2, 150, run.draws, 9);
    const services::FitRun straight = services::fit(g, d, exact, {});
    const Eigen::MatrixXd first = read_stan_csv(chain_file_path((dir / "fit.csv").string(), 1)).draws;
    CHECK(first.isApprox(services::output_draws(straight.result, straight.result.chains[0]), 1e-14));
    // max_draws at most draws: exactly draws.
    o.max_draws = 0;
    o.keep_draws = true;
    CHECK(services::fit(g, d, o, {}).result.chains[0].draws_done == 60);
    std::filesystem::remove_all(dir);
}

TEST_CASE("services::fit starts from a variational fit handed in, as from its own, without fitting again") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    FitOptions o = small("nuts");
    o.vb.restarts = 3;
    const services::FitRun own = services::fit(g, d, o, {});
    // The same fit, made beforehand; then a fit that is not the chains' own (other restarts):
    // the chains start from whichever they are handed.
    for (const int restarts : {3, 1}) {
        CAPTURE(restarts);
        VbOptions vo = o.vb;
        vo.restarts = restarts;
        FitOptions handed = o;
        handed.variational = std::make_shared<const VbResult>(variational(g, d, vo));
        const services::FitRun run = services::fit(g, d, handed, {});
        CHECK(run.result.vb.fits.size() == static_cast<std::size_t>(restarts));
        CHECK(run.result.vb.best_fit().mean == handed.variational->best_fit().mean);
        if (restarts == 3) {
            CHECK(run.result.vb.best_fit().mean == own.result.vb.best_fit().mean);
            CHECK(run.result.chains[0].draws == own.result.chains[0].draws);
        }
    }
}

TEST_CASE("services::fit: an interrupt before the chains stops the variational fit as cancelled") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    std::atomic<bool> stop{true};
    services::Callbacks cb;
    cb.interrupt = &stop;
    try {
        services::fit(g, d, small("nuts"), cb);
        FAIL("an interrupted fit returned");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::cancelled);
    }
}

namespace {

// A streamed fit (CmdStan CSV files under dir) whose interrupt flag is raised by `stop_when`,
// called with each draw as it is made: a deterministic interruption.
struct StreamedRun {
    services::FitRun run;
    std::vector<std::string> files;
};
StreamedRun interrupted_fit(const ir::Graph& g, const Dataset& d, const FitOptions& o, const std::filesystem::path& dir,
                            const std::function<bool(int chain, int draw)>& stop_when) {
    std::atomic<bool> stop{false};
    services::CsvDrawFiles files((dir / "int.csv").string(), "sbn", "rows.csv", g, o);
    services::Callbacks cb;
    cb.interrupt = &stop;
    cb.on_draw = [&](int c, int k, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
        files.draw(c, k, x, lp, info);
        if (stop_when(c, k)) stop = true;
    };
    StreamedRun r{services::fit(g, d, o, cb, [&](const services::FitStart& s) { files.start(s); }), {}};
    files.finish(r.run.result);
    for (int c = 1; c <= o.chains; ++c) r.files.push_back(chain_file_path(files.output(), c));
    return r;
}

FitSummary read_back_summary(const StreamedRun& r) {
    return services::summarize(r.run, "sbn", false, {}, [&](std::size_t c, Eigen::Index first, Eigen::Index n) {
        return read_stan_csv(r.files[c], ParameterRange{static_cast<std::size_t>(first), static_cast<std::size_t>(n)}).draws;
    }, 64e6);
}

}  // namespace

TEST_CASE("services::fit interrupted after 30 draws of chain 1: valid files, the summary over chains cut to the shortest") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    const auto dir = std::filesystem::temp_directory_path() / ("vbn-test-interrupt-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    // 4 chains on 2 threads: chains 3 and 4 wait for a thread and never start; 3 chains on
    // 1 thread: chains 2 and 3 never start, so the whole outcome is fixed.
    for (const auto& [chains, threads] : {std::pair{4, 2}, std::pair{3, 1}}) {
        CAPTURE(chains);
        FitOptions o = test::short_run("varblock", chains, 50, 100000, 11);
        o.threads = threads;
        o.keep_draws = false;
        const StreamedRun r = interrupted_fit(g, d, o, dir, [](int c, int k) { return c == 0 && k == 29; });
        CHECK(r.run.interrupted);
        REQUIRE(r.run.result.chains.size() == static_cast<std::size_t>(chains));
        CHECK(r.run.result.chains[0].draws_done == 30);  // the draw that raised the flag is the last
        std::vector<long> made;
        std::vector<std::string> labels, used;
        for (int c = 0; c < chains; ++c) {
            const auto& ch = r.run.result.chains[static_cast<std::size_t>(c)];
            const StanCsv csv = read_stan_csv(r.files[static_cast<std::size_t>(c)]);  // every file valid, even without draws
            CHECK(csv.draws.rows() == ch.draws_done);
            CHECK(csv.warmup_seconds.has_value());  // the timing block closes every file
            made.push_back(ch.draws_done);
            labels.push_back(fmt::format("chain {}", c + 1));
        }
        if (threads == 1) CHECK(made == std::vector<long>{30, 0, 0});
        CHECK(made.back() == 0);  // the last chain never started
        long shortest = 30;
        int with_draws = 0;
        for (long n : made) {
            if (n > 0) shortest = std::min(shortest, n);
            with_draws += n > 0 ? 1 : 0;
        }

        const FitSummary fs = read_back_summary(r);
        CHECK(fs.facts.chains == with_draws);
        CHECK(fs.facts.draws == shortest);
        CHECK(fs.truncation == truncation_note(labels, made));
        CHECK(fs.truncation.find(fmt::format("chain {}: 0", chains)) != std::string::npos);
        CHECK(fs.truncation.find("have no draws and are left out") != std::string::npos);
        if (threads == 1)
            CHECK(fs.truncation == "chains of unequal length (draws per chain: chain 1: 30, chain 2: 0, chain 3: 0): the "
                                   "summary uses chain 1 alone, 30 draws; chain 2, chain 3 have no draws and are left out");

        // vbn summary's reading of the same files: the same chains, draws and rows.
        const FilesSummary files = summarize_files(r.files);
        CHECK(files.facts.chains == with_draws);
        CHECK(files.facts.draws == shortest);
        CHECK(files.truncation.find("have no draws and are left out") != std::string::npos);
        REQUIRE(files.rows.size() == fs.rows.size());
        for (std::size_t i = 0; i < fs.rows.size(); ++i) CHECK(files.rows[i].mean == fs.rows[i].mean);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("services::fit interrupted during warmup: every file valid and empty, no draws to summarise") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    const auto dir = std::filesystem::temp_directory_path() / ("vbn-test-warmup-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    FitOptions o = test::short_run("varblock", 2, 100000, 10, 11);
    o.threads = 1;
    o.keep_draws = false;
    // The flag is raised from the progress callback at chain 1's 20th warmup iteration.
    std::atomic<bool> stop{false};
    services::CsvDrawFiles files((dir / "w.csv").string(), "sbn", "rows.csv", g, o);
    services::Callbacks cb;
    cb.interrupt = &stop;
    cb.progress_interval = 0;
    cb.progress = [&](const inference::ChainProgress& p) {
        if (p.chain == 0 && p.warmup && p.iteration == 20) stop = true;
    };
    cb.on_draw = [&](int c, int k, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
        files.draw(c, k, x, lp, info);
    };
    const services::FitRun run = services::fit(g, d, o, cb, [&](const services::FitStart& s) { files.start(s); });
    files.finish(run.result);
    CHECK(run.interrupted);
    CHECK_FALSE(services::has_draws(run));
    CHECK(run.result.chains[0].warmup_done == 20);
    std::vector<std::string> paths;
    for (int c = 1; c <= 2; ++c) {
        paths.push_back(chain_file_path(files.output(), c));
        CHECK(read_stan_csv(paths.back()).draws.rows() == 0);
    }
    CHECK_THROWS_WITH(services::summarize(run, "sbn", false, {}, [&](std::size_t, Eigen::Index, Eigen::Index) {
        return Eigen::MatrixXd();
    }, 64e6), doctest::Contains("no chain kept a draw"));
    CHECK_THROWS_WITH(summarize_files(paths), doctest::Contains("none of the 2 files holds a draw"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("services::variational interrupted after 2 of 6 restarts returns the best of those, uncorrected") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    services::VariationalSettings s;
    // One thread: the restarts one after another, so that on_restart comes between them (side
    // by side it comes after each wave of them).
    s.correction.threads = 1;
    s.vb.restarts = 2;
    const services::VariationalRun two = services::variational(g, d, s, {});
    REQUIRE(two.result.fits.size() == 2);
    CHECK_FALSE(two.result.interrupted);

    std::atomic<bool> stop{false};
    services::Callbacks cb;
    cb.interrupt = &stop;
    s.vb.restarts = 6;
    s.vb.on_restart = [&](int k) {
        if (k == 1) stop = true;
    };
    const services::VariationalRun run = services::variational(g, d, s, cb);
    CHECK(run.result.interrupted);
    REQUIRE(run.result.fits.size() == 2);
    CHECK_FALSE(run.corrected.has_value());
    CHECK(run.result.best == two.result.best);
    CHECK(run.result.best_fit().elbo == two.result.best_fit().elbo);
    CHECK(run.result.best_fit().mean == two.result.best_fit().mean);

    // Before the first restart finished there is nothing to return.
    stop = true;
    s.vb.on_restart = nullptr;
    try {
        services::variational(g, d, s, cb);
        FAIL("a variational run interrupted before any restart returned");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::cancelled);
    }
}

TEST_CASE("services::variational runs the restarts side by side on the correction's threads, with the same answer") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    services::VariationalSettings s;
    s.vb.restarts = 4;
    s.correction.draws = 500;
    s.correction.ess = 0;
    s.correction.threads = 1;
    const services::VariationalRun one = services::variational(g, d, s);
    s.correction.threads = 2;
    const services::VariationalRun two = services::variational(g, d, s);
    REQUIRE(one.result.fits.size() == 4);
    REQUIRE(two.result.fits.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
        CHECK(one.result.fits[k].elbo == two.result.fits[k].elbo);
        CHECK(one.result.fits[k].mean == two.result.fits[k].mean);
    }
    CHECK(one.result.best == two.result.best);
    REQUIRE(one.corrected.has_value());
    REQUIRE(two.corrected.has_value());
    CHECK(one.corrected->mean == two.corrected->mean);

    // Side by side, on_restart is told after the wave (here all 4 restarts) has run: an
    // interrupt it raises after restart 1 stops nothing (one after another, the test above, it
    // keeps 2 of 6).
    std::atomic<bool> stop{false};
    services::Callbacks cb;
    cb.interrupt = &stop;
    s.correct = false;
    s.vb.on_restart = [&](int k) {
        if (k == 1) stop = true;
    };
    const services::VariationalRun late = services::variational(g, d, s, cb);
    CHECK_FALSE(late.result.interrupted);
    CHECK(late.result.fits.size() == 4);
}

TEST_CASE("services: variational, evidence, predict and simulate agree with each other") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    services::VariationalSettings vs;
    vs.correction.draws = 2000;
    const services::VariationalRun v = services::variational(g, d, vs);
    REQUIRE(v.corrected.has_value());
    services::EvidenceSettings es;
    es.evidence.draws = 2000;
    const services::EvidenceRun e = services::evidence(g, d, es);
    // The same fit, draws and seed: the numbers `vbn vb` prints are those `vbn compare` uses.
    CHECK(e.elbo == v.result.best_fit().elbo);
    CHECK(e.evidence.log_evidence == v.corrected->log_evidence);

    services::PredictSettings ps;
    ps.target = "v[2]";
    ps.vb_draws = 500;
    const services::PredictRun p = services::predict(g, d, services::variational_draws(g, d, ps), ps);
    CHECK(p.draws == 500);
    CHECK(p.predictions.size() == static_cast<std::size_t>(d.rows));
    CHECK(p.scores.scored == d.rows - 1);  // one row has v[2] missing
    CHECK_THROWS_WITH(services::target_element(g, "w"), doctest::Contains("has no node of that name"));
    // An array's bare name lists its elements; a near miss gets the closest node.
    CHECK_THROWS_WITH(services::target_element(g, "v"), doctest::Contains("v is an array of 3 nodes; give one element, from v[1] to v[3]"));
    CHECK_THROWS_WITH(services::target_element(g, "v[2"), doctest::Contains("did you mean v[2]?"));

    services::SimulateSettings ss;
    ss.rows = 5;
    ss.params = nlohmann::json::parse(R"({"b": [1, 2, 3]})");
    std::vector<std::string> notes;
    services::Callbacks cb;
    cb.log = [&](services::LogLevel, const std::string& m) { notes.push_back(m); };
    std::ostringstream csv;
    const Eigen::VectorXd theta = services::simulate(g, ss, csv, cb);
    const std::string text = csv.str();
    CHECK(std::count(text.begin(), text.end(), '\n') == 6);  // header and five rows
    REQUIRE(notes.size() == 1);
    CHECK(notes[0] == "parameters not in the given values were drawn from their priors");
    CHECK(theta.size() == g.dim);
}

// The cauchy_logit corpus model (a long-tailed slope: sd 5.6 about 13.4) with a proposal far
// too narrow (k-hat well above 0.7) and a tempering budget it cannot finish in: neither answer
// can be trusted, so the correction samples the exact posterior, checked against a grid.
TEST_CASE("services::variational samples the exact posterior where neither importance nor tempering can be trusted") {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/tests/corpus/cauchy_logit/";
    const ir::Graph g = load_model(dir + "model.vbn");
    const Dataset d = load_csv(g, dir + "data.csv");
    const Target target(g, d);
    // (b, w) ∈ [-15, 12] × [-20, 220], as tests/runtime/test_tempered.cpp's grid
    const GridPosterior grid = grid_posterior(target, {-15, -20}, {12, 220}, 1201);
    REQUIRE(grid.edge_log_ratio < -20);
    services::VariationalSettings s;
    s.correction.seed = 2;
    s.correction.widen = 0.3;
    s.correction.defensive = 0;
    s.correction.tempering.max_gradients = 1000;
    std::vector<std::string> notes;
    services::Callbacks cb;
    cb.log = [&](services::LogLevel, const std::string& message) { notes.push_back(message); };
    const services::VariationalRun run = services::variational(g, d, s, cb);
    REQUIRE(run.corrected.has_value());
    const RefinedPosterior& r = *run.corrected;
    REQUIRE(r.sampled);
    CHECK(r.pareto_k >= 0.7);
    CHECK_FALSE(r.evidence_reliable());
    CHECK(r.tempering_stopped.find("budget") != std::string::npos);
    CHECK(r.reliable());
    CHECK(r.sampled_rhat <= 1.01);
    CHECK(r.chains == 4);
    CHECK(r.sampled_draws == 4000);
    CHECK(r.sampled_method == "varblock");  // auto's choice for this observed model, as vbn fit makes it
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
        return n.find("sampling the exact posterior as vbn fit does") != std::string::npos;
    }));
    CHECK(describe(r, s.correction).find("corrected posterior by sampling") != std::string::npos);
    for (int k = 0; k < 2; ++k) {
        CAPTURE(k);
        const double grid_sd = std::sqrt(grid.cov(k, k));
        CHECK(r.mcse[k] > 0);
        CHECK(r.mcse[k] < 0.05 * grid_sd);  // precise enough for the check below to mean something
        CHECK(std::abs(r.mean[k] - grid.mean[k]) < 4 * r.mcse[k]);
        CHECK(std::abs(std::sqrt(r.cov(k, k)) - grid_sd) < 0.1 * grid_sd);  // the corpus's tolerance for sds
        CHECK(r.q5[k] < r.q50[k]);
        CHECK(r.q50[k] < r.q95[k]);
    }

    // Turned off, the importance answer stands, flagged.
    s.sample_when_unreliable = false;
    const services::VariationalRun flagged = services::variational(g, d, s);
    REQUIRE(flagged.corrected.has_value());
    CHECK_FALSE(flagged.corrected->sampled);
    CHECK_FALSE(flagged.corrected->reliable());
}

TEST_CASE("services::variational interrupted while tempering keeps the EM fit, marked interrupted") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    services::VariationalSettings s;
    s.vb.restarts = 2;
    s.correction.temper = RefineOptions::Temper::always;
    std::atomic<bool> stop{false};
    bool tempering = false;
    services::Callbacks cb;
    cb.interrupt = &stop;
    // The note that announces tempering raises the flag: the interrupt lands inside it.
    cb.log = [&](services::LogLevel, const std::string& message) {
        if (message.find("tempering") != std::string::npos) tempering = stop = true;
    };
    const services::VariationalRun run = services::variational(g, d, s, cb);
    CHECK(tempering);
    CHECK(run.result.interrupted);
    CHECK_FALSE(run.corrected.has_value());
    REQUIRE(run.result.fits.size() == 2);
    CHECK(std::isfinite(run.result.best_fit().elbo));
}

namespace {

const char* regression_model = R"(
covariate x[10];
node y ~ logistic(b + w * x);
b ~ normal(0, 2);
w ~ normal(0, 1);
)";

// `rows` distinct rows of 10 covariates and y: 11 values a row, so that 10^5 rows pass
// Dataset::large (2^20 values), where `vb` builds the target first.
Dataset regression_rows(const ir::Graph& g, int rows) {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform;
    std::string csv = "y";
    for (int j = 1; j <= 10; ++j) csv += fmt::format(",x[{}]", j);
    csv += "\n";
    for (int r = 0; r < rows; ++r) {
        double eta = 0.3;
        std::string xs;
        for (int j = 1; j <= 10; ++j) {
            const double x = normal(rng);
            eta += 0.5 * (j % 3 - 1) * x;
            xs += fmt::format(",{:.6f}", x);
        }
        csv += (uniform(rng) < 1 / (1 + std::exp(-eta)) ? "1" : "-1") + xs + "\n";
    }
    std::istringstream in(csv);
    return load_csv(g, in, "regression.csv");
}

// What a run handed the data leaves of them: the columns and the missing counts it reads
// after the target is built, and no values, from which no target can be built again.
void check_values_dropped(const ir::Graph& g, const Dataset& handed, const Dataset& kept) {
    CHECK(handed.binary.empty());
    CHECK(handed.real.empty());
    CHECK(handed.count.empty());
    CHECK(handed.first_line.empty());
    CHECK(handed.patterns == kept.patterns);
    CHECK(handed.column_of == kept.column_of);
    CHECK(handed.missing == kept.missing);
    CHECK_THROWS_WITH_AS(Target(g, handed), doctest::Contains("values do not fill patterns"), Error);
}

void check_same_draws(const services::FitRun& a, const services::FitRun& b) {
    REQUIRE(a.result.chains.size() == b.result.chains.size());
    for (std::size_t c = 0; c < a.result.chains.size(); ++c) {
        REQUIRE(a.result.chains[c].draws.rows() > 0);
        CHECK(a.result.chains[c].draws == b.result.chains[c].draws);
    }
}

}  // namespace

// The command line hands its data to the run (services::fit(graph, Dataset&&, ...)), which
// drops the values once the target holds its own copy: at 10^6 rows x 10 covariates the
// rows are then held once, not twice (bench/scale.md).
TEST_CASE("services handed the data drop its values once the target holds them, with the same draws") {
    SUBCASE("fit with hidden values: the variational fit on the target's families") {
        const ir::Graph g = compile_model(sbn_model, "sbn");
        const Dataset kept = sbn_data(g);
        Dataset handed = kept;
        const services::FitRun a = services::fit(g, kept, small("varblock"), {});
        const services::FitRun b = services::fit(g, std::move(handed), small("varblock"), {});
        check_same_draws(a, b);
        check_values_dropped(g, handed, kept);  // NOLINT(bugprone-use-after-move): what is left is the point
    }
    SUBCASE("fit with every node observed: the variational fit beside the target, on the data") {
        const ir::Graph g = compile_model(regression_model, "regression");
        const Dataset kept = regression_rows(g, 200);
        REQUIRE_FALSE(kept.large());
        Dataset handed = kept;
        const services::FitRun a = services::fit(g, kept, small("auto"), {});
        const services::FitRun b = services::fit(g, std::move(handed), small("auto"), {});
        check_same_draws(a, b);
        check_values_dropped(g, handed, kept);  // NOLINT(bugprone-use-after-move)
    }
    SUBCASE("vb on large data, where the target comes first") {
        const ir::Graph g = compile_model(regression_model, "regression");
        const Dataset kept = regression_rows(g, 100000);
        REQUIRE(kept.large());
        Dataset handed = kept;
        services::VariationalSettings s;
        s.correction.draws = 500;
        const services::VariationalRun a = services::variational(g, kept, s);
        const services::VariationalRun b = services::variational(g, std::move(handed), s);
        CHECK(a.result.best_fit().mean == b.result.best_fit().mean);
        REQUIRE(a.corrected.has_value());
        REQUIRE(b.corrected.has_value());
        CHECK(a.corrected->mean == b.corrected->mean);
        check_values_dropped(g, handed, kept);  // NOLINT(bugprone-use-after-move)
    }
    SUBCASE("vb on small data keeps them: its fit reads them before the target is built") {
        const ir::Graph g = compile_model(sbn_model, "sbn");
        const Dataset kept = sbn_data(g);
        Dataset handed = kept;
        services::variational(g, std::move(handed), services::VariationalSettings{});
        CHECK(handed.binary == kept.binary);  // NOLINT(bugprone-use-after-move)
    }
}
