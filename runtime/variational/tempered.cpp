#include "runtime/variational/tempered.hpp"

#include "inference/parallel.hpp"
#include "inference/psis.hpp"
#include "inference/rng.hpp"
#include "runtime/error.hpp"

#include <Eigen/Cholesky>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace vbn {

namespace {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;
constexpr double neg_inf = -std::numeric_limits<double>::infinity();

void check_options(const TemperOptions& o) {
    const auto bad = [](const std::string& what) { throw Error(ErrorKind::usage, "tempering: " + what); };
    if (o.particles < 50) bad(fmt::format("needs at least 50 particles, not {}", o.particles));
    if (o.runs < 2) bad(fmt::format("needs at least 2 runs, not {}", o.runs));
    if (!(o.ess_fraction > 0 && o.ess_fraction < 1)) bad(fmt::format("the ESS fraction must be in (0, 1), not {}", o.ess_fraction));
    if (!(o.start_widen > 0) || !std::isfinite(o.start_widen)) bad(fmt::format("the widening must be > 0, not {}", o.start_widen));
    if (!(o.start_df > 0) || !std::isfinite(o.start_df)) bad(fmt::format("the degrees of freedom must be > 0, not {}", o.start_df));
    if (o.leapfrog_steps < 1) bad(fmt::format("needs at least 1 leapfrog step, not {}", o.leapfrog_steps));
    if (!(o.step_size > 0) || !std::isfinite(o.step_size)) bad(fmt::format("the step size must be > 0, not {}", o.step_size));
    if (!(o.target_acceptance > 0 && o.target_acceptance < 1))
        bad(fmt::format("the target acceptance must be in (0, 1), not {}", o.target_acceptance));
    if (!(o.correlation > 0 && o.correlation < 1)) bad(fmt::format("the correlation must be in (0, 1), not {}", o.correlation));
    if (o.max_sweeps < 1) bad(fmt::format("needs at least 1 sweep, not {}", o.max_sweeps));
    if (o.max_temperatures < 1) bad(fmt::format("needs at least 1 temperature, not {}", o.max_temperatures));
    if (o.max_gradients < 1) bad(fmt::format("needs a budget of at least 1 gradient, not {}", o.max_gradients));
    if (o.threads < 0) bad(fmt::format("threads must be >= 0, not {}", o.threads));
}

struct MoveStats {
    long sweeps = 0, proposed = 0, accepted = 0, gradients = 0;
};

// Between sweeps: Ctrl-C, and the run's share of the budget of gradients (so that a model too
// costly to temper is given up in the first run, not the last).
void check_stop(const TemperOptions& o, long run_gradients, double beta) {
    if (o.interrupt && o.interrupt->load(std::memory_order_relaxed))
        throw Error(ErrorKind::cancelled, "interrupted during the tempered correction");
    if (run_gradients > o.max_gradients / o.runs)
        throw Error(ErrorKind::limit, fmt::format("tempering stopped at its budget of {} gradients per run, at beta {:.3g} of 1",
                                                  o.max_gradients / o.runs, beta));
}

// The reference r₀ = t_ν(m, L L'): its log density and gradient
// ∇ log r₀(θ) = −(ν + d) / (ν + |u|²) · L⁻ᵀ u, u = L⁻¹(θ − m).
class Reference {
public:
    Reference(const Vec& centre, const Mat& lower, double df)
        : t_(inference::GaussianProposal::from_cholesky(centre, lower, df)), lower_(lower), df_(df) {}
    double log_density(const Eigen::Ref<const Vec>& x, Vec& u, Vec& grad) const {
        const double lr = t_.whiten(x, u);
        grad = u;
        lower_.transpose().triangularView<Eigen::Upper>().solveInPlace(grad);
        grad *= -(df_ + static_cast<double>(u.size())) / (df_ + u.squaredNorm());
        return lr;
    }
    double log_density(const Eigen::Ref<const Vec>& x) { return t_.log_density(x); }
    void sample(inference::Rng& rng, Eigen::Ref<Vec> out) { t_.sample(rng, out); }

private:
    inference::GaussianProposal t_;
    Mat lower_;
    double df_;
};

// The particles of one run at temperature β: positions, log r₀ and log p (−∞ where p is 0).
struct Particles {
    Mat x;
    Vec lr, lp;
};

// Per thread: a workspace of the target and the vectors of one HMC trajectory.
struct Scratch {
    Target::Workspace ws;
    Vec x, mom, grad_u, grad_p, grad_r, u;
};

// The next temperature after beta: the largest b ≤ 1 whose incremental weights
// exp((b − beta) δ), δ = log p − log r₀, keep an ESS of fraction · N (bisection; the ESS
// falls as b grows).
double next_temperature(const Vec& delta, double beta, double fraction) {
    const double want = fraction * static_cast<double>(delta.size());
    if (inference::importance_ess((1 - beta) * delta) >= want) return 1;
    double lo = beta, hi = 1;
    for (int i = 0; i < 60 && hi - lo > 1e-12; ++i) {
        const double mid = 0.5 * (lo + hi);
        (inference::importance_ess((mid - beta) * delta) >= want ? lo : hi) = mid;
    }
    return std::max(lo, beta + 1e-12);
}

// Systematic resampling by w ∝ exp(log_w) (one uniform for all particles).
void resample(Particles& p, const Vec& log_w, inference::Rng& rng) {
    const Eigen::Index n = log_w.size();
    const Vec w = (log_w.array() - log_w.maxCoeff()).exp();
    const double step = w.sum() / static_cast<double>(n);
    double u = rng.uniform() * step, cumulative = w[0];
    Particles out{Mat(p.x.rows(), n), Vec(n), Vec(n)};
    Eigen::Index j = 0;
    for (Eigen::Index i = 0; i < n; ++i, u += step) {
        while (cumulative < u && j + 1 < n) cumulative += w[++j];
        out.x.col(i) = p.x.col(j);
        out.lr[i] = p.lr[j];
        out.lp[i] = p.lp[j];
    }
    p = std::move(out);
}

// The particles' covariance's lower Cholesky factor (a ridge added if it is singular, as when
// resampling left fewer distinct particles than dimensions).
Mat particle_scale(const Mat& x) {
    const Vec mean = x.rowwise().mean();
    const Mat c = x.colwise() - mean;
    Mat cov = c * c.transpose() / static_cast<double>(x.cols());
    const double ridge = 1e-10 * std::max(1.0, cov.diagonal().maxCoeff());
    for (double r = ridge;; r *= 10) {
        Eigen::LLT<Mat> llt(cov);
        if (llt.info() == Eigen::Success) return llt.matrixL();
        cov.diagonal().array() += r;
    }
}

// The largest over parameters of the correlation, across particles, between positions x0
// before the sweeps and x now: near 0 once the moves have forgotten where they started.
double largest_correlation(const Mat& x0, const Mat& x) {
    double worst = 0;
    for (Eigen::Index k = 0; k < x.rows(); ++k) {
        const double ma = x0.row(k).mean(), mb = x.row(k).mean();
        double saa = 0, sbb = 0, sab = 0;  // centred sums of squares and products, no temporaries
        for (Eigen::Index j = 0; j < x.cols(); ++j) {
            const double a = x0(k, j) - ma, b = x(k, j) - mb;
            saa += a * a;
            sbb += b * b;
            sab += a * b;
        }
        const double denom = std::sqrt(saa * sbb);
        if (denom > 0) worst = std::max(worst, std::abs(sab) / denom);
    }
    return worst;
}

// What one sweep draws on the calling thread before the particles move in parallel, so that
// the result does not depend on the number of threads: momenta, step jitters, uniforms.
struct SweepDraws {
    Mat momentum;
    Vec jitter, log_u;
};

// The HMC move of particle i for π_β with mass matrix (A A')⁻¹, i.e. leapfrog in u with
// θ = A u: log π_β = (1 − β) log r₀ + β log p, ∇_u = A' ∇_θ. Returns whether it was accepted.
bool hmc_particle(Particles& p, Eigen::Index i, double beta, double eps, const Mat& a, const Reference& r0,
                  const Target& target, const SweepDraws& draws, int steps, Scratch& s) {
    const auto log_pi = [&](const Vec& x, double& lr, double& lp) {
        lr = r0.log_density(x, s.u, s.grad_r);
        lp = target.log_density_gradient(x, s.grad_p, s.ws);
        s.grad_r = (1 - beta) * s.grad_r + beta * s.grad_p;  // in place: no temporary per leapfrog step
        s.grad_u.noalias() = a.transpose() * s.grad_r;
        return (1 - beta) * lr + beta * lp;
    };
    s.x = p.x.col(i);
    s.mom = draws.momentum.col(i);
    double lr = 0, lp = 0;
    const double start = log_pi(s.x, lr, lp);
    if (!std::isfinite(start)) return false;
    const double h0 = -start + 0.5 * s.mom.squaredNorm();
    const double e = eps * draws.jitter[i];
    double now = start;
    for (int step = 0; step < steps; ++step) {
        s.mom += 0.5 * e * s.grad_u;
        s.x.noalias() += e * (a * s.mom);
        now = log_pi(s.x, lr, lp);
        if (!std::isfinite(now) || !s.grad_u.allFinite()) return false;  // diverged: reject
        s.mom += 0.5 * e * s.grad_u;
    }
    if (!(draws.log_u[i] < h0 - (-now + 0.5 * s.mom.squaredNorm()))) return false;
    p.x.col(i) = s.x;
    p.lr[i] = lr;
    p.lp[i] = lp;
    return true;
}

// HMC sweeps over every particle for π_β, whitened by the particles' covariance after
// resampling, until no parameter's positions correlate more than options.correlation with
// where the sweeps began (at most options.max_sweeps). eps: the step size, tuned for the next
// temperature towards options.target_acceptance from this one's rate. run_start: the gradients
// counted before this run began.
void move(Particles& p, double beta, double& eps, const Reference& r0, const Target& target, std::vector<Scratch>& scratch,
          inference::Rng& rng, const TemperOptions& o, MoveStats& stats, long run_start) {
    const Eigen::Index d = p.x.rows(), n = p.x.cols();
    const Mat a = particle_scale(p.x);
    const Mat start = p.x;
    SweepDraws draws{Mat(d, n), Vec(n), Vec(n)};
    std::vector<char> took(static_cast<std::size_t>(n));
    long accepted = 0, proposed = 0;
    for (int sweep = 0; sweep < o.max_sweeps; ++sweep) {
        check_stop(o, stats.gradients - run_start, beta);
        for (Eigen::Index i = 0; i < n; ++i) {
            for (Eigen::Index k = 0; k < d; ++k) draws.momentum(k, i) = rng.normal();
            draws.jitter[i] = 0.8 + 0.4 * rng.uniform();  // varied lengths: no periodic orbits
            draws.log_u[i] = std::log(rng.uniform());
        }
        inference::parallel_ranges(static_cast<int>(scratch.size()), static_cast<std::size_t>(n),
                                   [&](std::size_t from, std::size_t to, std::size_t part) {
                                       for (auto i = static_cast<Eigen::Index>(from); i < static_cast<Eigen::Index>(to); ++i)
                                           took[static_cast<std::size_t>(i)] =
                                               hmc_particle(p, i, beta, eps, a, r0, target, draws, o.leapfrog_steps, scratch[part]);
                                   });
        accepted += std::count(took.begin(), took.end(), 1);
        proposed += n;
        ++stats.sweeps;
        stats.gradients += n * (o.leapfrog_steps + 1);
        if (largest_correlation(start, p.x) < o.correlation) break;
    }
    stats.proposed += proposed;
    stats.accepted += accepted;
    const double rate = static_cast<double>(accepted) / static_cast<double>(proposed);
    eps *= std::exp(std::clamp(rate - o.target_acceptance, -0.5, 0.5));
}

struct RunResult {
    Mat x;
    double log_evidence = 0;
    int temperatures = 0;
};

// log p of every particle, spread over the threads.
void evaluate(const Target& target, const Mat& x, Vec& lp, std::vector<Scratch>& scratch) {
    inference::parallel_ranges(static_cast<int>(scratch.size()), static_cast<std::size_t>(x.cols()),
                               [&](std::size_t from, std::size_t to, std::size_t part) {
                                   for (auto i = static_cast<Eigen::Index>(from); i < static_cast<Eigen::Index>(to); ++i) {
                                       const double v = target.log_density(x.col(i), scratch[part].ws);
                                       lp[i] = std::isfinite(v) ? v : neg_inf;  // NaN or +∞ is no density to trust
                                   }
                               });
}

// One run: particles from r₀, then tempering steps until β = 1.
RunResult run_once(Reference& r0, const Target& target, std::vector<Scratch>& scratch, inference::Rng& rng,
                   const TemperOptions& o, MoveStats& stats) {
    const Eigen::Index d = target.dim(), n = o.particles;
    Particles p{Mat(d, n), Vec(n), Vec(n)};
    for (Eigen::Index i = 0; i < n; ++i) {
        r0.sample(rng, p.x.col(i));
        p.lr[i] = r0.log_density(p.x.col(i));
    }
    evaluate(target, p.x, p.lp, scratch);
    if (!(p.lp.maxCoeff() > neg_inf))
        throw Error(ErrorKind::inference, "tempering: every draw from the reference t has zero posterior density");
    RunResult r;
    const long run_start = stats.gradients;
    double beta = 0, eps = o.step_size;
    while (beta < 1) {
        if (++r.temperatures > o.max_temperatures)
            throw Error(ErrorKind::limit,
                        fmt::format("tempering needed more than {} temperatures (it reached beta {:.3g})", o.max_temperatures, beta));
        const Vec delta = p.lp - p.lr;
        const double next = next_temperature(delta, beta, o.ess_fraction);
        const Vec log_w = (next - beta) * delta;
        // This step's factor of p(x) (up to the target's constant): the mean incremental weight.
        const double top = log_w.maxCoeff();
        r.log_evidence += top + std::log((log_w.array() - top).exp().mean());
        resample(p, log_w, rng);
        beta = next;
        move(p, beta, eps, r0, target, scratch, rng, o, stats, run_start);
    }
    r.x = std::move(p.x);
    return r;
}

// The largest R-hat over parameters, each run's particles taken as a chain (Gelman et al.'s
// between- and within-run variances).
double runs_rhat(const std::vector<Mat>& runs) {
    const auto m = static_cast<double>(runs.size());
    const auto n = static_cast<double>(runs.front().cols());
    double worst = 0;
    for (Eigen::Index k = 0; k < runs.front().rows(); ++k) {
        double within = 0;
        Vec means(static_cast<Eigen::Index>(runs.size()));
        for (std::size_t r = 0; r < runs.size(); ++r) {
            const auto row = runs[r].row(k).array();
            means[static_cast<Eigen::Index>(r)] = row.mean();
            within += (row - row.mean()).square().sum() / (n - 1);
        }
        within /= m;
        const double between = n * (means.array() - means.mean()).square().sum() / (m - 1);
        if (within > 0) worst = std::max(worst, std::sqrt(((n - 1) / n * within + between / n) / within));
    }
    return worst;
}

}  // namespace

TemperedDraws temper(const Target& target, const inference::GaussianProposal& centre, const TemperOptions& options) {
    check_options(options);
    if (centre.dim() != target.dim() || target.dim() == 0)
        throw Error(ErrorKind::usage, "tempering: the centre's dimension is not the target's");
    const int threads = inference::threads_or_cores(options.threads);
    const Eigen::Index d = target.dim();
    std::vector<Scratch> scratch;
    for (int t = 0; t < threads; ++t) scratch.push_back({target.make_workspace(), Vec(d), Vec(d), Vec(d), Vec(d), Vec(d), Vec(d)});
    Reference r0(centre.mean(), options.start_widen * centre.cholesky(), options.start_df);
    TemperedDraws out;
    out.draws.resize(d, static_cast<Eigen::Index>(options.runs) * options.particles);
    std::vector<Mat> runs;
    MoveStats stats;
    for (int r = 0; r < options.runs; ++r) {
        inference::Rng rng(options.seed, 100 + static_cast<std::uint64_t>(r));
        RunResult one = run_once(r0, target, scratch, rng, options, stats);
        out.draws.middleCols(static_cast<Eigen::Index>(r) * options.particles, options.particles) = one.x;
        out.run_means.push_back(one.x.rowwise().mean());
        out.run_log_evidence.push_back(one.log_evidence);
        out.temperatures = std::max(out.temperatures, one.temperatures);
        runs.push_back(std::move(one.x));
    }
    out.sweeps = stats.sweeps;
    out.gradients = stats.gradients;
    out.acceptance = static_cast<double>(stats.accepted) / static_cast<double>(std::max(1L, stats.proposed));
    out.max_rhat = runs_rhat(runs);
    return out;
}

}  // namespace vbn
