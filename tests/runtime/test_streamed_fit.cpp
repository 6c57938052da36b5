// Streamed fits (FitOptions::keep_draws off, as `vbn fit --output` runs): the chains hold no
// draws, on_draw sees every one, and the summary made from the streamed draws and the counts
// taken as they passed equals the one made from kept draws with the same seed.
#include "runtime/sampling/fit.hpp"
#include "runtime/report/fit_summary.hpp"

#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "tests/runtime/paper_dir.hpp"

#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace vbn;

using test::paper;

void check_same(const FitSummary& kept, const FitSummary& streamed) {
    REQUIRE(kept.rows.size() == streamed.rows.size());
    for (std::size_t i = 0; i < kept.rows.size(); ++i) {
        const SummaryRow &a = kept.rows[i], &b = streamed.rows[i];
        CHECK(a.name == b.name);
        // The same draws in the same order: the same doubles, not merely close ones.
        CHECK(a.mean == b.mean);
        CHECK(a.sd == b.sd);
        CHECK(a.q5 == b.q5);
        CHECK(a.q95 == b.q95);
        CHECK(a.ess_bulk == b.ess_bulk);
        CHECK(a.rhat == b.rhat);
    }
    CHECK(kept.facts.divergent == streamed.facts.divergent);
    CHECK(kept.facts.regenerations == streamed.facts.regenerations);
    CHECK(kept.facts.draws == streamed.facts.draws);
    CHECK(kept.facts.chains == streamed.facts.chains);
    // The whole text but the elapsed times (two runs take different times).
    RunFacts a = kept.facts, b = streamed.facts;
    a.warmup_seconds = b.warmup_seconds = 1.0;
    a.sampling_seconds = b.sampling_seconds = 2.0;
    CHECK(format_summary(kept.rows, a) == format_summary(streamed.rows, b));
}

}  // namespace

TEST_CASE("streamed fit: no draws held, every draw seen, the same summary") {
    const ir::Graph g = load_model(paper + "unimodal_d10.vbn");
    const Dataset d = load_csv(g, paper + "unimodal_d10.csv");
    // regen counts regenerations, nuts divergences: both are taken from the transitions.
    for (const std::string method : {"regen", "nuts"}) {
        CAPTURE(method);
        FitOptions o;
        o.method = method;
        o.chains = 2;
        o.threads = 2;
        o.warmup = 200;
        o.draws = 300;
        o.seed = 17;
        const FitResult kept = fit(g, d, o);
        const FitSummary from_kept = summarize_fit(kept, "m", o.warmup, o.draws);
        REQUIRE(from_kept.draws.size() == 2);
        // Without keeping a copy of the draws the rows come from the chains' own columns: the
        // same rows, and no draws in the summary.
        const FitSummary in_place = summarize_fit(kept, "m", o.warmup, o.draws, false);
        check_same(from_kept, in_place);
        CHECK(in_place.draws.empty());

        // The streamed run: on_draw records each chain's draws in output order (here, to
        // compare; `vbn fit --output` writes them to its files instead) and the counts.
        FitOptions s = o;
        s.keep_draws = false;
        std::vector<Eigen::MatrixXd> seen(2, Eigen::MatrixXd::Constant(o.draws, g.dim, std::nan("")));
        std::vector<StreamedCounts> counts(2);
        std::vector<int> calls(2, 0);
        const std::vector<int> order = output_order(g);
        s.callbacks.on_draw = [&](int chain, int draw, const inference::State& st, const inference::TransitionInfo& info) {
            auto c = static_cast<std::size_t>(chain);  // each chain's calls come from its own thread
            REQUIRE(draw == calls[c]);
            ++calls[c];
            for (std::size_t j = 0; j < order.size(); ++j) seen[c](draw, static_cast<Eigen::Index>(j)) = st.x[order[j]];
            counts[c].divergent += info.divergent ? 1 : 0;
            counts[c].regenerated += info.regenerated ? 1 : 0;
        };
        const FitResult streamed = fit(g, d, s);
        REQUIRE(streamed.chains.size() == 2);
        for (std::size_t c = 0; c < 2; ++c) {
            const auto& ch = streamed.chains[c];
            REQUIRE_MESSAGE(ch.ok(), ch.error);
            CHECK(ch.draws.rows() == 0);
            CHECK(ch.lp.size() == 0);
            CHECK(ch.info.empty());
            CHECK(ch.draws_done == o.draws);
            CHECK(calls[c] == o.draws);
            CHECK(seen[c].allFinite());
        }
        // Its chains hold no draws: summarising them in place is an error, not a read past them.
        CHECK_THROWS_WITH(summarize_fit(streamed, "m", s.warmup, s.draws, false), doctest::Contains("0 draws of"));
        const FitSummary from_stream = summarize_fit(streamed, "m", s.warmup, s.draws, counts, [&](std::size_t c) { return seen[c]; });
        check_same(from_kept, from_stream);
        if (method == "regen") CHECK(*from_stream.facts.regenerations > 0);  // the count is exercised

        // Read back in groups of 3 columns (a budget of 3 columns of both chains' draws):
        // each chain is asked once per group, for that group only, and the summary is the same.
        const double budget = 3.0 * 8.0 * 2.0 * static_cast<double>(o.draws);
        std::vector<std::pair<Eigen::Index, Eigen::Index>> asked;
        const FitSummary chunked = summarize_fit(
            streamed, "m", s.warmup, s.draws, counts,
            [&](std::size_t c, Eigen::Index first, Eigen::Index count) -> Eigen::MatrixXd {
                if (c == 0) asked.emplace_back(first, count);
                return seen[c].middleCols(first, count);
            },
            budget);
        check_same(from_kept, chunked);
        CHECK(chunked.draws.empty());  // never all held at once
        const std::vector<std::pair<Eigen::Index, Eigen::Index>> groups{{0, 3}, {3, 3}, {6, 3}, {9, 1}};
        CHECK(asked == groups);
    }
}

TEST_CASE("summary from the chains' own columns: the output order, not the internal one") {
    // A matrix parameter is reported column by column (CmdStan's order), not in the order the
    // chains hold it, so reading a chain's column p for output column p would show here.
    const ir::Graph g = load_model(paper + "sbn_3x8.vbn");
    const Dataset d = load_csv(g, paper + "sbn_3x8.csv");
    const std::vector<int> order = output_order(g);
    bool reordered = false;
    for (std::size_t j = 0; j < order.size(); ++j) reordered = reordered || order[j] != static_cast<int>(j);
    REQUIRE(reordered);
    FitOptions o;
    o.method = "rwm";
    o.chains = 2;
    o.warmup = 100;
    o.draws = 100;
    o.seed = 5;
    const FitResult r = fit(g, d, o);
    const FitSummary copied = summarize_fit(r, "m", o.warmup, o.draws);
    const FitSummary in_place = summarize_fit(r, "m", o.warmup, o.draws, false);
    check_same(copied, in_place);
    CHECK(in_place.draws.empty());
}
