#include "runtime/variational/vb_refine.hpp"

#include "inference/clock.hpp"
#include "inference/diagnostics.hpp"
#include "inference/gaussian.hpp"
#include "inference/mixture_mh.hpp"
#include "inference/parallel.hpp"
#include "inference/psis.hpp"
#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <vector>

namespace vbn {

namespace {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

double weighted_quantile(const Vec& values, const Vec& weights, std::vector<Eigen::Index>& order, double p) {
    std::iota(order.begin(), order.end(), Eigen::Index{0});
    std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) { return values[a] < values[b]; });
    double cumulative = 0;
    for (Eigen::Index i : order) {
        cumulative += weights[i];
        if (cumulative >= p) return values[i];
    }
    return values[order.back()];
}

void check_options(const RefineOptions& o) {
    if (o.draws < 100)
        throw Error(ErrorKind::usage, fmt::format("the importance correction needs at least 100 draws, not {}", o.draws));
    if (!(o.df > 0) || std::isnan(o.df))
        throw Error(ErrorKind::usage, fmt::format("the proposal's degrees of freedom must be > 0, not {}", o.df));
    if (!(o.widen > 0) || !std::isfinite(o.widen))
        throw Error(ErrorKind::usage, fmt::format("the proposal's widening must be a finite number > 0, not {}", o.widen));
    if (o.rounds < 1)
        throw Error(ErrorKind::usage, fmt::format("the importance correction needs at least 1 round, not {}", o.rounds));
    if (!(o.defensive >= 0 && o.defensive < 1))
        throw Error(ErrorKind::usage, fmt::format("the defensive component's weight must be in [0, 1), not {}", o.defensive));
    if (!(o.defensive_df > 0) || std::isnan(o.defensive_df))
        throw Error(ErrorKind::usage, fmt::format("the defensive component's degrees of freedom must be > 0, not {}", o.defensive_df));
    if (!(o.defensive_widen > 0) || !std::isfinite(o.defensive_widen))
        throw Error(ErrorKind::usage,
                    fmt::format("the defensive component's widening must be a finite number > 0, not {}", o.defensive_widen));
    if (!(o.ess >= 0) || !std::isfinite(o.ess))
        throw Error(ErrorKind::usage, fmt::format("the importance correction's ESS target must be a finite number >= 0, not {}", o.ess));
    if (!(o.move >= 0) || !std::isfinite(o.move))
        throw Error(ErrorKind::usage, fmt::format("the proposal's smallest move must be a finite number >= 0, not {}", o.move));
    if (o.threads < 0) throw Error(ErrorKind::usage, fmt::format("threads must be >= 0, not {}", o.threads));
    if (o.max_newton < 1)
        throw Error(ErrorKind::usage, fmt::format("the Newton iteration limit must be at least 1, not {}", o.max_newton));
}

// The importance proposal centred on mean with scale lower·lowerᵀ (already widened): the
// main t, and the defensive one when it has weight.
inference::MixtureProposal make_proposal(const Vec& mean, const Mat& lower, const RefineOptions& o) {
    std::vector<inference::GaussianProposal> parts{inference::GaussianProposal::from_cholesky(mean, lower, o.df)};
    std::vector<double> weights{1 - o.defensive};
    if (o.defensive > 0) {
        parts.push_back(inference::GaussianProposal::from_cholesky(mean, (o.defensive_widen / o.widen) * lower, o.defensive_df));
        weights.push_back(o.defensive);
    }
    return inference::MixtureProposal(std::move(parts), std::move(weights));
}

// Draws the importance draws of one round into draws (its columns from 0) in batches until
// their raw ESS reaches options.ess or there are options.draws, and their log weights
// log p(θ | x) − log q(θ) into log_w; returns how many. The draws are made in order on this
// thread; their log densities are evaluated in blocks of columns spread over the threads
// (Target::log_densities, one workspace per thread), each weight a function of its own draw.
long draw_round(const Target& target, inference::MixtureProposal& q, const RefineOptions& options, int threads,
                inference::Rng& rng, std::vector<Target::Workspace>& ws, Mat& draws, Vec& log_w, Vec& log_q) {
    constexpr long first_batch = 500, batch = 250, block = 16;
    long s = 0;
    while (s < options.draws) {
        const long take = std::min(options.draws - s, s == 0 ? first_batch : batch);
        for (long i = s; i < s + take; ++i) {
            auto x = draws.col(i);
            q.sample(rng, x);
            log_q[i] = q.log_density(x);
        }
        const long blocks = (take + block - 1) / block;
        inference::parallel_ranges(threads, static_cast<std::size_t>(blocks), [&](std::size_t from, std::size_t to, std::size_t part) {
            for (auto k = static_cast<long>(from); k < static_cast<long>(to); ++k) {
                const long begin = s + k * block, len = std::min(block, s + take - begin);
                target.log_densities(draws.middleCols(begin, len), log_w.segment(begin, len), ws[part]);
            }
        });
        log_w.segment(s, take) -= log_q.segment(s, take);
        s += take;
        if (options.ess > 0 && inference::importance_ess(log_w.head(s)) >= options.ess) break;
    }
    return s;
}

}  // namespace

Mat negative_hessian(const Target& target, const Vec& theta, Target::Workspace& ws, bool exact_prior_curvature) {
    const auto d = static_cast<Eigen::Index>(target.dim());
    Mat h = Mat::Zero(d, d);
    Vec xp = theta, xm = theta, gp(d), gm(d);
    auto difference = [&](Eigen::Index k) {
        // A power of two near 1e-5 · scale keeps x ± step exact in binary.
        const double step = std::ldexp(1.0, std::ilogb(1e-5 * std::max(1.0, std::abs(theta[k]))));
        xp[k] = theta[k] + step;
        xm[k] = theta[k] - step;
        target.log_density_gradient(xp, gp, ws);
        target.log_density_gradient(xm, gm, ws);
        h.col(k) = (gm - gp) / (2 * step);
        xp[k] = xm[k] = theta[k];
    };
    for (int b = 0; b < target.blocks(); ++b) {
        const int offset = target.block_offset(b), size = target.block_size(b);
        // A complete block's terms involve no other block: its Hessian is block-diagonal and exact.
        if (target.complete_block(b)) {
            h.block(offset, offset, size, size) =
                target.complete_block_negative_hessian(b, theta, ws, exact_prior_curvature);
            continue;
        }
        for (Eigen::Index k = offset; k < offset + size; ++k) difference(k);
    }
    // Learned scales (log τ, after the blocks) couple the weights they scale.
    for (Eigen::Index k = target.scale_offset(); k < d; ++k) difference(k);
    return 0.5 * (h + h.transpose());
}

namespace {
// The Laplace covariance at a mode from Newton's factorised negative Hessian. Where the prior
// has Student-t entries Newton used the scale mixture's curvature, larger than the exact one
// away from the location; the exact negative Hessian is taken when it is positive definite
// (as at a strict mode), so the proposal is not too narrow in a long tail.
Mat laplace_cov(const Target& target, const Vec& mode, const Eigen::LLT<Mat>& newton, Target::Workspace& ws) {
    const Mat identity = Mat::Identity(mode.size(), mode.size());
    if (target.heavy_tailed_prior()) {
        const Eigen::LLT<Mat> exact(negative_hessian(target, mode, ws, true));
        if (exact.info() == Eigen::Success) return exact.solve(identity);
    }
    return newton.solve(identity);
}

// The weighted 5%, 50% and 95% quantiles and E|θ_k| of every parameter over the columns of
// draws.
void fill_quantiles(const Eigen::Ref<const Mat>& draws, const Vec& w, RefinedPosterior& r) {
    const Eigen::Index d = draws.rows();
    r.mean_abs = draws.cwiseAbs() * w;
    r.q5.resize(d);
    r.q50.resize(d);
    r.q95.resize(d);
    std::vector<Eigen::Index> order(sz(draws.cols()));
    for (Eigen::Index k = 0; k < d; ++k) {
        const Vec values = draws.row(k).transpose();
        r.q5[k] = weighted_quantile(values, w, order, 0.05);
        r.q50[k] = weighted_quantile(values, w, order, 0.5);
        r.q95[k] = weighted_quantile(values, w, order, 0.95);
    }
}

// E[τ], sd[τ] and the mean's Monte Carlo error of each learned scale from draws of log τ
// with normalised weights w; with run_mcse (the tempered runs', of log τ) by the delta method
// instead of from the weights.
void fill_scale_moments(const Target& target, const Eigen::Ref<const Mat>& draws, const Vec& w, RefinedPosterior& r,
                        const Vec* run_mcse = nullptr) {
    const int n = target.scales(), first = target.scale_offset();
    r.scale_mean.resize(n);
    r.scale_sd.resize(n);
    r.scale_mcse.resize(n);
    for (int j = 0; j < n; ++j) {
        const Vec tau = draws.row(first + j).transpose().array().exp();
        const double mean = w.dot(tau);
        const Vec dev = tau.array() - mean;
        r.scale_mean[j] = mean;
        r.scale_sd[j] = std::sqrt(w.dot(dev.cwiseAbs2()));
        r.scale_mcse[j] = run_mcse ? mean * (*run_mcse)[first + j] : std::sqrt(w.cwiseAbs2().dot(dev.cwiseAbs2()));
    }
}

// The tempered runs' answer in place of the importance weights': moments of the pooled
// particles, each mean's Monte Carlo error from the spread of the runs' means (the particles of
// a run are correlated by resampling), and the evidence as the mean of the runs' estimates.
// The mean and covariance of equally weighted draws (one per column).
void take_pooled_moments(const Mat& draws, RefinedPosterior& r) {
    r.mean = draws.rowwise().mean();
    const Mat centred = draws.colwise() - r.mean;
    r.cov = centred * centred.transpose() / static_cast<double>(draws.cols());
}

void take_tempered(const Target& target, const TemperedDraws& td, RefinedPosterior& r) {
    const auto runs = static_cast<double>(td.run_means.size());
    const Eigen::Index n = td.draws.cols();
    take_pooled_moments(td.draws, r);
    Vec spread = Vec::Zero(r.mean.size());
    for (const Vec& m : td.run_means) spread += (m - r.mean).cwiseAbs2();
    r.mcse = (spread / (runs - 1) / runs).cwiseSqrt();
    fill_scale_moments(target, td.draws, Vec::Constant(n, 1.0 / static_cast<double>(n)), r, &r.mcse);
    const double top = *std::max_element(td.run_log_evidence.begin(), td.run_log_evidence.end());
    Vec z(static_cast<Eigen::Index>(td.run_log_evidence.size()));
    for (std::size_t i = 0; i < td.run_log_evidence.size(); ++i) z[static_cast<Eigen::Index>(i)] = std::exp(td.run_log_evidence[i] - top);
    const double mean_z = z.mean();
    r.log_evidence = target.log_constant() + top + std::log(mean_z);
    // delta method: se(log Z̄) = sd(Z_r) / (√R Z̄)
    r.log_evidence_se = std::sqrt((z.array() - mean_z).square().sum() / (runs - 1) / runs) / mean_z;
    r.tempered = true;
    r.temperatures = td.temperatures;
    r.runs = static_cast<int>(td.run_means.size());
    r.particles = static_cast<int>(n / td.run_means.size());
    r.runs_rhat = td.max_rhat;
    r.acceptance = td.acceptance;
    r.sweeps = td.sweeps;
    r.gradients = td.gradients;
    r.ess = static_cast<double>(n);
}
}  // namespace

namespace {
// Where log p is not concave (near a hidden node's symmetric point, whose weights are 0),
// the Levenberg-shifted Newton step is damped by the shift and crawls: on the two-layer SBN of
// tests/corpus it was still 12.5 below the mode after 30 steps from the VB mean. The step moves
// instead along the direction of most negative curvature, the eigenvector v of the negative
// Hessian h with the smallest eigenvalue −λ < 0 (More & Sorensen 1979). Along v the quadratic
// model gains α g·v + ½ α² λ; α starts at 2 / √λ and is halved until log p rises by at least
// a tenth of the model's gain, or doubled while log p goes on rising. Returns whether it moved.
bool curvature_step(const Target& target, const Mat& h, const Vec& grad, Vec& x, double& lp, Target::Workspace& ws) {
    const Eigen::SelfAdjointEigenSolver<Mat> eig(h);
    if (eig.info() != Eigen::Success || !(eig.eigenvalues()[0] < 0)) return false;
    const double lambda = -eig.eigenvalues()[0];
    Vec v = eig.eigenvectors().col(0);
    if (grad.dot(v) < 0) v = -v;
    const auto gain = [&](double alpha) { return alpha * grad.dot(v) + 0.5 * alpha * alpha * lambda; };
    const auto at = [&](double alpha) { return target.log_density(x + alpha * v, ws); };
    double alpha = 2 / std::sqrt(lambda), best = at(alpha);
    while (!(std::isfinite(best) && best >= lp + 0.1 * gain(alpha))) {
        alpha /= 2;
        if (alpha < 1e-6) return false;
        best = at(alpha);
    }
    // Far from the mode the curvature along v changes slowly: go on doubling while log p rises.
    for (int k = 0; k < 30; ++k) {
        const double further = at(2 * alpha);
        if (!(std::isfinite(further) && further > best)) break;
        alpha *= 2;
        best = further;
    }
    x += alpha * v;
    lp = best;
    return true;
}
}  // namespace

NewtonMode posterior_mode(const Target& target, const Vec& start, int max_iterations) {
    auto ws = target.make_workspace();
    const auto d = static_cast<Eigen::Index>(target.dim());
    NewtonMode out;
    out.mode = start;
    Vec grad(d), step(d), next(d);
    double lp = target.log_density_gradient(out.mode, grad, ws);
    if (!std::isfinite(lp) || !grad.allFinite()) return out;
    Eigen::LLT<Mat> llt;
    const Mat identity = Mat::Identity(d, d);
    for (int it = 1; it <= max_iterations; ++it) {
        const Mat h = negative_hessian(target, out.mode, ws);
        llt.compute(h);
        // Where the log posterior is not concave (a hidden node's saddle), a Levenberg shift
        // makes the step an ascent direction.
        double shift = 0;
        const double scale = std::max(1.0, h.diagonal().cwiseAbs().maxCoeff());
        while (llt.info() != Eigen::Success) {
            shift = shift == 0 ? 1e-8 * scale : 10 * shift;
            if (shift > 1e12 * scale) return out;
            llt.compute(h + shift * identity);
        }
        step = llt.solve(grad);
        const double decrement = grad.dot(step);  // ≈ twice the gain of a full step
        if (shift > 0 && curvature_step(target, h, grad, out.mode, lp, ws)) {
            out.iterations = it;
            lp = target.log_density_gradient(out.mode, grad, ws);
            if (!std::isfinite(lp) || !grad.allFinite()) return out;
            continue;
        }
        // Converged when a full step would gain less than the tolerance, or less than one unit
        // in the last place of log p: on many rows the tolerance is below log p's rounding, and
        // the line search then accepts steps that change nothing (sbn2 of tests/corpus).
        const double ulp = std::numeric_limits<double>::epsilon() * (1 + std::abs(lp));
        if (shift == 0 && decrement <= std::max(1e-14 * std::max(1.0, static_cast<double>(d)), ulp)) {
            out.cov = laplace_cov(target, out.mode, llt, ws);
            out.converged = out.cov.allFinite();
            return out;
        }
        double t = 1;
        bool accepted = false;
        for (int half = 0; half < 60 && !accepted; ++half, t /= 2) {
            next = out.mode + t * step;
            const double lp_next = target.log_density(next, ws);
            accepted = std::isfinite(lp_next) && lp_next >= lp + 1e-4 * t * decrement;
        }
        if (!accepted) {
            // No ascent along the Newton direction. When its predicted gain is below what a
            // double can resolve in log p, the mode is found to rounding; otherwise give up.
            if (shift == 0 && decrement <= 256 * ulp) {
                out.cov = laplace_cov(target, out.mode, llt, ws);
                out.converged = out.cov.allFinite();
            }
            return out;
        }
        out.mode = next;
        out.iterations = it;
        lp = target.log_density_gradient(out.mode, grad, ws);
        if (!std::isfinite(lp) || !grad.allFinite()) return out;
    }
    return out;
}

namespace {

// Where importance sampling fails (k̂ ≥ 0.7, or always when asked): the answer becomes the
// tempered runs' (runtime/variational/tempered.hpp), started at the proposal's main component.
// Over budget, the importance answer (draws, weights w) stands, flagged by its k̂.
void correct_by_tempering(const Target& target, const inference::GaussianProposal& from, const RefineOptions& options,
                          int threads, const Eigen::Ref<const Mat>& draws, const Vec& w, RefinedPosterior& r) {
    TemperOptions t = options.tempering;
    t.seed = options.seed;
    t.threads = threads;
    t.interrupt = options.interrupt;
    if (options.note)
        options.note(fmt::format("the importance correction's k-hat is {:.2f}{}: correcting by tempering instead ({} runs of "
                                 "{} particles)",
                                 r.pareto_k, r.pareto_k < 0.7 ? "" : " (above 0.7)", t.runs, t.particles));
    try {
        const TemperedDraws td = temper(target, from, t);
        take_tempered(target, td, r);
        fill_quantiles(td.draws, Vec::Constant(td.draws.cols(), 1.0 / static_cast<double>(td.draws.cols())), r);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;
        r.tempering_stopped = e.what();
        fill_quantiles(draws, w, r);
        fill_scale_moments(target, draws, w, r);
    }
}

}  // namespace

RefinedPosterior refine(const Target& target, const VbFit& fit, const RefineOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    check_options(options);
    const auto d = static_cast<Eigen::Index>(target.dim());
    if (d == 0) throw Error(ErrorKind::usage, "the model has no parameters: there is no posterior to correct");
    if (fit.mean.size() != d || fit.variances().size() != d)
        throw Error(ErrorKind::usage, "the variational fit does not have the target's dimension");
    RefinedPosterior r;
    r.mode = posterior_mode(target, fit.mean, options.max_newton);
    r.from_mode = r.mode.converged;
    std::optional<inference::MixtureProposal> q;
    Mat lower;  // the main component's scale factor, widened
    try {
        inference::GaussianProposal base = r.from_mode ? inference::GaussianProposal(r.mode.mode, r.mode.cov, options.df)
                                                       : fit.proposal(options.df);
        base.inflate(options.widen * options.widen);
        lower = base.cholesky();
        q.emplace(make_proposal(base.mean(), lower, options));
    } catch (const std::invalid_argument& e) {
        throw Error(ErrorKind::inference, fmt::format("the importance correction has no usable proposal: {}", e.what()));
    }

    const long cap = options.draws;
    const int threads = inference::threads_or_cores(options.threads);
    std::vector<Target::Workspace> ws;
    for (int t = 0; t < threads; ++t) ws.push_back(target.make_workspace());
    inference::Rng rng(options.seed, 0);
    Mat draws(d, cap);
    Vec log_w(cap), log_q(cap), w;
    Mat centred;
    Vec centre = q->component(0).mean();
    long s = 0;
    for (int round = 0; round < options.rounds; ++round) {
        if (round > 0) {
            // Adaptive importance sampling: the next proposal moves to the weighted mean of
            // this round (a skewed posterior's mean sits off its mode), keeping its scale:
            // a covariance estimated from a few hundred effective draws would be worse. A
            // move of under options.move scales would gain little ESS for a round's cost.
            if (!(r.pareto_k < 0.7)) break;
            const double shift = lower.triangularView<Eigen::Lower>().solve(r.mean - centre).norm();
            if (!(shift > options.move)) break;
            centre = r.mean;
            q.emplace(make_proposal(centre, lower, options));
        }
        s = draw_round(target, *q, options, threads, rng, ws, draws, log_w, log_q);
        auto lw = log_w.head(s);
        if (!(lw.maxCoeff() > -std::numeric_limits<double>::infinity()) || lw.hasNaN())
            throw Error(ErrorKind::inference, "the importance correction: every draw has zero posterior density");
        r.pareto_k = inference::pareto_smooth(lw);
        const double top = lw.maxCoeff();
        w = (lw.array() - top).exp();
        const double total = w.sum();
        w /= total;
        r.rounds = round + 1;
        r.draws = s;
        r.total_draws += s;
        r.ess = 1 / w.squaredNorm();
        r.log_evidence = target.log_constant() + top + std::log(total / static_cast<double>(s));
        r.log_evidence_se =
            std::sqrt(std::max(0.0, static_cast<double>(s) * w.squaredNorm() - 1) / static_cast<double>(s));
        inference::weighted_moments(draws.leftCols(s), w, r.mean, r.cov);
        centred = draws.leftCols(s).colwise() - r.mean;
        r.mcse = (centred.array().square().matrix() * w.cwiseAbs2()).cwiseSqrt();
    }
    const bool tempering = options.temper == RefineOptions::Temper::always ||
                           (options.temper == RefineOptions::Temper::when_needed && !(r.pareto_k < 0.7));
    if (tempering) correct_by_tempering(target, q->component(0), options, threads, draws.leftCols(s), w, r);
    else {
        fill_quantiles(draws.leftCols(s), w, r);
        fill_scale_moments(target, draws.leftCols(s), w, r);
    }
    r.seconds = inference::seconds_since(start);
    return r;
}

// Each parameter's draws as iterations × chains, for the chains' diagnostics; the pooled
// draws as d × n columns, for the same moments and weighted quantiles as the other answers.
void take_sampled(const Target& target, const std::vector<Mat>& chains, RefinedPosterior& r) {
    Eigen::Index len = std::numeric_limits<Eigen::Index>::max();
    for (const Mat& c : chains) len = std::min(len, c.rows());
    if (chains.empty() || len < 2) throw Error(ErrorKind::inference, "the sampled correction has no chain with two draws");
    const auto d = static_cast<Eigen::Index>(target.dim());
    const auto m = static_cast<Eigen::Index>(chains.size());
    const Eigen::Index n = len * m;
    Mat pooled(d, n);
    for (Eigen::Index c = 0; c < m; ++c) pooled.middleCols(c * len, len) = chains[sz(c)].topRows(len).transpose();
    take_pooled_moments(pooled, r);
    const Vec w = Vec::Constant(n, 1.0 / static_cast<double>(n));
    fill_quantiles(pooled, w, r);
    r.mcse.resize(d);
    r.sampled_rhat = 0;
    r.ess = std::numeric_limits<double>::infinity();
    Mat x(len, m);
    for (Eigen::Index k = 0; k < d; ++k) {
        for (Eigen::Index c = 0; c < m; ++c) x.col(c) = pooled.row(k).segment(c * len, len).transpose();
        const inference::ScalarDiagnostics s = inference::diagnose(x);
        r.mcse[k] = s.mcse_mean;
        // A constant parameter (no spread at all) has no R-hat; NaN must not pass as converged.
        r.sampled_rhat = std::isnan(s.rhat) ? std::numeric_limits<double>::infinity() : std::max(r.sampled_rhat, s.rhat);
        r.ess = std::min({r.ess, s.ess_bulk, s.ess_tail});
    }
    fill_scale_moments(target, pooled, w, r, &r.mcse);
    r.sampled = true;
    r.chains = static_cast<int>(m);
    r.sampled_draws = static_cast<long>(n);
}

std::string describe(const RefinedPosterior& r, const RefineOptions& options) {
    const std::string centre = r.from_mode
                                   ? fmt::format("the exact posterior mode (Newton, {} iterations) with the Laplace covariance",
                                                 r.mode.iterations)
                                   : "the VB mean and covariance (Newton found no mode)";
    const std::string defensive =
        options.defensive > 0 ? fmt::format(" ({:g}% from a t({}) at scale x {})", 100 * options.defensive, options.defensive_df,
                                            options.defensive_widen)
                              : "";
    if (r.sampled) {
        const std::string tempering =
            r.tempered ? fmt::format("tempering's runs disagreed (R-hat {:.3f})", r.runs_rhat)
                       : (r.tempering_stopped.empty() ? std::string("tempering was not tried") : r.tempering_stopped);
        return fmt::format("corrected posterior by sampling: importance sampling from a t({}) at {} gave k-hat {:.2f} and {}, "
                           "so the exact posterior was sampled as vbn fit does: {} chains of {}, {} draws, R-hat at most {:.3f}{}, "
                           "min(bulk, tail) ESS {:.0f}",
                           options.df, centre, r.pareto_k, tempering, r.chains, r.sampled_method, r.sampled_draws,
                           r.sampled_rhat, r.sampled_rhat <= 1.01 ? "" : " (ABOVE 1.01: the corrected numbers are NOT reliable)",
                           r.ess);
    }
    if (r.tempered)
        return fmt::format("corrected posterior by tempering: importance sampling from a t({}) at {} gave k-hat {:.2f}{}, so {} "
                           "runs of {} particles were carried from a t({}) there, scale x {}, to the exact posterior in up to {} "
                           "temperatures by HMC moves ({} sweeps, acceptance {:.0f}%, {} gradients); the runs {} (R-hat {:.3f})",
                           options.df, centre, r.pareto_k, r.pareto_k < 0.7 ? "" : " (above 0.7)", r.runs, r.particles,
                           options.tempering.start_df, options.tempering.start_widen, r.temperatures, r.sweeps,
                           100 * r.acceptance, r.gradients,
                           r.runs_rhat < 1.01 ? "agree" : "DISAGREE: the corrected numbers are NOT reliable", r.runs_rhat);
    const std::string until = options.ess > 0 ? fmt::format(" (until ESS {:g}, at most {})", options.ess, options.draws) : "";
    const std::string stopped = r.tempering_stopped.empty() ? "" : fmt::format(" ({}; run vbn fit)", r.tempering_stopped);
    return fmt::format("importance-corrected posterior: {} draws{} from a t({}) at {}, scale x {}{}; Pareto-smoothed weights, "
                       "k-hat {:.2f} ({}), ESS {:.0f}{}{}",
                       r.draws, until, options.df, centre, options.widen, defensive, r.pareto_k,
                       r.pareto_k < 0.7 ? "reliable below 0.7" : "ABOVE 0.7: the corrected numbers are NOT reliable", r.ess,
                       r.rounds > 1 ? fmt::format(" (round {}: proposal moved to the weighted mean)", r.rounds) : "", stopped);
}

}  // namespace vbn
