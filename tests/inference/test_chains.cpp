// The chain runner: reproducibility across thread counts, streaming, thinning, interruption,
// failures and statistics.
#include "gaussian_targets.hpp"

#include "inference/block_mh.hpp"
#include "inference/chains.hpp"
#include "inference/gaussian.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/random_walk.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

using namespace vbn::inference;
using vbn::test::GaussianDensity;
using vbn::test::GaussianFactory;

namespace {

// The paper's mixture (Fig. 7) of block independence MH and block random walk on the 10-D
// target; a t proposal, so each chain's first step builds t marginals in its own thread.
std::unique_ptr<Kernel> mixture_kernel(const GaussianDensity& t) {
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    Eigen::VectorXd mean = t.mean();
    mean.array() += 0.3;
    return std::make_unique<Mixture>(0.5, BlockIndependenceMH(GaussianProposal(mean, 1.5 * t.covariance(), 8.0)),
                                     RandomWalk(t.covariance(), per_block));
}

std::vector<Eigen::VectorXd> inits_for(const GaussianDensity& t, int chains) {
    std::vector<Eigen::VectorXd> inits;
    for (int c = 0; c < chains; ++c) inits.push_back(t.mean() + Eigen::VectorXd::Constant(t.dim(), 0.25 * c - 0.5));
    return inits;
}

bool same(const ChainResult& a, const ChainResult& b) {
    if (a.draws.rows() != b.draws.rows() || a.info.size() != b.info.size()) return false;
    if (a.draws != b.draws || a.lp != b.lp) return false;
    for (std::size_t i = 0; i < a.info.size(); ++i) {
        if (a.info[i].accept_stat != b.info[i].accept_stat || a.info[i].kernel != b.info[i].kernel) return false;
    }
    return true;
}

// Wraps a Gaussian: NaN at the origin-shifted point `bad` only, or throws after `throw_after` calls.
class FaultyDensity : public GaussianDensity {
public:
    FaultyDensity(GaussianDensity g, Eigen::VectorXd bad, long throw_after)
        : GaussianDensity(std::move(g)), bad_(std::move(bad)), throw_after_(throw_after) {}
    double log_density(const Eigen::VectorXd& x) override {
        if (throw_after_ >= 0 && calls_++ >= throw_after_) throw std::runtime_error("the density failed");
        if (x == bad_) return std::numeric_limits<double>::quiet_NaN();
        return GaussianDensity::log_density(x);
    }

private:
    Eigen::VectorXd bad_;
    long throw_after_;
    long calls_ = 0;
};

class FaultyFactory : public DensityFactory {
public:
    FaultyFactory(GaussianDensity g, Eigen::VectorXd bad, long throw_after) : g_(std::move(g)), bad_(std::move(bad)), after_(throw_after) {}
    std::unique_ptr<Density> make() const override { return std::make_unique<FaultyDensity>(g_, bad_, after_); }

private:
    GaussianDensity g_;
    Eigen::VectorXd bad_;
    long after_;
};

// A Gaussian whose log density overflows to +inf (or NaN) once coordinate 1 passes `edge`:
// a kernel accepts such a state, and the runner must stop there rather than go on.
class OverflowDensity : public GaussianDensity {
public:
    OverflowDensity(GaussianDensity g, double edge, double value) : GaussianDensity(std::move(g)), edge_(edge), value_(value) {}
    double log_density(const Eigen::VectorXd& x) override {
        return x[1] > edge_ ? value_ : GaussianDensity::log_density(x);
    }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        const double lp = GaussianDensity::log_density_gradient(x, grad);
        if (x[1] > edge_) grad[1] = std::numeric_limits<double>::quiet_NaN();
        return x[1] > edge_ ? value_ : lp;
    }

private:
    double edge_, value_;
};

class OverflowFactory : public DensityFactory {
public:
    OverflowFactory(GaussianDensity g, double edge, double value) : g_(std::move(g)), edge_(edge), value_(value) {}
    std::unique_ptr<Density> make() const override { return std::make_unique<OverflowDensity>(g_, edge_, value_); }

private:
    GaussianDensity g_;
    double edge_, value_;
};

}  // namespace

TEST_CASE("a log density that overflows mid-run stops the chain, naming the parameter, iteration and chain") {
    // Metropolis kernels reject NaN and +inf proposals, so a kernel that moves without a
    // test (coordinate 1 up by one sd per step) is what carries the chain into the region
    // where the density breaks down; the runner must stop there rather than go on.
    struct Drift : Kernel {
        double step_size = 1;
        void step(State& state, Density& target, Rng&, TransitionInfo&) override {
            state.x[1] += step_size;
            state.lp = target.log_density(state.x);
        }
        std::unique_ptr<Kernel> clone() const override { return std::make_unique<Drift>(*this); }
        void collect_stats(std::vector<KernelStats>& out) const override { out.push_back({"drift", 0, 0}); }
        std::string name() const override { return "drift"; }
    };
    const GaussianDensity g = vbn::test::correlated_2d();
    Drift kernel;
    kernel.step_size = std::sqrt(g.covariance()(1, 1));
    ChainSettings s;
    s.seed = 5;
    s.chains = 2;
    s.warmup = 3;
    s.draws = 50;
    ChainCallbacks cb;
    cb.parameter_name = [](int i) { return i == 0 ? std::string("b") : std::string("W[2,3]"); };
    // Iteration k (counting warmup) sits at mean + k sd; past mean + 5.5 sd the density breaks.
    const double edge = g.mean()[1] + 5.5 * kernel.step_size;
    for (const double value : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
        CAPTURE(value);
        const OverflowFactory factory(g, edge, value);
        const auto results = run_chains(factory, kernel, {g.mean()}, s, cb);
        for (const ChainResult& r : results) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error == fmt::format("chain {}: the log density is {} after sampling iteration 3; its gradient is nan "
                                         "in parameter W[2,3]",
                                         r.chain + 1, value));
            // The two draws before the failure are kept, finite; nothing after it.
            CHECK(r.draws_done == 2);
            CHECK(r.draws.rows() == 2);
            CHECK(r.draws.allFinite());
            CHECK_FALSE(r.interrupted);
        }
    }
    // Without names the index is given.
    const OverflowFactory factory(g, edge, std::numeric_limits<double>::infinity());
    const auto plain = run_chains(factory, kernel, {g.mean()}, s);
    CHECK(plain[0].error.find("in parameter 1 (0-based)") != std::string::npos);
}

TEST_CASE("same seed gives identical chains with 1 and 2 threads; chains differ") {
    const GaussianDensity target = vbn::test::correlated_10d();
    const GaussianFactory factory(target);
    const auto kernel = mixture_kernel(target);
    ChainSettings s;
    s.seed = 2024;
    s.chains = 4;
    s.warmup = 300;
    s.draws = 500;
    s.threads = 1;
    const auto one = run_chains(factory, *kernel, inits_for(target, 4), s);
    s.threads = 2;
    const auto two = run_chains(factory, *kernel, inits_for(target, 4), s);
    s.threads = 8;
    const auto many = run_chains(factory, *kernel, inits_for(target, 4), s);
    REQUIRE(one.size() == 4);
    for (int c = 0; c < 4; ++c) {
        INFO("chain " << c);
        CHECK(one[c].ok());
        CHECK(one[c].chain == c);
        CHECK(one[c].draws_done == 500);
        CHECK(one[c].draws.rows() == 500);
        CHECK(same(one[c], two[c]));
        CHECK(same(one[c], many[c]));
    }
    // Same initial point for all chains: only the random streams tell them apart.
    const auto shared = run_chains(factory, *kernel, {target.mean()}, s);
    for (int c = 1; c < 4; ++c) CHECK(shared[0].draws != shared[c].draws);
    s.seed = 2025;
    const auto other = run_chains(factory, *kernel, {target.mean()}, s);
    CHECK(other[0].draws != shared[0].draws);
}

TEST_CASE("an extended run is the longer run draw for draw, thinned and streamed alike") {
    const GaussianDensity target = vbn::test::correlated_10d();
    const GaussianFactory factory(target);
    const auto kernel = mixture_kernel(target);
    ChainSettings s;
    s.seed = 11;
    s.chains = 3;
    s.warmup = 200;
    s.draws = 301;
    s.thin = 3;
    s.threads = 2;
    // Asked twice: after the 301 iterations (101 kept), then after 200 more (167 kept in all).
    std::vector<int> seen;
    std::mutex streamed_mutex;
    std::vector<std::vector<int>> streamed(3);
    ChainCallbacks cb;
    cb.extend = [&seen](const std::vector<ChainResult>& so_far) {
        seen.push_back(so_far[0].draws_done);
        return seen.size() == 1 ? 200 : 0;
    };
    cb.on_draw = [&](int chain, int draw, const State&, const TransitionInfo&) {
        const std::lock_guard<std::mutex> lock(streamed_mutex);
        streamed[static_cast<std::size_t>(chain)].push_back(draw);
    };
    const auto extended = run_chains(factory, *kernel, inits_for(target, 3), s, cb);
    s.draws = 501;
    const auto longer = run_chains(factory, *kernel, inits_for(target, 3), s);
    CHECK(seen == std::vector<int>{101, 167});
    for (int c = 0; c < 3; ++c) {
        INFO("chain " << c);
        REQUIRE(extended[c].ok());
        CHECK(extended[c].iterations_done == 501);
        CHECK(extended[c].draws_done == 167);
        CHECK(same(extended[c], longer[c]));
        CHECK(extended[c].last.x == longer[c].last.x);
        // The sampling counters cover the extension; the warmup's are untouched by it.
        REQUIRE(extended[c].stats.size() == longer[c].stats.size());
        for (std::size_t k = 0; k < longer[c].stats.size(); ++k) {
            CHECK(extended[c].stats[k].proposed == longer[c].stats[k].proposed);
            CHECK(extended[c].stats[k].accepted == longer[c].stats[k].accepted);
            CHECK(extended[c].warmup_stats[k].proposed == longer[c].warmup_stats[k].proposed);
        }
        std::vector<int> numbers(167);
        for (int i = 0; i < 167; ++i) numbers[static_cast<std::size_t>(i)] = i;
        CHECK(streamed[static_cast<std::size_t>(c)] == numbers);
    }
}

TEST_CASE("no extension is asked for after an interrupt, nor for a failed chain") {
    const GaussianDensity target = vbn::test::correlated_10d();
    const GaussianFactory factory(target);
    const auto kernel = mixture_kernel(target);
    ChainSettings s;
    s.seed = 3;
    s.chains = 2;
    s.warmup = 50;
    s.draws = 100;
    std::atomic<bool> stop{false};
    int asked = 0;
    ChainCallbacks cb;
    cb.stop = &stop;
    cb.extend = [&asked](const std::vector<ChainResult>&) { return ++asked < 3 ? 100 : 0; };
    cb.on_draw = [&stop](int, int draw, const State&, const TransitionInfo&) {
        if (draw == 10) stop = true;
    };
    const auto stopped = run_chains(factory, *kernel, inits_for(target, 2), s, cb);
    CHECK(asked == 0);
    for (const auto& r : stopped) CHECK(r.interrupted);

    // Each chain's density throws at its 80th evaluation, within its 150 random-walk
    // iterations (one evaluation each): nothing is left to extend.
    const FaultyFactory failing(target, Eigen::VectorXd::Constant(10, 1e9), 80);
    cb.stop = nullptr;
    cb.on_draw = nullptr;
    const auto failed = run_chains(failing, RandomWalk(), inits_for(target, 2), s, cb);
    CHECK(asked == 0);
    for (const auto& r : failed) CHECK_FALSE(r.ok());
}

TEST_CASE("kept draws carry their exact log density; stats split warmup from sampling") {
    GaussianDensity target = vbn::test::correlated_10d();
    const GaussianFactory factory(target);
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    const RandomWalk kernel(target.covariance(), per_block);
    ChainSettings s;
    s.seed = 7;
    s.chains = 2;
    s.warmup = 200;
    s.draws = 300;
    const auto results = run_chains(factory, kernel, inits_for(target, 2), s);
    for (const ChainResult& r : results) {
        REQUIRE(r.ok());
        REQUIRE(r.lp.size() == 300);
        REQUIRE(r.info.size() == 300);
        for (int i = 0; i < 300; ++i) {
            const Eigen::VectorXd x = r.draws.row(i).transpose();
            CHECK(std::abs(r.lp[i] - target.exact(x)) < 1e-10 * (1 + std::abs(r.lp[i])));
            CHECK(r.info[i].kernel == 0);
        }
        CHECK(r.last.x == Eigen::VectorXd(r.draws.row(299).transpose()));
        REQUIRE(r.stats.size() == 1);
        CHECK(r.stats[0].name == "block rwm");
        CHECK(r.stats[0].proposed == 3 * 300);
        CHECK(r.warmup_stats[0].proposed == 3 * 200);
        CHECK(r.warmup_done == 200);
        CHECK(r.warmup_seconds >= 0);
        CHECK(r.sampling_seconds > 0);
    }
}

TEST_CASE("streamed draws equal kept draws; thinning keeps every thin-th iteration") {
    const GaussianDensity target = vbn::test::correlated_2d();
    const GaussianFactory factory(target);
    const RandomWalk kernel;
    ChainSettings s;
    s.seed = 99;
    s.chains = 3;
    s.warmup = 50;
    s.draws = 100;
    const auto full = run_chains(factory, kernel, {target.mean()}, s);

    std::mutex m;
    std::vector<std::vector<Eigen::VectorXd>> streamed(3);
    std::vector<std::vector<int>> indices(3);
    ChainCallbacks cb;
    cb.on_draw = [&](int chain, int draw, const State& state, const TransitionInfo&) {
        const std::lock_guard<std::mutex> lock(m);
        streamed[chain].push_back(state.x);
        indices[chain].push_back(draw);
    };
    s.keep_draws = false;
    s.thin = 3;
    s.threads = 2;
    const auto thinned = run_chains(factory, kernel, {target.mean()}, s, cb);
    for (int c = 0; c < 3; ++c) {
        INFO("chain " << c);
        CHECK(thinned[c].draws.rows() == 0);
        CHECK(thinned[c].draws_done == 34);  // iterations 0, 3, ..., 99
        REQUIRE(streamed[c].size() == 34);
        for (int k = 0; k < 34; ++k) {
            CHECK(indices[c][k] == k);
            CHECK(streamed[c][k] == Eigen::VectorXd(full[c].draws.row(3 * k).transpose()));
        }
    }
}

TEST_CASE("an interrupt stops every chain after its current iteration with consistent results") {
    GaussianDensity target = vbn::test::correlated_10d();
    const GaussianFactory factory(target);
    const auto kernel = mixture_kernel(target);
    ChainSettings s;
    s.seed = 5;
    s.chains = 3;
    s.warmup = 100;
    s.draws = 1'000'000;  // far more than the interrupt lets run
    s.threads = 1;
    std::atomic<bool> stop{false};
    ChainCallbacks cb;
    cb.stop = &stop;
    cb.on_draw = [&](int chain, int draw, const State&, const TransitionInfo&) {
        if (chain == 0 && draw == 999) stop = true;
    };
    const auto results = run_chains(factory, *kernel, inits_for(target, 3), s, cb);
    // Stopped right after the iteration during which the flag was raised.
    CHECK(results[0].draws_done == 1000);
    for (const ChainResult& r : results) {
        INFO("chain " << r.chain);
        CHECK(r.ok());
        CHECK(r.interrupted);
        REQUIRE(r.draws.rows() == r.draws_done);
        REQUIRE(r.lp.size() == r.draws_done);
        REQUIRE(static_cast<int>(r.info.size()) == r.draws_done);
        for (int i = 0; i < r.draws_done; ++i) {
            const Eigen::VectorXd x = r.draws.row(i).transpose();
            REQUIRE(std::abs(r.lp[i] - target.exact(x)) < 1e-10 * (1 + std::abs(r.lp[i])));
        }
    }
    // One thread: the later chains had not started, so they stop before their first iteration.
    CHECK(results[1].draws_done == 0);
    CHECK(results[1].warmup_done == 0);

    // Through should_stop, with two threads, during warmup: partial warmup, no draws.
    std::atomic<int> calls{0};
    ChainCallbacks cb2;
    cb2.should_stop = [&] { return ++calls > 40; };
    s.threads = 2;
    s.warmup = 1000;
    const auto early = run_chains(factory, *kernel, inits_for(target, 3), s, cb2);
    for (const ChainResult& r : early) {
        CHECK(r.interrupted);
        CHECK(r.draws_done == 0);
        CHECK(r.draws.rows() == 0);
        CHECK(r.warmup_done < 1000);
        CHECK(r.stats[0].proposed + r.stats[1].proposed == 0);
    }
}

TEST_CASE("a NaN log density at the initial point is an error naming the chain and iteration") {
    const GaussianDensity g = vbn::test::correlated_2d();
    const Eigen::Vector2d bad(0.3, 0.3);
    const FaultyFactory factory(g, bad, -1);
    const RandomWalk kernel;
    ChainSettings s;
    s.seed = 1;
    s.chains = 2;
    s.warmup = 10;
    s.draws = 20;
    const auto results = run_chains(factory, kernel, {bad, Eigen::VectorXd(g.mean())}, s);
    CHECK_FALSE(results[0].ok());
    CHECK(results[0].error == "chain 1: the log density is nan at the initial values (iteration 0); the largest parameter in magnitude "
                              "is 0 (0-based) = 0.3");
    CHECK(results[0].draws_done == 0);
    CHECK(results[0].draws.rows() == 0);
    CHECK(results[1].ok());
    CHECK(results[1].draws_done == 20);

    // A non-finite coordinate is named.
    const GaussianFactory plain(g);
    const auto named = run_chains(plain, kernel, {Eigen::Vector2d(0.0, std::numeric_limits<double>::infinity())}, s);
    CHECK(named[0].error == "chain 1: the log density is -inf at the initial values (iteration 0); parameter 1 (0-based) is inf");
}

TEST_CASE("an exception from the density mid-run is reported with the iteration") {
    const GaussianDensity g = vbn::test::correlated_2d();
    // One evaluation at the start, one per whole-vector random-walk step: the 16th call is
    // sampling iteration 5 after 10 warmup iterations.
    const FaultyFactory factory(g, Eigen::Vector2d(1e9, 1e9), 15);
    const RandomWalk kernel;
    ChainSettings s;
    s.seed = 1;
    s.chains = 1;
    s.warmup = 10;
    s.draws = 20;
    const auto results = run_chains(factory, kernel, {g.mean()}, s);
    CHECK(results[0].error == "chain 1: the density failed (after sampling iteration 5)");
    CHECK(results[0].draws_done == 4);
    CHECK(results[0].draws.rows() == 4);
    CHECK_FALSE(results[0].interrupted);
}

TEST_CASE("progress is reported by elapsed time, and at the end of each phase") {
    const GaussianDensity target = vbn::test::correlated_2d();
    const GaussianFactory factory(target);
    const RandomWalk kernel;
    ChainSettings s;
    s.seed = 3;
    s.chains = 2;
    s.warmup = 500;
    s.draws = 700;
    std::vector<ChainProgress> seen;
    ChainCallbacks cb;
    cb.progress = [&](const ChainProgress& p) { seen.push_back(p); };  // calls are serialised
    cb.progress_interval = 1e9;
    run_chains(factory, kernel, {target.mean()}, s, cb);
    REQUIRE(seen.size() == 4);
    int ends = 0;
    for (const ChainProgress& p : seen) {
        CHECK(p.iteration == p.iterations);
        CHECK(p.iterations == (p.warmup ? 500 : 700));
        ends += p.warmup ? 1 : 0;
    }
    CHECK(ends == 2);

    seen.clear();
    cb.progress_interval = 0;  // no throttling: every iteration
    s.chains = 1;
    run_chains(factory, kernel, {target.mean()}, s, cb);
    CHECK(seen.size() == 1200);
}

TEST_CASE("invalid settings and initial points are rejected before running") {
    const GaussianDensity target = vbn::test::correlated_2d();
    const GaussianFactory factory(target);
    const RandomWalk kernel;
    ChainSettings s;
    s.chains = 4;
    const std::vector<Eigen::VectorXd> one{target.mean()};
    CHECK_THROWS_WITH_AS(run_chains(factory, kernel, {target.mean(), target.mean()}, s),
                         "chains: 2 initial points given for 4 chains (give one per chain, or one for all)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(run_chains(factory, kernel, {Eigen::VectorXd::Zero(3)}, s),
                         "chains: the initial point of chain 0 has 3 entries but the target has 2", std::invalid_argument);
    s.threads = 0;
    CHECK_THROWS_AS(run_chains(factory, kernel, one, s), std::invalid_argument);
    s.threads = 2;
    s.thin = 0;
    CHECK_THROWS_AS(run_chains(factory, kernel, one, s), std::invalid_argument);
    s.thin = 1;
    s.chains = 0;
    CHECK_THROWS_AS(run_chains(factory, kernel, one, s), std::invalid_argument);
    s.chains = 1;
    s.draws = -1;
    CHECK_THROWS_AS(run_chains(factory, kernel, one, s), std::invalid_argument);
}
