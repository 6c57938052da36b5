// Symmetry jumps (inference/symmetry_jump.hpp): the move's acceptance is the exact ratio
// p(g x) / p(x), the set of flips is the group the generators make, and a random walk that
// cannot cross between two mirrored modes samples their mixture in the right proportion once
// it is followed by the jump. Tolerances: 4 Monte Carlo standard errors (batch means).
#include "inference/kernel_combinators.hpp"
#include "inference/random_walk.hpp"
#include "inference/symmetry_jump.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

using namespace vbn::inference;

namespace {

// w N(m, s² I) + (1 − w) N(−m, s² I) in 2-D: mirrored modes under the flip of both coordinates,
// separated by |m|/s = 7.2 sd, which a random walk with sd-sized steps does not cross.
class MirroredModes : public Density {
public:
    explicit MirroredModes(double w) : w_(w) {}
    int dim() const override { return 2; }
    double log_density(const Eigen::VectorXd& x) override {
        const double a = std::log(w_) - 0.5 * (x - m_).squaredNorm() / (s_ * s_);
        const double b = std::log(1 - w_) - 0.5 * (x + m_).squaredNorm() / (s_ * s_);
        const double top = std::max(a, b);
        return top + std::log(std::exp(a - top) + std::exp(b - top));
    }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        grad.setZero(2);
        return log_density(x);
    }
    Eigen::Vector2d m_{3.0, 2.0};
    double s_ = 0.5;

private:
    double w_;
};

// A kernel that never moves: the jump alone then decides each step.
class Stay : public Kernel {
public:
    void step(State&, Density&, Rng&, TransitionInfo& info) override { info.accept_stat = 1; }
    std::unique_ptr<Kernel> clone() const override { return std::make_unique<Stay>(*this); }
    void collect_stats(std::vector<KernelStats>& out) const override { out.push_back({"stay", 0, 0}); }
    std::string name() const override { return "stay"; }
};

}  // namespace

TEST_CASE("symmetry jump: the acceptance probability is the exact ratio p(g x) / p(x)") {
    MirroredModes p(0.8);
    SymmetryJump jump(std::make_unique<Stay>(), {{0, 1}});
    Rng rng(3, 0);
    for (const Eigen::Vector2d& x : {Eigen::Vector2d(3.1, 1.8), Eigen::Vector2d(-2.7, -2.4), Eigen::Vector2d(0.4, -0.2)}) {
        State s{x, p.log_density(x)};
        const Eigen::VectorXd gx = -x;
        const double exact = std::min(1.0, std::exp(p.log_density(gx) - p.log_density(x)));
        const double before = s.lp;
        const double a = jump.jump(s, p, rng);
        CHECK(a == doctest::Approx(exact).epsilon(1e-12));
        // The state moved to g x or stayed, with lp in step.
        CHECK(((s.x - gx).norm() == 0 || (s.x - x).norm() == 0));
        CHECK(s.lp == doctest::Approx(s.x.isApprox(gx) ? p.log_density(gx) : before));
    }
    // From the major mode's centre the ratio is (1 − w) / w = 0.25; over many tries the jump is
    // accepted at that rate (binomial sd sqrt(0.25 · 0.75 / 20000) = 0.003).
    long accepted = 0;
    const int tries = 20000;
    for (int i = 0; i < tries; ++i) {
        State s{Eigen::Vector2d(3, 2), 0};
        s.lp = p.log_density(s.x);
        jump.jump(s, p, rng);
        accepted += s.x[0] < 0;
    }
    CHECK(static_cast<double>(accepted) / tries == doctest::Approx(0.25).epsilon(4 * 0.003 / 0.25));
}

namespace {

std::vector<std::vector<int>> negated_sets(const SymmetryJump& jump) {
    std::vector<std::vector<int>> out;
    for (const SignedPermutation& g : jump.moves()) {
        REQUIRE(g.negation_only());
        out.push_back(g.support());
    }
    return out;
}

}  // namespace

TEST_CASE("symmetry jump: the flips are every non-empty product of the generators") {
    SymmetryJump two(std::make_unique<Stay>(), {{0, 2}, {2, 3}});
    CHECK(negated_sets(two) == std::vector<std::vector<int>>{{0, 2}, {2, 3}, {0, 3}});
    // Generators whose product is the identity leave it out, and no move is listed twice (a
    // move listed twice would be proposed twice as often as its inverse).
    SymmetryJump same(std::make_unique<Stay>(), {{1}, {1}});
    CHECK(negated_sets(same) == std::vector<std::vector<int>>{{1}});
    std::vector<std::vector<int>> many;
    for (int k = 0; k < 10; ++k) many.push_back({k});
    CHECK(SymmetryJump(std::make_unique<Stay>(), many).moves().size() == 10);
    CHECK_THROWS_AS(SymmetryJump(std::make_unique<Stay>(), std::vector<std::vector<int>>{{}}), std::invalid_argument);
    CHECK_THROWS_AS(SymmetryJump(std::make_unique<Stay>(), std::vector<std::vector<int>>{}), std::invalid_argument);
}

TEST_CASE("symmetry jump after a random walk: the mass of the mirrored minor mode within Monte Carlo error") {
    MirroredModes p(0.9);
    RandomWalk rw(Eigen::MatrixXd::Identity(2, 2) * 0.25);
    SymmetryJump kernel(rw.clone(), {{0, 1}});
    // The random walk alone, started in the major mode, never reaches the minor one.
    for (int with_jump = 0; with_jump < 2; ++with_jump) {
        std::unique_ptr<Kernel> k = with_jump ? kernel.clone() : rw.clone();
        Rng rng(11, 0);
        State s{Eigen::Vector2d(3, 2), 0};
        s.lp = p.log_density(s.x);
        TransitionInfo info;
        const int batches = 50, per_batch = 2000;
        Eigen::VectorXd batch_mean(batches);
        for (int b = 0; b < batches; ++b) {
            long minor = 0;
            for (int i = 0; i < per_batch; ++i) {
                k->step(s, p, rng, info);
                CHECK_MESSAGE(std::abs(s.lp - p.log_density(s.x)) < 1e-9, "lp out of step");
                minor += s.x[0] < 0;
            }
            batch_mean[b] = static_cast<double>(minor) / per_batch;
        }
        const double mass = batch_mean.mean();
        const double se = std::sqrt((batch_mean.array() - mass).square().sum() / (batches - 1) / batches);
        CAPTURE(mass);
        CAPTURE(se);
        if (with_jump) {
            CHECK(std::abs(mass - 0.1) <= 4 * std::max(se, 1e-3));
            std::vector<KernelStats> stats;
            k->collect_stats(stats);
            REQUIRE(stats.size() == 2);
            CHECK(stats[1].name == "symmetry jump");
            CHECK(stats[1].proposed == batches * per_batch);
        } else {
            CHECK(mass == 0);
        }
    }
}

namespace {

// Four modes N(R^k m, s² I), k = 0 … 3, with R the quarter turn (x, y) → (−y, x) and weights
// w_k: R is a signed permutation that is not its own inverse, so the jump proposes R, R² and
// R³ (the group it generates) and must still leave the mixture invariant.
class TurnedModes : public Density {
public:
    int dim() const override { return 2; }
    double log_density(const Eigen::VectorXd& x) override {
        double top = -1e300, terms[4];
        Eigen::Vector2d c = m_;
        for (int k = 0; k < 4; ++k) {
            terms[k] = std::log(w_[k]) - 0.5 * (x - c).squaredNorm() / (s_ * s_);
            top = std::max(top, terms[k]);
            c = Eigen::Vector2d(-c[1], c[0]);
        }
        double sum = 0;
        for (double t : terms) sum += std::exp(t - top);
        return top + std::log(sum);
    }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        grad.setZero(2);
        return log_density(x);
    }
    // Which mode x is nearest: the quadrant of its angle from m's.
    int mode_of(const Eigen::Vector2d& x) const {
        int best = 0;
        double best_d = 1e300;
        Eigen::Vector2d c = m_;
        for (int k = 0; k < 4; ++k) {
            if ((x - c).squaredNorm() < best_d) best_d = (x - c).squaredNorm(), best = k;
            c = Eigen::Vector2d(-c[1], c[0]);
        }
        return best;
    }
    Eigen::Vector2d m_{3.0, 1.0};
    double s_ = 0.4;
    double w_[4] = {0.5, 0.3, 0.15, 0.05};
};

}  // namespace

TEST_CASE("symmetry jump with a quarter turn: four modes in proportion to their weights") {
    TurnedModes p;
    const SignedPermutation turn = compose(SignedPermutation::negation({0}), SignedPermutation::permutation({1, 0}));
    {
        const Eigen::VectorXd x = Eigen::Vector2d(3, 1);
        Eigen::VectorXd y;
        turn.apply(x, y);
        REQUIRE(y.isApprox(Eigen::Vector2d(-1, 3)));
    }
    RandomWalk rw(Eigen::MatrixXd::Identity(2, 2) * 0.09);
    SymmetryJump kernel(rw.clone(), std::vector<SignedPermutation>{turn});
    REQUIRE(kernel.moves().size() == 3);
    CHECK(kernel.name().find("3 moves") != std::string::npos);
    Rng rng(5, 0);
    State s{Eigen::Vector2d(3, 1), 0};
    s.lp = p.log_density(s.x);
    TransitionInfo info;
    const int batches = 50, per_batch = 2000;
    Eigen::MatrixXd share(batches, 4);
    for (int b = 0; b < batches; ++b) {
        Eigen::Vector4d count = Eigen::Vector4d::Zero();
        for (int i = 0; i < per_batch; ++i) {
            kernel.step(s, p, rng, info);
            count[p.mode_of(s.x)] += 1;
        }
        share.row(b) = count.transpose() / per_batch;
    }
    for (int k = 0; k < 4; ++k) {
        const double mass = share.col(k).mean();
        const double se = std::sqrt((share.col(k).array() - mass).square().sum() / (batches - 1) / batches);
        CAPTURE(k);
        CAPTURE(mass);
        CAPTURE(se);
        CHECK(std::abs(mass - p.w_[k]) <= 4 * std::max(se, 1e-3));
        CHECK(se < 0.01);
    }
}
