// The MH kernel library: proposals, random walks, independence and block MH, mixtures and
// cycles. Statistical checks use fixed seeds and tolerances of 4 Monte Carlo standard errors.
#include "gaussian_targets.hpp"

#include "inference/adaptive_rwm.hpp"
#include "inference/block_mh.hpp"
#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/mixture_mh.hpp"
#include "inference/random_walk.hpp"
#include "inference/warmup_walk.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

// Counting heap allocations: the test binary interposes malloc (glibc's own entry point does
// the work), except under sanitizers, which interpose it themselves.
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
extern "C" void* __libc_malloc(std::size_t size);
namespace {
std::atomic<long> malloc_calls{0};
}
extern "C" void* malloc(std::size_t size) noexcept {
    malloc_calls.fetch_add(1, std::memory_order_relaxed);
    return __libc_malloc(size);
}
long vbn::test::allocation_count() { return malloc_calls.load(std::memory_order_relaxed); }
#else
long vbn::test::allocation_count() { return -1; }
#endif

using namespace vbn::inference;
using vbn::test::GaussianDensity;
using vbn::test::HoledDensity;
using vbn::test::inf;

namespace {

struct RunResult {
    Eigen::MatrixXd draws;
    double accept_rate = 0;   // mean accept_stat over the sampling phase
    double max_lp_error = 0;  // max |State::lp - log p(x)| / (1 + |log p(x)|) over every step
};

// Warmup then sampling with one kernel, checking State::lp against the density after every step.
RunResult run_kernel(Kernel& kernel, GaussianDensity& target, int warmup, int draws, std::uint64_t seed) {
    const Eigen::VectorXd init = target.mean() + Eigen::VectorXd::Constant(target.dim(), 0.5);
    vbn::test::KernelRun run = vbn::test::run_warmup_then_sample(
        kernel, target, [&](const Eigen::VectorXd& x) { return target.exact(x); }, init, warmup, draws, seed);
    RunResult r;
    r.draws = std::move(run.draws);
    r.max_lp_error = run.max_lp_error;
    double accept = 0;
    for (const TransitionInfo& info : run.info) accept += info.accept_stat;
    r.accept_rate = accept / draws;
    return r;
}

// A proposal near the target but not equal to it: mean shifted by 0.2 sd (alternating signs),
// covariance scaled by `inflation`, so the MH correction has work to do.
GaussianProposal nearby_proposal(const GaussianDensity& t, double inflation, double df = GaussianProposal::gaussian_df) {
    return vbn::test::shifted_proposal(t, 0.2, inflation, df);
}

struct NamedKernel {
    std::string name;
    std::unique_ptr<Kernel> kernel;
};

std::vector<NamedKernel> all_kernels(const GaussianDensity& t) {
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    const RandomWalk rw_whole;  // identity steps: not the target's shape
    const RandomWalk rw_block(t.covariance(), per_block);
    const BlockIndependenceMH block_imh(nearby_proposal(t, 1.5));
    std::vector<NamedKernel> ks;
    ks.push_back({"rwm whole", rw_whole.clone()});
    ks.push_back({"rwm per block", rw_block.clone()});
    ks.push_back({"adaptive rwm", std::make_unique<AdaptiveRandomWalk>()});
    ks.push_back({"independence mh gaussian", std::make_unique<IndependenceMH>(nearby_proposal(t, 1.5))});
    ks.push_back({"independence mh t5", std::make_unique<IndependenceMH>(nearby_proposal(t, 1.0, 5.0))});
    ks.push_back({"block independence mh", block_imh.clone()});
    // Blocks of 3 and 4 moved in whitened sub-blocks of at most 2 (the 2-D target's blocks of 1
    // are not split), re-centred in warmup.
    ks.push_back({"block independence mh, whitened sub-blocks",
                  std::make_unique<BlockIndependenceMH>(nearby_proposal(t, 1.5), BlockSplit{2, 2, 0, 1.0, true})});
    ks.push_back({"mixture", std::make_unique<Mixture>(0.5, block_imh, rw_block)});
    ks.push_back({"cycle", make_cycle(block_imh, rw_whole)});
    ks.push_back({"mixture independence mh", std::make_unique<MixtureIndependenceMH>(MixtureProposal(
                                                 {nearby_proposal(t, 1.5, 4.0), GaussianProposal(t.mean(), 4.0 * t.covariance())}, {0.8, 0.2}))});
    // varblock's composition: a walk over the first block only after the block moves, and a
    // walk over every block in the first tenth of warmup.
    RandomWalkOptions first_only = per_block;
    first_only.only.assign(static_cast<std::size_t>(t.block_count()), 0);
    first_only.only[0] = 1;
    ks.push_back({"block independence mh, a walk on the first block, a warmup walk",
                  std::make_unique<WarmupWalk>(make_cycle(block_imh, RandomWalk(t.covariance(), first_only)), rw_block)});
    return ks;
}

// Block independence MH whose whole blocks are re-centred in warmup (varblock's default), from a
// t(100) off-centre and 1.5 times too wide: checked apart from all_kernels, whose seeds the
// tests number in order.
std::unique_ptr<Kernel> recentred_blocks(const GaussianDensity& t) {
    return std::make_unique<BlockIndependenceMH>(nearby_proposal(t, 1.5, 100.0), BlockSplit{}, BlockRecentre{true, 300});
}

// A deliberately wrong kernel: an independence proposal accepted with p(x*)/p(x), forgetting
// the Hastings correction q(x)/q(x*). Its invariant law is ∝ p q, so the moment check must
// reject it — evidence that the check has power.
class WithoutHastingsCorrection : public Kernel {
public:
    explicit WithoutHastingsCorrection(GaussianProposal q) : q_(std::move(q)), y_(q_.dim()) {}
    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override {
        q_.sample(rng, y_);
        const double lp = target.log_density(y_);
        info.accept_stat = std::min(1.0, std::exp(lp - state.lp));
        if (std::log(rng.uniform()) < lp - state.lp) {
            state.x = y_;
            state.lp = lp;
        }
    }
    std::unique_ptr<Kernel> clone() const override { return std::make_unique<WithoutHastingsCorrection>(*this); }
    void collect_stats(std::vector<KernelStats>& out) const override { out.push_back({"wrong", 0, 0}); }
    std::string name() const override { return "wrong"; }

private:
    GaussianProposal q_;
    Eigen::VectorXd y_;
};

// Appends its id to a shared log on every step (for order checks).
class Recorder : public Kernel {
public:
    Recorder(int id, std::string* log, double accept = 1) : id_(id), log_(log), accept_(accept) {}
    void step(State&, Density&, Rng&, TransitionInfo& info) override {
        *log_ += std::to_string(id_);
        info.accept_stat = accept_;
        info.kernel = 0;
        ++steps_;
    }
    void begin_warmup(int) override { *log_ += "w"; }
    void end_warmup() override { *log_ += "e"; }
    std::unique_ptr<Kernel> clone() const override { return std::make_unique<Recorder>(*this); }
    void collect_stats(std::vector<KernelStats>& out) const override {
        out.push_back({"recorder " + std::to_string(id_), steps_, steps_});
    }
    std::string name() const override { return "recorder"; }

private:
    int id_;
    std::string* log_;
    double accept_;
    long steps_ = 0;
};

}  // namespace

TEST_CASE("Gaussian proposal: log density matches the closed form") {
    Eigen::Vector2d mean(0.5, -1.0);
    Eigen::Matrix2d cov;
    cov << 2.0, 0.6, 0.6, 1.0;
    GaussianProposal q(mean, cov);
    const Eigen::Vector2d x(1.3, 0.2);
    const double det = cov(0, 0) * cov(1, 1) - cov(0, 1) * cov(1, 0);
    const Eigen::Vector2d z = x - mean;
    // Σ⁻¹ of a 2x2 written out: [[c, -b], [-b, a]] / det.
    const double m = (cov(1, 1) * z[0] * z[0] - 2 * cov(0, 1) * z[0] * z[1] + cov(0, 0) * z[1] * z[1]) / det;
    CHECK(q.log_density(x) == doctest::Approx(-std::log(2 * std::numbers::pi) - 0.5 * std::log(det) - 0.5 * m).epsilon(1e-12));

    // A 1-D t_ν with scale σ: Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ) (1 + z²/(νσ²))^(-(ν+1)/2).
    const double nu = 3.5, sigma = 1.7, x1 = 2.2;
    GaussianProposal t(Eigen::VectorXd::Constant(1, 0.4), Eigen::MatrixXd::Constant(1, 1, sigma * sigma), nu);
    const double zz = (x1 - 0.4) / sigma;
    const double expected = std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * std::numbers::pi) -
                            std::log(sigma) - (nu + 1) / 2 * std::log1p(zz * zz / nu);
    CHECK(t.log_density(Eigen::VectorXd::Constant(1, x1)) == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("Gaussian proposal: sample_log_density draws what sample draws and returns its log density") {
    const GaussianDensity target = vbn::test::correlated_10d();
    for (const double df : {GaussianProposal::gaussian_df, 5.0, 100.0}) {
        GaussianProposal a(target.mean(), target.covariance(), df), b = a;
        Rng ra(11, 0), rb(11, 0);
        Eigen::VectorXd xa(10), xb(10);
        for (int i = 0; i < 200; ++i) {
            a.sample(ra, xa);
            const double lq = b.sample_log_density(rb, xb);
            REQUIRE(xa == xb);  // the same random numbers in the same order, bit for bit
            CHECK(lq == doctest::Approx(a.log_density(xa)).epsilon(1e-12));
        }
    }
}

TEST_CASE("Gaussian proposal: whiten gives L⁻¹(x − μ) and log_density's bits") {
    const GaussianDensity target = vbn::test::correlated_10d();
    for (const double df : {GaussianProposal::gaussian_df, 7.0}) {
        GaussianProposal q(target.mean(), target.covariance(), df);
        Rng rng(3, 1);
        Eigen::VectorXd x(10), u(10);
        for (int i = 0; i < 50; ++i) {
            q.sample(rng, x);
            const double lq = q.whiten(x, u);
            CHECK(lq == q.log_density(x));
            CHECK((q.cholesky() * u + q.mean() - x).norm() < 1e-12 * (1 + x.norm()));
        }
    }
}

// x ~ q, x* its overrelaxed move: x* ~ q again (the proposal kernel leaves q invariant), and
// for a Gaussian the whitened pair has correlation α in each coordinate. A t's |u|² is d F(d, ν),
// so E|u|² = d ν/(ν − 2) and E|u|⁴ = ν² d (d + 2) / ((ν − 2)(ν − 4)); drawing the t's scale
// from its prior instead of its conditional given u would keep the first and change the second.
TEST_CASE("Gaussian proposal: overrelaxed draws leave the proposal invariant and are correlated by α") {
    const GaussianDensity target = vbn::test::correlated_2d();
    const int n = 200000;
    for (const double df : {GaussianProposal::gaussian_df, 12.0}) {
        for (const double alpha : {-0.5, 0.7}) {
            INFO("df " << df << ", alpha " << alpha);
            GaussianProposal q(target.mean(), target.covariance(), df);
            Rng rng(17, 2);
            Eigen::VectorXd x(2), u(2), y(2), v(2);
            Eigen::MatrixXd draws(n, 2);
            Eigen::VectorXd r2(n), r4(n), cross(n);
            for (int i = 0; i < n; ++i) {
                q.sample(rng, x);
                q.whiten(x, u);
                const double lq = q.sample_overrelaxed(rng, alpha, u, y, v);
                REQUIRE(lq == doctest::Approx(q.log_density(y)).epsilon(1e-12));
                REQUIRE((q.cholesky() * v + q.mean() - y).norm() < 1e-12 * (1 + y.norm()));
                draws.row(i) = y.transpose();
                r2[i] = v.squaredNorm();
                r4[i] = r2[i] * r2[i];
                cross[i] = u[0] * v[0];
            }
            const double factor = std::isfinite(df) ? df / (df - 2) : 1.0;
            const std::string failures = vbn::test::check_moments(draws, q.mean(), factor * q.scale_matrix());
            CHECK_MESSAGE(failures.empty(), failures);
            auto within = [&](const Eigen::VectorXd& f, double expected) {
                const double mean = f.mean();
                const double se = std::sqrt((f.array() - mean).square().sum() / (n - 1.0) / n);
                INFO("mean " << mean << ", expected " << expected << ", se " << se);
                CHECK(std::abs(mean - expected) < 4 * se);
            };
            const double d = 2;
            within(r2, d * factor);
            if (std::isfinite(df)) within(r4, df * df * d * (d + 2) / ((df - 2) * (df - 4)));
            else within(r4, d * (d + 2));
            if (!std::isfinite(df)) within(cross, alpha);
        }
    }
}

TEST_CASE("Gaussian and t proposals sample their own moments") {
    const GaussianDensity target = vbn::test::correlated_10d();
    const int n = 40000;
    for (double df : {GaussianProposal::gaussian_df, 6.0}) {
        INFO("df = " << df);
        GaussianProposal q(target.mean(), target.covariance(), df);
        Rng rng(11, 3);
        Eigen::MatrixXd draws(n, q.dim());
        Eigen::VectorXd y(q.dim());
        for (int i = 0; i < n; ++i) {
            q.sample(rng, y);
            draws.row(i) = y.transpose();
        }
        // A t's covariance is ν/(ν-2) times its scale matrix.
        const double factor = std::isfinite(df) ? df / (df - 2) : 1.0;
        const std::string failures = vbn::test::check_moments(draws, q.mean(), factor * q.scale_matrix());
        CHECK_MESSAGE(failures.empty(), failures);
    }
}

TEST_CASE("mixture proposal: log density is the log of the weighted sum; draws follow the weights") {
    const GaussianDensity target = vbn::test::correlated_2d();
    GaussianProposal a(target.mean(), target.covariance());
    GaussianProposal b(target.mean() + Eigen::Vector2d(6, 0), 0.5 * target.covariance(), 5.0);
    MixtureProposal m({a, b}, {3.0, 7.0});
    CHECK(m.weight(0) == doctest::Approx(0.3));
    const Eigen::Vector2d x(2.0, 1.0);
    const double expected = std::log(0.3 * std::exp(a.log_density(x)) + 0.7 * std::exp(b.log_density(x)));
    CHECK(m.log_density(x) == doctest::Approx(expected).epsilon(1e-12));
    Rng rng(4, 1);
    Eigen::VectorXd y(2);
    const int n = 20000;
    int near_b = 0;
    for (int i = 0; i < n; ++i) {
        m.sample(rng, y);
        near_b += y[0] > target.mean()[0] + 3 ? 1 : 0;
    }
    // P(x0 > μ0 + 3) is below 0.002 under a and above 0.99 under b.
    CHECK(std::abs(near_b / double(n) - 0.7) < 0.02);
    CHECK_THROWS_AS(MixtureProposal({a}, {0.0}), std::invalid_argument);
    CHECK_THROWS_AS(MixtureProposal({a, b}, {1.0}), std::invalid_argument);
    CHECK_THROWS_AS(MixtureProposal({}, {}), std::invalid_argument);
}

TEST_CASE("chi-square draws have mean ν and variance 2ν") {
    for (double df : {0.4, 1.0, 3.0, 30.0}) {
        INFO("df = " << df);
        Rng rng(5, 1);
        const int n = 100000;
        double sum = 0, sum_sq = 0;
        for (int i = 0; i < n; ++i) {
            const double g = sample_chi_square(rng, df);
            REQUIRE(g > 0);
            sum += g;
            sum_sq += g * g;
        }
        const double mean = sum / n;
        const double var = sum_sq / n - mean * mean;
        CHECK(std::abs(mean - df) <= 4 * std::sqrt(2 * df / n));
        // var of the sample variance ≈ (μ4 - σ⁴)/n with μ4 = 12ν(ν+4) for χ²_ν.
        CHECK(std::abs(var - 2 * df) <= 4 * std::sqrt((12 * df * (df + 4) - 4 * df * df) / n));
    }
}

TEST_CASE("Gaussian proposal: a block-diagonal covariance stored by block is the dense one with zeros between blocks") {
    // Blocks of 3, 1 and 2 coordinates, taken from a correlated covariance.
    Eigen::MatrixXd full = vbn::test::correlated_10d().covariance().topLeftCorner(6, 6);
    std::vector<Eigen::MatrixXd> blocks{full.block(0, 0, 3, 3), full.block(3, 3, 1, 1), full.block(4, 4, 2, 2)};
    Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(6, 6);
    dense.block(0, 0, 3, 3) = blocks[0];
    dense.block(3, 3, 1, 1) = blocks[1];
    dense.block(4, 4, 2, 2) = blocks[2];
    const Eigen::VectorXd mean = Eigen::VectorXd::LinSpaced(6, -1, 1);
    for (double df : {GaussianProposal::gaussian_df, 5.0}) {
        CAPTURE(df);
        GaussianProposal by_block(mean, blocks, df), whole(mean, dense, df);
        CHECK(by_block.block_count() == 3);
        by_block.inflate(1.7);
        whole.inflate(1.7);
        CHECK((by_block.scale_matrix() - whole.scale_matrix()).cwiseAbs().maxCoeff() < 1e-14);
        CHECK((by_block.scale_diagonal() - whole.scale_matrix().diagonal()).cwiseAbs().maxCoeff() < 1e-14);
        // The same draws from the same stream, and the same density.
        Rng a(5, 0), b(5, 0);
        Eigen::VectorXd x(6), y(6);
        for (int i = 0; i < 100; ++i) {
            by_block.sample(a, x);
            whole.sample(b, y);
            REQUIRE((x - y).cwiseAbs().maxCoeff() < 1e-13);
            CHECK(by_block.log_density(x) == doctest::Approx(whole.log_density(x)).epsilon(1e-13));
        }
        // Marginals across, inside and over whole blocks.
        for (auto [offset, size] : std::vector<std::pair<int, int>>{{0, 6}, {1, 4}, {3, 1}, {4, 2}, {2, 3}}) {
            GaussianProposal m = by_block.marginal(offset, size), n = whole.marginal(offset, size);
            CHECK((m.scale_matrix() - n.scale_matrix()).cwiseAbs().maxCoeff() < 1e-13);
            CHECK(m.log_density(x.segment(offset, size)) == doctest::Approx(n.log_density(x.segment(offset, size))).epsilon(1e-13));
        }
    }
    CHECK_THROWS_AS(GaussianProposal(Eigen::VectorXd::Zero(5), blocks), std::invalid_argument);
    blocks[2](0, 1) = blocks[2](1, 0) = 10;  // no longer positive definite
    CHECK_THROWS_WITH_AS(GaussianProposal(mean, blocks), "proposal: the covariance is not positive definite", std::invalid_argument);
}

TEST_CASE("Gaussian proposal: marginals, inflation and invalid input") {
    const GaussianDensity target = vbn::test::correlated_10d();
    const GaussianProposal q(target.mean(), target.covariance(), 4.0);
    const GaussianProposal m = q.marginal(3, 3);
    CHECK(m.df() == 4.0);
    CHECK(m.mean().isApprox(target.mean().segment(3, 3)));
    CHECK((m.scale_matrix() - target.covariance().block(3, 3, 3, 3)).cwiseAbs().maxCoeff() < 1e-12);

    GaussianProposal wide = q;
    wide.inflate(2.25);
    CHECK((wide.scale_matrix() - 2.25 * target.covariance()).cwiseAbs().maxCoeff() < 1e-12);

    Eigen::Matrix2d not_pd;
    not_pd << 1, 2, 2, 1;
    CHECK_THROWS_WITH_AS(GaussianProposal(Eigen::Vector2d::Zero(), not_pd), "proposal: the covariance is not positive definite",
                         std::invalid_argument);
    Eigen::Matrix2d asym;
    asym << 1, 0.5, 0.4, 1;
    CHECK_THROWS_AS(GaussianProposal(Eigen::Vector2d::Zero(), asym), std::invalid_argument);
    CHECK_THROWS_AS(GaussianProposal(Eigen::Vector3d::Zero(), Eigen::Matrix2d::Identity()), std::invalid_argument);
    CHECK_THROWS_AS(GaussianProposal(Eigen::Vector2d::Zero(), Eigen::Matrix2d::Identity(), 0.0), std::invalid_argument);
    CHECK_THROWS_AS(GaussianProposal(Eigen::Vector2d(std::nan(""), 0), Eigen::Matrix2d::Identity()), std::invalid_argument);
    CHECK_THROWS_AS(wide.inflate(-1), std::invalid_argument);
    CHECK_THROWS_AS((void)q.marginal(8, 3), std::invalid_argument);
}

TEST_CASE("every kernel leaves a correlated 2-D and a correlated 10-D Gaussian invariant") {
    for (const bool ten : {false, true}) {
        GaussianDensity target = ten ? vbn::test::correlated_10d() : vbn::test::correlated_2d();
        std::uint64_t seed = 100;
        for (NamedKernel& k : all_kernels(target)) {
            INFO(k.name << " on " << target.dim() << "-D");
            const RunResult r = run_kernel(*k.kernel, target, 2000, 40000, ++seed);
            const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
            CHECK_MESSAGE(failures.empty(), failures);
            CHECK(r.max_lp_error < 1e-10);
            CHECK(r.accept_rate > 0.1);
        }
    }
}

TEST_CASE("the moment check rejects a kernel without the Hastings correction") {
    GaussianDensity target = vbn::test::correlated_2d();
    WithoutHastingsCorrection wrong(nearby_proposal(target, 1.5));
    const RunResult r = run_kernel(wrong, target, 0, 40000, 3);
    CHECK_FALSE(vbn::test::check_moments(r.draws, target.mean(), target.covariance()).empty());
}

TEST_CASE("block kernels evaluate only block_log_density") {
    GaussianDensity target = vbn::test::correlated_10d();
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    const RandomWalk rw(target.covariance(), per_block);
    const BlockIndependenceMH imh(nearby_proposal(target, 1.5));
    const Mixture mix(0.5, imh, rw);
    for (const Kernel* k : {static_cast<const Kernel*>(&rw), static_cast<const Kernel*>(&imh), static_cast<const Kernel*>(&mix)}) {
        INFO(k->name());
        auto kernel = k->clone();
        target.log_density_calls = target.block_calls = target.gradient_calls = 0;
        const int steps = 500;
        run_kernel(*kernel, target, 100, steps, 9);
        CHECK(target.log_density_calls == 0);
        CHECK(target.gradient_calls == 0);
        // Per block and step the proposal's terms, and the current state's unless they are
        // still known from an earlier move (BlockValueCache).
        const long moves = static_cast<long>(target.block_count()) * (100 + steps);
        CHECK(target.block_calls > moves);
        CHECK(target.block_calls <= 2 * moves);
        std::vector<KernelStats> stats;
        kernel->collect_stats(stats);
        long proposed = 0;
        for (const auto& s : stats) proposed += s.proposed;
        CHECK(proposed == static_cast<long>(target.block_count()) * (100 + steps));
    }
}

TEST_CASE("kernels do not allocate in step() once every component has stepped") {
    if (vbn::test::allocation_count() < 0) {
        MESSAGE("allocation counting is not available in this build");
        return;
    }
    GaussianDensity target = vbn::test::correlated_10d();
    std::vector<NamedKernel> kernels = all_kernels(target);
    kernels.push_back({"block independence mh, whole blocks re-centred in warmup", recentred_blocks(target)});
    kernels.push_back({"block independence mh, overrelaxed after warmup",
                       std::make_unique<BlockIndependenceMH>(nearby_proposal(target, 1.2, 100.0), BlockSplit{},
                                                             BlockRecentre{true, 300}, -0.3)});
    for (NamedKernel& k : kernels) {
        INFO(k.name);
        Rng rng(1, 2);
        State state{target.mean(), target.exact(target.mean())};
        TransitionInfo info;
        k.kernel->begin_warmup(200);
        // A combinator's components each size their scratch on their own first step.
        for (int i = 0; i < 20; ++i) k.kernel->step(state, target, rng, info);
        const long before = vbn::test::allocation_count();
        for (int i = 0; i < 200; ++i) k.kernel->step(state, target, rng, info);
        k.kernel->end_warmup();
        for (int i = 0; i < 200; ++i) k.kernel->step(state, target, rng, info);
        CHECK(vbn::test::allocation_count() - before == 0);
    }
}

TEST_CASE("proposals where the density is NaN or +inf are rejected") {
    HoledDensity target(vbn::test::correlated_2d(), 1.5);
    for (NamedKernel& k : all_kernels(target)) {
        INFO(k.name);
        Rng rng(4, 4);
        State state{Eigen::Vector2d(0.5, -1.5), 0.0};
        state.lp = target.log_density(state.x);
        k.kernel->begin_warmup(500);
        for (int i = 0; i < 3000; ++i) {
            TransitionInfo info;
            if (i == 500) k.kernel->end_warmup();
            k.kernel->step(state, target, rng, info);
            REQUIRE(std::isfinite(state.lp));
            REQUIRE(state.x[0] <= 1.5);
            REQUIRE(state.x[1] <= 1.5);
            REQUIRE(std::abs(state.lp - target.exact(state.x)) < 1e-10 * (1 + std::abs(state.lp)));
        }
    }
}

TEST_CASE("a kernel refuses to move from a state whose log density is not finite") {
    GaussianDensity target = vbn::test::correlated_2d();
    for (NamedKernel& k : all_kernels(target)) {
        INFO(k.name);
        Rng rng(1);
        State state{target.mean(), std::numeric_limits<double>::quiet_NaN()};
        TransitionInfo info;
        CHECK_THROWS_AS(k.kernel->step(state, target, rng, info), std::domain_error);
    }
}

TEST_CASE("kernels report sizes that do not fit the target") {
    GaussianDensity target = vbn::test::correlated_10d();
    Rng rng(1);
    State state{target.mean(), target.exact(target.mean())};
    TransitionInfo info;
    RandomWalk rw(Eigen::MatrixXd::Identity(3, 3));
    CHECK_THROWS_WITH_AS(rw.step(state, target, rng, info),
                         "random walk: the step covariance is 3x3 but the target has 10 parameters", std::invalid_argument);
    IndependenceMH imh(GaussianProposal(Eigen::VectorXd::Zero(4), Eigen::MatrixXd::Identity(4, 4)));
    CHECK_THROWS_AS(imh.step(state, target, rng, info), std::invalid_argument);
    std::vector<GaussianProposal> two_blocks(2, GaussianProposal(Eigen::VectorXd::Zero(3), Eigen::MatrixXd::Identity(3, 3)));
    BlockIndependenceMH bmh(two_blocks);
    CHECK_THROWS_WITH_AS(bmh.step(state, target, rng, info),
                         "block independence mh: 2 block proposals given but the target has 3 blocks", std::invalid_argument);
    std::vector<GaussianProposal> wrong_size(3, GaussianProposal(Eigen::VectorXd::Zero(3), Eigen::MatrixXd::Identity(3, 3)));
    BlockIndependenceMH bmh3(wrong_size);
    CHECK_THROWS_AS(bmh3.step(state, target, rng, info), std::invalid_argument);
    CHECK_THROWS_AS(Mixture(1.5, rw, rw), std::invalid_argument);
}

TEST_CASE("a mixture takes its first kernel with probability ν") {
    GaussianDensity target = vbn::test::correlated_2d();
    std::string log;
    const double nu = 0.3;
    Mixture mix(nu, Recorder(0, &log), Recorder(1, &log));
    Rng rng(21);
    State state{target.mean(), 0.0};
    const int n = 20000;
    int first = 0;
    for (int i = 0; i < n; ++i) {
        TransitionInfo info;
        mix.step(state, target, rng, info);
        REQUIRE((info.kernel == 0 || info.kernel == 1));
        REQUIRE(log.back() == (info.kernel == 0 ? '0' : '1'));
        first += info.kernel == 0;
    }
    // Binomial(n, ν): 4 standard deviations.
    CHECK(std::abs(first - nu * n) <= 4 * std::sqrt(n * nu * (1 - nu)));
    std::vector<KernelStats> stats;
    mix.collect_stats(stats);
    REQUIRE(stats.size() == 2);
    CHECK(stats[0].proposed == first);
    CHECK(stats[1].proposed == n - first);
}

TEST_CASE("a cycle steps its kernels in order; leaves are numbered depth-first") {
    GaussianDensity target = vbn::test::correlated_2d();
    std::string log;
    std::vector<std::unique_ptr<Kernel>> parts;
    parts.push_back(std::make_unique<Recorder>(0, &log, 1.0));
    parts.push_back(std::make_unique<Recorder>(1, &log, 0.5));
    parts.push_back(std::make_unique<Recorder>(2, &log, 0.0));
    Cycle cycle(std::move(parts));
    Rng rng(1);
    State state{target.mean(), 0.0};
    cycle.begin_warmup(2);
    for (int i = 0; i < 2; ++i) {
        TransitionInfo info;
        cycle.step(state, target, rng, info);
        CHECK(info.kernel == 2);
        CHECK(info.accept_stat == doctest::Approx(0.5));
    }
    cycle.end_warmup();
    CHECK(log == "www012012eee");

    // Mixture(ν, Cycle(a, b), c): leaves a = 0, b = 1, c = 2.
    log.clear();
    Mixture nested(0.5, *make_cycle(Recorder(0, &log), Recorder(1, &log)), Recorder(2, &log));
    CHECK(nested.leaf_count() == 3);
    for (int i = 0; i < 200; ++i) {
        TransitionInfo info;
        const std::size_t before = log.size();
        nested.step(state, target, rng, info);
        const std::string added = log.substr(before);
        if (added == "01") {
            CHECK(info.kernel == 1);
        } else {
            CHECK(added == "2");
            CHECK(info.kernel == 2);
        }
    }
    std::vector<KernelStats> stats;
    nested.collect_stats(stats);
    REQUIRE(stats.size() == 3);
    CHECK(stats[0].name == "recorder 0");
    CHECK(stats[2].name == "recorder 2");
    CHECK(stats[0].proposed + stats[2].proposed == 200);
}

// Moves block 0's first coordinate by +1 every step (a test kernel, not p-invariant).
class ShiftFirst : public Kernel {
public:
    void step(State& state, Density& target, Rng&, TransitionInfo& info) override {
        state.x[0] += 1;
        state.lp = target.log_density(state.x);
        info.kernel = 0;
    }
    std::unique_ptr<Kernel> clone() const override { return std::make_unique<ShiftFirst>(*this); }
    void collect_stats(std::vector<KernelStats>& out) const override { out.push_back({"shift", 0, 0}); }
    std::string name() const override { return "shift"; }
};

TEST_CASE("a warmup walk moves the blocks main left in place, early in warmup only; reports main alone") {
    CHECK(WarmupWalk::helped_iterations(1000) == 100);
    CHECK(WarmupWalk::helped_iterations(200) == 50);
    CHECK(WarmupWalk::helped_iterations(30) == 30);
    CHECK(WarmupWalk::helped_iterations(0) == 0);
    GaussianDensity target = vbn::test::correlated_2d();
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    const RandomWalk walk(target.covariance(), per_block);
    Rng rng(1);
    State state{target.mean(), 0.0};
    state.lp = target.log_density(state.x);
    TransitionInfo info;

    // A main kernel that never moves: the walk steps from the second helped iteration to the
    // 50th, and never after warmup.
    std::string log;
    WarmupWalk stalled(std::make_unique<Recorder>(0, &log, 0.5), walk);
    CHECK(stalled.leaf_count() == 1);
    stalled.step(state, target, rng, info);  // before warmup: main alone
    CHECK(stalled.walks() == 0);
    stalled.begin_warmup(60);
    for (int i = 0; i < 60; ++i) {
        info = TransitionInfo{};
        stalled.step(state, target, rng, info);
        CHECK(info.kernel == 0);
        CHECK(info.accept_stat == doctest::Approx(0.5));
    }
    stalled.end_warmup();
    CHECK(stalled.walks() == 49);
    for (int i = 0; i < 10; ++i) stalled.step(state, target, rng, info);
    CHECK(stalled.walks() == 49);
    CHECK(log == "0w" + std::string(60, '0') + "e" + std::string(10, '0'));
    std::vector<KernelStats> stats;
    stalled.collect_stats(stats);
    REQUIRE(stats.size() == 1);
    CHECK(stats[0].name == "recorder 0");

    // Main moves every block every time (an independence sampler whose proposal is the
    // target, so that p/q is constant): the walk never steps.
    state.x = target.mean();
    state.lp = target.log_density(state.x);
    WarmupWalk moving(std::make_unique<IndependenceMH>(GaussianProposal(target.mean(), target.covariance())), walk);
    moving.begin_warmup(100);
    for (int i = 0; i < 100; ++i) moving.step(state, target, rng, info);
    CHECK(moving.walks() == 0);

    // Main moves block 0 only: the walk moves block 1 and leaves block 0 to main.
    state.x = target.mean();
    state.lp = target.log_density(state.x);
    WarmupWalk half(std::make_unique<ShiftFirst>(), walk);
    half.begin_warmup(20);
    for (int i = 0; i < 20; ++i) half.step(state, target, rng, info);
    CHECK(half.walks() == 19);
    CHECK(state.x[0] == target.mean()[0] + 20);
    CHECK(state.x[1] != target.mean()[1]);
}

// What the helper is for: an independence proposal far lighter-tailed than the target (N(0, 1)
// against N(0, 3²)) from a start at 12, where p/q is e^64 times its value at 0. Alone, no
// proposal is ever accepted and the chain stays at its start; with a random walk in the first
// tenth of warmup, it is back among the target's draws by the end of warmup.
TEST_CASE("a warmup random walk carries an independence chain off a start where p/q is huge") {
    GaussianDensity target(Eigen::VectorXd::Zero(1), Eigen::MatrixXd::Constant(1, 1, 9.0));
    const GaussianProposal light(Eigen::VectorXd::Zero(1), Eigen::MatrixXd::Identity(1, 1));
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    for (const bool helped : {false, true}) {
        CAPTURE(helped);
        std::unique_ptr<Kernel> k = std::make_unique<BlockIndependenceMH>(light);
        if (helped) k = std::make_unique<WarmupWalk>(std::move(k), RandomWalk(target.covariance(), per_block));
        Rng rng(7);
        State state{Eigen::VectorXd::Constant(1, 12.0), 0.0};
        state.lp = target.log_density(state.x);
        k->begin_warmup(1000);
        TransitionInfo info;
        for (int i = 0; i < 1000; ++i) k->step(state, target, rng, info);
        k->end_warmup();
        if (helped)
            CHECK(std::abs(state.x[0]) < 9);  // within 3 sds of the target
        else
            CHECK(state.x[0] == 12.0);
    }
}

TEST_CASE("a per-block random walk moves only the blocks it is given") {
    GaussianDensity target = vbn::test::correlated_10d();
    RandomWalkOptions ro;
    ro.mode = BlockMode::per_block;
    ro.only = {0, 1, 0};
    RandomWalk rw(target.covariance(), ro);
    Rng rng(3);
    State state{target.mean(), 0.0};
    state.lp = target.log_density(state.x);
    const Eigen::VectorXd start = state.x;
    TransitionInfo info;
    for (int i = 0; i < 200; ++i) rw.step(state, target, rng, info);
    CHECK(state.x.segment(0, 3) == start.segment(0, 3));
    CHECK(state.x.segment(6, 4) == start.segment(6, 4));
    CHECK(state.x.segment(3, 3) != start.segment(3, 3));
    ro.only = {1, 0};
    RandomWalk wrong(target.covariance(), ro);
    CHECK_THROWS_AS(wrong.step(state, target, rng, info), std::invalid_argument);
}

TEST_CASE("clone deep-copies adaptation state and counters") {
    GaussianDensity target = vbn::test::correlated_10d();
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    const Mixture original(0.5, RandomWalk(target.covariance(), per_block), AdaptiveRandomWalk());
    auto copy = original.clone();
    run_kernel(*copy, target, 300, 100, 5);
    std::vector<KernelStats> a, b;
    original.collect_stats(a);
    copy->collect_stats(b);
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    CHECK(a[0].proposed + a[1].proposed == 0);
    CHECK(b[0].proposed + b[1].proposed > 0);
}

TEST_CASE("random walk scales adapt during warmup towards the optimal acceptance, then freeze") {
    GaussianDensity ten = vbn::test::correlated_10d();
    GaussianDensity two = vbn::test::correlated_2d();
    RandomWalkOptions per_block;
    per_block.mode = BlockMode::per_block;
    struct Case {
        GaussianDensity* target;
        RandomWalk kernel;
        double goal;
    };
    // Whole: the target's shape, so acceptance is driven by the scale alone. Per block on the
    // 2-D target: one-coordinate blocks, goal 0.44.
    Case cases[] = {{&ten, RandomWalk(ten.covariance()), 0.234}, {&two, RandomWalk(two.covariance(), per_block), 0.44}};
    for (Case& c : cases) {
        INFO(c.kernel.name() << " on " << c.target->dim() << "-D");
        Rng rng(77);
        State state{c.target->mean(), c.target->exact(c.target->mean())};
        c.kernel.begin_warmup(3000);
        TransitionInfo info;
        c.kernel.step(state, *c.target, rng, info);
        const std::vector<double> initial = c.kernel.scales();
        for (int i = 1; i < 3000; ++i) c.kernel.step(state, *c.target, rng, info);
        c.kernel.end_warmup();
        const std::vector<double> tuned = c.kernel.scales();
        CHECK(tuned != initial);
        const int n = 20000;
        int accepted = 0;
        std::vector<KernelStats> before;
        c.kernel.collect_stats(before);
        for (int i = 0; i < n; ++i) {
            c.kernel.step(state, *c.target, rng, info);
            REQUIRE(c.kernel.scales() == tuned);
        }
        std::vector<KernelStats> after;
        c.kernel.collect_stats(after);
        accepted = static_cast<int>(after[0].accepted - before[0].accepted);
        const double rate = static_cast<double>(accepted) / static_cast<double>(after[0].proposed - before[0].proposed);
        // Robbins–Monro after 3000 iterations lands the rate within a few hundredths of the goal.
        INFO("acceptance " << rate);
        CHECK(std::abs(rate - c.goal) < 0.05);
    }
}

TEST_CASE("adaptive random walk learns the covariance during warmup, then freezes") {
    GaussianDensity target = vbn::test::correlated_10d();
    AdaptiveRandomWalk kernel;
    Rng rng(31);
    State state{target.mean(), target.exact(target.mean())};
    TransitionInfo info;
    const int warmup = 20000;
    Eigen::MatrixXd states(warmup, target.dim());
    kernel.begin_warmup(warmup);
    for (int i = 0; i < warmup; ++i) {
        kernel.step(state, target, rng, info);
        states.row(i) = state.x.transpose();
    }
    kernel.end_warmup();
    REQUIRE(kernel.has_adapted_component());
    CHECK(kernel.adapted_states() == warmup);
    const Eigen::MatrixXd frozen = kernel.adapted_cholesky();
    const double d = target.dim();
    // The frozen proposal is (2.38²/d) S + ε I with S the sample covariance of the warmup states.
    const Eigen::MatrixXd centred = states.rowwise() - states.colwise().mean();
    const Eigen::MatrixXd sample_cov = centred.transpose() * centred / (warmup - 1.0);
    Eigen::MatrixXd expected = (2.38 * 2.38 / d) * sample_cov;
    expected.diagonal().array() += AdaptiveRandomWalkOptions{}.regularisation;
    CHECK((frozen * frozen.transpose() - expected).cwiseAbs().maxCoeff() < 1e-10 * expected.cwiseAbs().maxCoeff());
    // And S estimates the target's covariance: every entry within 4 Monte Carlo errors.
    const std::string failures = vbn::test::check_moments(states, target.mean(), target.covariance());
    CHECK_MESSAGE(failures.empty(), failures);
    for (int i = 0; i < 2000; ++i) {
        kernel.step(state, target, rng, info);
        REQUIRE(kernel.adapted_cholesky() == frozen);
    }
    CHECK(kernel.adapted_states() == warmup);
}

namespace {
// A Gaussian whose blocks are independent, which it declares (Density::block_separable).
class SeparableGaussian : public vbn::test::GaussianDensity {
public:
    using GaussianDensity::GaussianDensity;
    bool block_separable(int) const override { return true; }
};
}  // namespace

TEST_CASE("block kernels evaluate the current state's terms only when they may have changed") {
    Eigen::VectorXd mean(4);
    mean << 1, -1, 0.5, 2;
    Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(4, 4);
    cov.topLeftCorner(2, 2) << 1, 0.5, 0.5, 2;
    cov.bottomRightCorner(2, 2) << 0.5, -0.2, -0.2, 1;
    const int steps = 300;
    SUBCASE("one block: the current value is known after the first step") {
        vbn::test::GaussianDensity target(mean, cov);
        BlockIndependenceMH imh(GaussianProposal(mean, 1.5 * cov, 10));
        run_kernel(imh, target, 0, steps, 4);
        CHECK(target.block_calls == steps + 1);
    }
    SUBCASE("separable blocks: a block's value survives the other block's moves") {
        SeparableGaussian target(mean, cov, {{0, 2}, {2, 2}});
        BlockIndependenceMH imh(GaussianProposal(mean, 1.5 * cov, 10));
        const RunResult r = run_kernel(imh, target, 0, 4000, 5);
        CHECK(target.block_calls == 2L * 4000 + 2);
        CHECK(vbn::test::check_moments(r.draws, mean, cov).empty());
    }
    SUBCASE("coupled blocks: a move of another block invalidates the value") {
        vbn::test::GaussianDensity target(mean, cov, {{0, 2}, {2, 2}});
        BlockIndependenceMH imh(GaussianProposal(mean, 1.5 * cov, 10));
        run_kernel(imh, target, 0, steps, 6);
        std::vector<KernelStats> stats;
        imh.collect_stats(stats);
        // One evaluation per proposal, plus one per move whose block's value went stale.
        CHECK(target.block_calls > 2L * steps);
        CHECK(target.block_calls <= 4L * steps);
    }
}

namespace {
// The correlated targets as one block each, so that the whitened sub-blocks cut across them.
GaussianDensity one_block(const GaussianDensity& t) { return GaussianDensity(t.mean(), t.covariance()); }
}  // namespace

TEST_CASE("whitened sub-blocks of one block leave correlated 2-D and 10-D Gaussians invariant") {
    std::uint64_t seed = 300;
    for (const bool ten : {false, true}) {
        GaussianDensity target = one_block(ten ? vbn::test::correlated_10d() : vbn::test::correlated_2d());
        // 2-D: two sub-blocks of 1; 10-D: sub-blocks of 4, 3 and 3.
        const int max_size = ten ? 4 : 1;
        for (const double df : {GaussianProposal::gaussian_df, 5.0}) {
            for (const bool recentre : {false, true}) {
                INFO(target.dim() << "-D, df " << df << ", recentre " << recentre);
                BlockIndependenceMH k(nearby_proposal(target, 1.5, df), BlockSplit{1, max_size, 0, 1.0, recentre});
                const RunResult r = run_kernel(k, target, 2000, 40000, ++seed);
                const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
                CHECK_MESSAGE(failures.empty(), failures);
                CHECK(r.max_lp_error < 1e-10);
                const std::vector<double> acc = k.block_acceptance();
                CHECK(acc.size() == (ten ? 3u : 2u));
                for (double a : acc) CHECK(a > 0.3);
            }
        }
    }
}

TEST_CASE("whitened sub-blocks: re-centring on the warmup's draws raises acceptance from a proposal off-centre") {
    GaussianDensity target = one_block(vbn::test::correlated_10d());
    // Centred 0.5 sd off in every coordinate, alternating signs: a poor independence proposal.
    const GaussianProposal off = vbn::test::shifted_proposal(target, 0.5, 1.0, 10.0);
    double accept[2];
    for (const bool recentre : {false, true}) {
        BlockIndependenceMH k(off, BlockSplit{1, 4, 0, 1.0, recentre});
        const RunResult r = run_kernel(k, target, 2000, 20000, 11);
        const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        accept[recentre] = r.accept_rate;
    }
    MESSAGE("acceptance from 0.5 sd off: ", accept[0], " fixed, ", accept[1], " re-centred");
    CHECK(accept[1] > accept[0] + 0.2);
}

// Clones of k run with the same seed give the same draws (so does a clone against its
// original's clone), and another seed other draws.
void check_same_seed_same_draws(const Kernel& k, GaussianDensity& target) {
    auto a = k.clone(), b = k.clone(), c = k.clone();
    const RunResult ra = run_kernel(*a, target, 200, 500, 5);
    const RunResult rb = run_kernel(*b, target, 200, 500, 5);
    const RunResult rc = run_kernel(*c, target, 200, 500, 6);
    CHECK(ra.draws == rb.draws);
    CHECK(ra.draws != rc.draws);
}

TEST_CASE("whitened sub-blocks: the same seed gives the same draws, a clone the same as the original") {
    GaussianDensity target = one_block(vbn::test::correlated_10d());
    const BlockIndependenceMH k(nearby_proposal(target, 1.5, 10.0), BlockSplit{1, 4, 0, 1.0, true});
    check_same_seed_same_draws(k, target);
}

TEST_CASE("whole blocks re-centred in warmup leave correlated 2-D and 10-D Gaussians invariant") {
    std::uint64_t seed = 400;
    for (const bool ten : {false, true}) {
        GaussianDensity target = ten ? vbn::test::correlated_10d() : vbn::test::correlated_2d();
        INFO(target.dim() << "-D");
        const std::unique_ptr<Kernel> k = recentred_blocks(target);
        const RunResult r = run_kernel(*k, target, 2000, 40000, ++seed);
        const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        CHECK(r.max_lp_error < 1e-10);
        CHECK(r.accept_rate > 0.3);
    }
}

TEST_CASE("whole blocks: re-centring on the warmup's draws moves the proposal to the mean and raises acceptance") {
    GaussianDensity target = one_block(vbn::test::correlated_10d());
    // Centred 0.3 sd off in every coordinate, alternating signs (1.8 sds off in all): a poor
    // independence proposal, accepting about 20% of its moves.
    const GaussianProposal off = vbn::test::shifted_proposal(target, 0.3, 1.0, 100.0);
    const Eigen::LLT<Eigen::MatrixXd> llt(target.covariance());
    // The centre's distance from the target's mean in the target's sds: sqrt(m' Σ⁻¹ m).
    auto distance = [&](const Eigen::VectorXd& centre) {
        return std::sqrt((llt.matrixL().solve(centre - target.mean())).squaredNorm());
    };
    const double before = distance(off.mean());
    double accept[2], after[2];
    for (const bool recentre : {false, true}) {
        BlockIndependenceMH k(off, BlockSplit{}, BlockRecentre{recentre, 300});
        const RunResult r = run_kernel(k, target, 2000, 20000, 12);
        if (recentre) {  // (the fixed kernel's chain is too sticky for its Monte Carlo error to be estimated)
            const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
            CHECK_MESSAGE(failures.empty(), failures);
        }
        CHECK(r.max_lp_error < 1e-10);
        const std::vector<GaussianProposal> qs = k.block_proposals();
        REQUIRE(qs.size() == 1);
        const GaussianProposal& q = qs.front();
        // Only the centre moves: the scale matrix and df stay.
        CHECK((q.cholesky() - off.cholesky()).norm() < 1e-12 * off.cholesky().norm());
        CHECK(q.df() == off.df());
        accept[recentre] = r.accept_rate;
        after[recentre] = distance(q.mean());
    }
    MESSAGE("acceptance from ", before, " sds off: ", accept[0], " fixed, ", accept[1], " re-centred (then ", after[1],
            " sds off)");
    CHECK(after[0] == doctest::Approx(before).epsilon(1e-12));
    // Pooled with the initial centre as 300 of 300 + 1,800 draws, the centre keeps 1/7 of its
    // offset (0.26 sds); the warmup draws' mean adds about sqrt(10 τ / 1,800) sds, τ their
    // autocorrelation time (seeds 1-12: 0.23-0.43 sds off after, acceptance 0.76-0.86 against
    // 0.18-0.22). Without the re-centring both stay where they were.
    CHECK(after[1] < 0.3 * before);
    CHECK(accept[1] > accept[0] + 0.4);
}

TEST_CASE("whole blocks: re-centring applies only to the blocks it names") {
    // Three blocks (3, 3 and 4 coordinates), the proposal off-centre in all: only blocks 0 and
    // 2 are named, so block 1 keeps its centre while the others move theirs.
    GaussianDensity target = vbn::test::correlated_10d();
    REQUIRE(target.block_count() == 3);
    const GaussianProposal off = vbn::test::shifted_proposal(target, 0.3, 1.0, 100.0);
    BlockRecentre recentre{true, 300};
    recentre.blocks = {1, 0, 1};
    BlockIndependenceMH k(off, BlockSplit{}, recentre);
    const RunResult r = run_kernel(k, target, 2000, 20000, 12);
    const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
    CHECK_MESSAGE(failures.empty(), failures);
    const std::vector<GaussianProposal> qs = k.block_proposals();
    REQUIRE(qs.size() == 3);
    for (int b = 0; b < 3; ++b) {
        CAPTURE(b);
        const BlockRange range = target.block(b);
        const Eigen::VectorXd initial = off.mean().segment(range.offset, range.size);
        if (b == 1) CHECK(qs[1].mean() == initial);
        else CHECK((qs[static_cast<std::size_t>(b)].mean() - initial).norm() > 0.05);
    }
    CHECK(!BlockRecentre{false, 300, {1, 1, 1}}.applies(0));
    CHECK(BlockRecentre{true, 300, {}}.applies(2));
    CHECK(!BlockRecentre{true, 300, {1}}.applies(1));
}

TEST_CASE("whole blocks re-centred: the same seed gives the same draws, a clone the same as the original") {
    GaussianDensity target = one_block(vbn::test::correlated_10d());
    const BlockIndependenceMH k(vbn::test::shifted_proposal(target, 0.5, 1.0, 100.0), BlockSplit{}, BlockRecentre{true, 30});
    check_same_seed_same_draws(k, target);
    CHECK_THROWS_AS(BlockIndependenceMH(vbn::test::shifted_proposal(target, 0.5, 1.0), BlockSplit{}, BlockRecentre{true, -1}),
                    std::invalid_argument);
}

// As vbn uses them: one block, its proposal near the target (0.2 sd off, 1.2 times too wide).
TEST_CASE("overrelaxed whole blocks: correlated 2-D and 10-D Gaussians as one block each") {
    std::uint64_t seed = 500;
    for (const bool ten : {false, true}) {
        GaussianDensity target = one_block(ten ? vbn::test::correlated_10d() : vbn::test::correlated_2d());
        for (const double df : {GaussianProposal::gaussian_df, 5.0, 100.0}) {
            for (const double alpha : {-0.5, 0.5}) {
                INFO(target.dim() << "-D, df " << df << ", alpha " << alpha);
                BlockIndependenceMH k(nearby_proposal(target, 1.2, df), BlockSplit{}, BlockRecentre{std::isfinite(df), 300}, alpha);
                const RunResult r = run_kernel(k, target, 1000, 40000, ++seed);
                const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
                CHECK_MESSAGE(failures.empty(), failures);
                CHECK(r.max_lp_error < 1e-10);
                // (It moves. The acceptance rate differs from the independence sampler's: from this
                // off-centre Gaussian without re-centring, 0.28 at α = -0.5 against 0.40 in 10-D.)
                CHECK(r.accept_rate > 0.2);
            }
        }
    }
}

// Σ_j log[q_j(x_j) / N_j(x_j)] over the blocks j, up to a constant: q_j block j's t proposal
// and N_j the Gaussian of the same centre and scale, in q_j's whitened coordinates u_j.
double t_over_gaussian(const GaussianDensity& target, const std::vector<GaussianProposal>& qs, const Eigen::VectorXd& x) {
    double h = 0;
    for (int j = 0; j < target.block_count(); ++j) {
        const BlockRange r = target.block(j);
        Eigen::VectorXd u(r.size);
        h += qs[static_cast<std::size_t>(j)].whiten(x.segment(r.offset, r.size), u) + 0.5 * u.squaredNorm();
    }
    return h;
}

// Invariance apart from mixing: 20,000 chains started from exact draws of the target, each
// moved 10 sweeps, are still distributed as the target, on the coupled blocks (3, 3, 4) of
// the 10-D Gaussian and from a proposal 1.5 times too wide — where a single chain's spread
// mixes slowly (inference/block_mh.hpp) and a long-run check would need far more draws. The
// final states are independent across chains, so the moments' standard errors are plain.
// A kernel that mistakes the t proposal for the Gaussian of the same scale (no λ draw in the
// overrelaxed step, or Gaussian densities in the ratio) leaves the target tilted by
// ∏_j (q_j / N_j)^±1 invariant instead. After 10 sweeps the moments barely see it (largest
// error 2.7 mcse with Gaussian densities in the ratio, under the tolerance of 4; 6.8 without
// λ), but the tilt moves h = Σ_j log(q_j / N_j) itself: by 27.9 and −23.5 standard errors
// (1.3 with the right kernel). So the t case also checks that h's mean has not changed since
// the start: each chain's change has mean 0 when the kernel leaves the target invariant.
void check_exact_draws_stay_exact(GaussianDensity& target) {
    const Eigen::MatrixXd l = Eigen::LLT<Eigen::MatrixXd>(target.covariance()).matrixL();
    const int chains = 20000, sweeps = 10;
    for (const double df : {GaussianProposal::gaussian_df, 5.0}) {
        INFO("df " << df);
        const GaussianProposal q = nearby_proposal(target, 1.5, df);
        const BlockIndependenceMH k(q, BlockSplit{}, BlockRecentre{}, -0.5);
        std::vector<GaussianProposal> qs;
        for (int j = 0; j < target.block_count(); ++j) qs.push_back(q.marginal(target.block(j).offset, target.block(j).size));
        Eigen::MatrixXd finals(chains, target.dim());
        Eigen::VectorXd h_change(chains);
        Rng start(31, 1);
        for (int c = 0; c < chains; ++c) {
            Eigen::VectorXd x(target.dim());
            for (Eigen::Index i = 0; i < x.size(); ++i) x[i] = start.normal();
            x = target.mean() + l * x;
            const double h_start = t_over_gaussian(target, qs, x);
            const std::unique_ptr<Kernel> kc = k.clone();
            Rng rng(32, static_cast<std::uint64_t>(c));
            State state{x, target.log_density(x)};
            for (int s = 0; s < sweeps; ++s) {
                TransitionInfo info;
                kc->step(state, target, rng, info);
            }
            finals.row(c) = state.x.transpose();
            h_change[c] = t_over_gaussian(target, qs, state.x) - h_start;
        }
        // (Independent rows: batch means of 40 batches is the plain standard error, to ±20%.)
        const std::string failures = vbn::test::check_moments(finals, target.mean(), target.covariance());
        CHECK_MESSAGE(failures.empty(), failures);
        if (q.is_student_t()) {
            const double mean = h_change.mean();
            const double se = std::sqrt((h_change.array() - mean).square().sum() / (chains - 1.0) / chains);
            CHECK_MESSAGE(std::abs(mean) <= 4 * se, "log(t/N) moved by ", mean, " = ", mean / se, " se");
        }
    }
}

TEST_CASE("overrelaxed block moves leave the target invariant: exact draws stay exact, coupled blocks and wide proposals") {
    GaussianDensity target = vbn::test::correlated_10d();
    check_exact_draws_stay_exact(target);
}

// Lag-1 autocorrelation of one column of the draws.
double lag1(const Eigen::VectorXd& x) {
    const Eigen::ArrayXd c = x.array() - x.mean();
    const Eigen::Index n = c.size();
    return (c.head(n - 1) * c.tail(n - 1)).sum() / c.square().sum();
}

TEST_CASE("overrelaxed whole blocks: with the target as proposal every move is accepted and the draws are antithetic") {
    // With q = p the MH ratio is 1: the chain is the AR(1) u_{t+1} = α u_t + sqrt(1 − α²) ε in
    // whitened coordinates, so each coordinate's lag-1 autocorrelation is α (here -0.5), and
    // its mean's variance falls by (1 + α)/(1 − α) = 1/3 against independent draws. The
    // independence kernel (α = 0) is the control. Warmup takes independence proposals.
    GaussianDensity target = one_block(vbn::test::correlated_10d());
    const GaussianProposal exact(target.mean(), target.covariance());
    const int n = 20000;
    double mean_var[2];
    for (const double alpha : {0.0, -0.5}) {
        INFO("alpha " << alpha);
        BlockIndependenceMH k(exact, BlockSplit{}, BlockRecentre{}, alpha);
        const RunResult r = run_kernel(k, target, 100, n, 21);
        CHECK(r.accept_rate == 1.0);
        // Whitened draws: each coordinate is the AR(1) above.
        const Eigen::MatrixXd l = exact.cholesky();
        const Eigen::MatrixXd z = l.triangularView<Eigen::Lower>().solve((r.draws.rowwise() - target.mean().transpose()).transpose()).transpose();
        double total = 0;
        for (Eigen::Index j = 0; j < z.cols(); ++j) {
            const double rho = lag1(z.col(j));
            CHECK(std::abs(rho - alpha) < 4 / std::sqrt(static_cast<double>(n)));  // se of a lag-1 estimate ≈ sqrt((1 − ρ²)/n)
            total += vbn::test::batch_means_mcse(z.col(j));
        }
        mean_var[alpha != 0] = total / static_cast<double>(z.cols());
    }
    MESSAGE("mean's mcse per whitened coordinate: ", mean_var[0], " independent, ", mean_var[1], " overrelaxed");
    // sqrt(1/3) = 0.58 expected; batch means of 20,000 draws estimate each mcse to about 10%.
    CHECK(mean_var[1] < 0.7 * mean_var[0]);
    CHECK(mean_var[1] > 0.45 * mean_var[0]);
}

// Proposals drawn ahead (inference/block_mh.hpp): a block the density evaluates 16 values at
// a time. Independence proposals are all used; overrelaxed ones are drawn each from the one
// before and discarded after a rejection. A kernel that kept them (or that drew one from a
// point the chain did not reach) would leave another distribution invariant, which the
// exact-draws check sees; one that mixed batched and single values in a ratio would break lp.
TEST_CASE("whole blocks drawn ahead: Gaussians stay invariant, independence and overrelaxed, re-centred or not") {
    std::uint64_t seed = 700;
    for (const bool ten : {false, true}) {
        for (const double df : {GaussianProposal::gaussian_df, 5.0}) {
            for (const double alpha : {0.0, -0.5}) {
                INFO((ten ? 10 : 2) << "-D, df " << df << ", alpha " << alpha);
                vbn::test::BatchedGaussian target(one_block(ten ? vbn::test::correlated_10d() : vbn::test::correlated_2d()), 16);
                BlockIndependenceMH k(nearby_proposal(target, 1.2, df), BlockSplit{}, BlockRecentre{true, 300}, alpha);
                const RunResult r = run_kernel(k, target, 1000, 40000, ++seed);
                const std::string failures = vbn::test::check_moments(r.draws, target.mean(), target.covariance());
                CHECK_MESSAGE(failures.empty(), failures);
                CHECK(r.max_lp_error < 1e-10);
                CHECK(r.accept_rate > 0.2);
                CHECK(target.block_calls == 0);  // every value from block_log_densities
                // 41,000 moves; independence proposals all used (plus the current point's
                // value at the start and after each re-centring), overrelaxed ones discarded
                // after each rejection.
                CHECK(target.batched_values >= 41000);
                if (alpha == 0) CHECK(target.batched_values <= 41000 + 4 * 16);
                else CHECK(target.batched_values > 41000 + 1000);
            }
        }
    }
}

TEST_CASE("whole blocks drawn ahead: overrelaxed moves leave exact draws exact and stay antithetic") {
    vbn::test::BatchedGaussian target(one_block(vbn::test::correlated_10d()), 16);
    check_exact_draws_stay_exact(target);
    CHECK(target.block_calls == 0);
    // With the target as proposal every move is accepted and none is discarded: the draws are
    // the AR(1) of the unbatched kernel, lag-1 autocorrelation α in whitened coordinates.
    vbn::test::BatchedGaussian same(one_block(vbn::test::correlated_10d()), 16);
    const GaussianProposal exact(same.mean(), same.covariance());
    BlockIndependenceMH k(exact, BlockSplit{}, BlockRecentre{}, -0.5);
    const int n = 20000;
    const RunResult r = run_kernel(k, same, 100, n, 22);
    CHECK(r.accept_rate == 1.0);
    CHECK(same.batched_values <= n + 100 + 3 * 16);
    const Eigen::MatrixXd z = exact.cholesky().triangularView<Eigen::Lower>().solve(
        (r.draws.rowwise() - same.mean().transpose()).transpose()).transpose();
    for (Eigen::Index j = 0; j < z.cols(); ++j) CHECK(std::abs(lag1(z.col(j)) + 0.5) < 4 / std::sqrt(static_cast<double>(n)));
}

TEST_CASE("whole blocks drawn ahead: the same seed gives the same draws, a clone the same as the original") {
    vbn::test::BatchedGaussian target(one_block(vbn::test::correlated_10d()), 16);
    for (const double alpha : {0.0, -0.3}) {
        const BlockIndependenceMH k(vbn::test::shifted_proposal(target, 0.2, 1.2, 100.0), BlockSplit{}, BlockRecentre{true, 30}, alpha);
        check_same_seed_same_draws(k, target);
    }
}

TEST_CASE("overrelaxed whole blocks: the same seed gives the same draws; alpha outside (-1, 1) is refused") {
    GaussianDensity target = one_block(vbn::test::correlated_10d());
    const BlockIndependenceMH k(vbn::test::shifted_proposal(target, 0.2, 1.2, 100.0), BlockSplit{}, BlockRecentre{true, 30}, -0.3);
    check_same_seed_same_draws(k, target);
    for (const double bad : {-1.0, 1.0, 2.0, std::numeric_limits<double>::quiet_NaN()})
        CHECK_THROWS_AS(BlockIndependenceMH(vbn::test::shifted_proposal(target, 0.5, 1.0), BlockSplit{}, BlockRecentre{}, bad),
                        std::invalid_argument);
}

TEST_CASE("whitened sub-blocks: sizes as equal as possible; invalid splits are refused") {
    const BlockSplit s{20, 10, 0, 1.1, true};
    CHECK(s.parts(20) == 1);
    CHECK(s.parts(21) == 3);
    CHECK(s.parts(50) == 5);
    CHECK(s.parts(51) == 6);
    CHECK(BlockSplit{}.parts(1000) == 1);
    const GaussianProposal q(Eigen::VectorXd::Zero(3), Eigen::MatrixXd::Identity(3, 3));
    CHECK_THROWS_AS(BlockIndependenceMH(q, BlockSplit{2, 0, 0, 1.0, false}), std::invalid_argument);
    CHECK_THROWS_AS(BlockIndependenceMH(q, BlockSplit{2, 2, -1, 1.0, false}), std::invalid_argument);
    CHECK_THROWS_AS(BlockIndependenceMH(q, BlockSplit{2, 2, 0, 0.0, false}), std::invalid_argument);
    // Split 7 = 3 + 2 + 2: every sub-block moves once per step.
    GaussianDensity target(Eigen::VectorXd::Zero(7), Eigen::MatrixXd::Identity(7, 7));
    BlockIndependenceMH k(GaussianProposal(Eigen::VectorXd::Zero(7), Eigen::MatrixXd::Identity(7, 7)), BlockSplit{1, 3});
    run_kernel(k, target, 0, 100, 1);
    CHECK(k.block_acceptance().size() == 3);
    std::vector<KernelStats> stats;
    k.collect_stats(stats);
    CHECK(stats.front().proposed == 300);
    CHECK(target.block_calls <= 2 * 300);
}

TEST_CASE("a Gaussian proposal's draw is mean + L z of the normals it takes, at every vector width") {
    // Sizes on both sides of 8-double vectors, up to the 64 that L z keeps in registers and past
    // it; one proposal of several blocks too. The reference is Eigen's triangular product of
    // the covariance's own Cholesky factor (a different order of operations: agreement to
    // rounding, not bits).
    const auto covariance = [](Eigen::Index n, double shift) {
        Eigen::MatrixXd a(n, n);
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < n; ++j) a(i, j) = std::sin(1.3 * static_cast<double>(i * n + j) + shift);
        return Eigen::MatrixXd(a * a.transpose() + static_cast<double>(n) * Eigen::MatrixXd::Identity(n, n));
    };
    const auto check = [](GaussianProposal& q, const Eigen::VectorXd& mean, const Eigen::MatrixXd& lower) {
        const Eigen::Index n = mean.size();
        Rng rng(17, 3);
        for (int draw = 0; draw < 5; ++draw) {
            Rng copy = rng;
            Eigen::VectorXd out(n), z(n);
            q.sample(rng, out);
            for (Eigen::Index i = 0; i < n; ++i) z[i] = copy.normal();
            const Eigen::VectorXd want = mean + lower.triangularView<Eigen::Lower>() * z;
            CHECK((out - want).cwiseAbs().maxCoeff() <= 1e-12 * (1 + want.cwiseAbs().maxCoeff()));
        }
    };
    for (const Eigen::Index n : {1, 2, 7, 8, 9, 16, 20, 33, 64, 65}) {
        CAPTURE(n);
        const Eigen::MatrixXd cov = covariance(n, 0.2);
        Eigen::VectorXd mean(n);
        for (Eigen::Index i = 0; i < n; ++i) mean[i] = 0.1 * static_cast<double>(i) - 1;
        GaussianProposal q(mean, cov);
        check(q, mean, Eigen::LLT<Eigen::MatrixXd>(cov).matrixL().toDenseMatrix());
    }
    const std::vector<Eigen::MatrixXd> blocks = {covariance(3, 0.5), covariance(20, 0.7), covariance(9, 0.9)};
    Eigen::MatrixXd lower = Eigen::MatrixXd::Zero(32, 32);
    for (Eigen::Index o = 0; const Eigen::MatrixXd& b : blocks) {
        lower.block(o, o, b.rows(), b.rows()) = Eigen::LLT<Eigen::MatrixXd>(b).matrixL().toDenseMatrix();
        o += b.rows();
    }
    const Eigen::VectorXd mean = Eigen::VectorXd::LinSpaced(32, -2, 2);
    GaussianProposal q(mean, blocks);
    check(q, mean, lower);
}
