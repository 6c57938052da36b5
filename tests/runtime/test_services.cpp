// The services layer (runtime/services): what the command line and the embedding API both rely
// on — draws handed out in output order, counts taken as they pass, messages through the
// callbacks, CmdStan CSV files that read back to the same summary, interruption.
#include "runtime/services/evidence.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/services/predict.hpp"
#include "runtime/services/simulate.hpp"
#include "runtime/services/variational.hpp"

#include "fit_options.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <unistd.h>
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
        const services::FitRun run = services::fit(g, d, small(method), cb);
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

TEST_CASE("services: draws streamed to CmdStan CSV files give the summary of the kept draws") {
    const ir::Graph g = compile_model(sbn_model, "sbn");
    const Dataset d = sbn_data(g);
    const auto dir = std::filesystem::temp_directory_path() / ("vbn-test-services-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);

    const services::FitRun kept_run = services::fit(g, d, small("varblock"), {});
    const FitSummary kept = services::summarize(kept_run, "sbn", false, {});

    FitOptions o = small("varblock");
    o.keep_draws = false;
    services::CsvDrawFiles files((dir / "fit.csv").string(), "sbn", "rows.csv", g, d, o);
    services::Callbacks cb;
    cb.on_draw = [&](int c, int k, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
        files.draw(c, k, x, lp, info);
    };
    const services::FitRun run = services::fit(g, d, o, cb, [&](const services::FitStart& s) { files.start(s); });
    files.finish(run.result);
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
