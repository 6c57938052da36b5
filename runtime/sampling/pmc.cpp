#include "runtime/sampling/pmc.hpp"

#include "inference/math.hpp"

#include "inference/gaussian.hpp"
#include "inference/parallel.hpp"
#include "inference/psis.hpp"
#include "lang/ir.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace vbn {

namespace {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

// Work over the rows of a round's draws is split in chunks of this many rows, fixed whatever
// the thread count, so each row's arithmetic (and with it the fit) does not depend on it.
constexpr std::size_t kRowChunk = 256;

// body(begin, count, part) for the row chunks of [0, rows), on up to `threads` threads; part
// says which thread (scratch may be kept per part).
template <class Body>
void for_row_chunks(int threads, Eigen::Index rows, Body body) {
    inference::parallel_chunks(threads, static_cast<std::size_t>(rows), kRowChunk,
                               [&](std::size_t begin, std::size_t end, std::size_t part) {
                                   body(static_cast<Eigen::Index>(begin), static_cast<Eigen::Index>(end - begin), part);
                               });
}

// One t component: location, lower Cholesky factor of the scale, log weight.
struct TComponent {
    Vec mean;
    Mat lower;
    double log_weight = 0;
    double df = 8;
    double log_norm = 0;  // log of the t density's normaliser, set by finish()

    bool gaussian() const { return std::isinf(df); }

    void finish() {
        const double d = static_cast<double>(mean.size());
        log_norm = (gaussian() ? -0.5 * d * std::log(2 * std::numbers::pi)
                               : inference::log_gamma(0.5 * (df + d)) - inference::log_gamma(0.5 * df) - 0.5 * d * std::log(df * std::numbers::pi)) -
                   lower.diagonal().array().log().sum();
    }

    double log_kernel(double delta, double d) const {
        return gaussian() ? -0.5 * delta : -0.5 * (df + d) * std::log1p(delta / df);
    }
};

// z = (x − μ) L^{-T} for the draws in the rows of x (forward substitution a column at a time,
// each column of the draws contiguous): z's rows are the whitened draws, |z_i|² their
// Mahalanobis distances². Eigen's triangular solve of a d × count right-hand side packs it as
// for a matrix product, several times the arithmetic's cost at the few dimensions PMC serves.
template <class Rows>
void whiten(const Rows& x, const TComponent& c, Mat& z) {
    const Eigen::Index d = x.cols();
    z = x.rowwise() - c.mean.transpose();
    for (Eigen::Index i = 0; i < d; ++i) {
        for (Eigen::Index j = 0; j < i; ++j) z.col(i) -= c.lower(i, j) * z.col(j);
        z.col(i) /= c.lower(i, i);
    }
}

struct TMixture {
    std::vector<TComponent> parts;

    // For the draws (rows of x) begin … begin+count−1 and every component k: terms(i, k) =
    // log π_k t_k(x_i) and delta(i, k) = the Mahalanobis distance² of x_i under component k,
    // a component at a time over those draws (whitened by forward substitution, whiten; the
    // vectorised log). terms and delta have x's rows and a column per component.
    void component_terms(const Mat& x, Eigen::Index begin, Eigen::Index count, Mat& terms, Mat& delta, Mat& scratch) const {
        const double d = static_cast<double>(x.cols());
        for (Eigen::Index k = 0; k < static_cast<Eigen::Index>(parts.size()); ++k) {
            const TComponent& c = parts[static_cast<std::size_t>(k)];
            whiten(x.middleRows(begin, count), c, scratch);
            auto dk = delta.col(k).segment(begin, count);
            dk = scratch.rowwise().squaredNorm();
            auto tk = terms.col(k).segment(begin, count).array();
            // log(1 + δ/ν) as the vectorised log of 1 + δ/ν, not log1p (scalar for doubles in
            // Eigen): δ ≥ 0, so the sum's rounding costs at most an ulp of 1 in the log, an
            // absolute error of 2e-16 in a log density, where log1p's care is for relative error.
            if (c.gaussian())
                tk = c.log_weight + c.log_norm - 0.5 * dk.array();
            else
                tk = c.log_weight + c.log_norm - 0.5 * (c.df + d) * (1 + dk.array() / c.df).log();
        }
    }

    // out[i] = log Σ_k π_k t_k(x_i) for the rows begin … begin+count−1 of x; terms and delta as
    // for component_terms.
    void log_density(const Mat& x, Eigen::Index begin, Eigen::Index count, Vec& out, Mat& terms, Mat& delta,
                     Mat& scratch) const {
        component_terms(x, begin, count, terms, delta, scratch);
        for (Eigen::Index i = begin; i < begin + count; ++i) {
            const double top = terms.row(i).maxCoeff();
            out[i] = std::isfinite(top) ? top + std::log((terms.row(i).array() - top).exp().sum()) : top;
        }
    }

    // One draw into out; z is scratch of the same size.
    void sample(inference::Rng& rng, Vec& out, Vec& z) const {
        double u = rng.uniform();
        std::size_t k = 0;
        while (k + 1 < parts.size() && (u -= std::exp(parts[k].log_weight)) > 0) ++k;
        const TComponent& c = parts[k];
        for (Eigen::Index j = 0; j < z.size(); ++j) z[j] = rng.normal();
        const double scale = c.gaussian() ? 1.0 : 1 / std::sqrt(inference::sample_chi_square(rng, c.df) / c.df);
        out.noalias() = c.lower * z;
        out = c.mean + scale * out;
    }

    inference::MixtureProposal proposal() const {
        std::vector<inference::GaussianProposal> components;
        std::vector<double> weights;
        for (const TComponent& c : parts) {
            components.push_back(inference::GaussianProposal::from_cholesky(c.mean, c.lower, c.df));
            weights.push_back(std::exp(c.log_weight));
        }
        return {std::move(components), std::move(weights)};
    }
};

bool cholesky(const Mat& cov, Mat& lower) {
    const Eigen::LLT<Mat> llt(cov);
    if (llt.info() != Eigen::Success) return false;
    lower = llt.matrixL();
    return lower.allFinite() && (lower.diagonal().array() > 0).all();
}

// The modes' Laplace masses, normalised, each at least 10% / modes (then renormalised).
std::vector<double> floored_laplace_weights(const std::vector<PosteriorMode>& modes) {
    std::vector<double> w = laplace_weights(modes);
    double total = 0;
    for (double& v : w) total += (v = std::max(v, 0.1 / static_cast<double>(modes.size())));
    for (double& v : w) v /= total;
    return w;
}

// (Σw)² / (N Σw²) from log weights; w receives the normalised weights (zeros where -inf).
double normalise(const std::vector<double>& log_w, std::vector<double>& w) {
    double top = -std::numeric_limits<double>::infinity();
    for (double v : log_w) top = std::max(top, v);
    w.assign(log_w.size(), 0.0);
    if (!std::isfinite(top)) return 0;
    double sum = 0, sum2 = 0;
    for (std::size_t i = 0; i < log_w.size(); ++i) {
        w[i] = std::isfinite(log_w[i]) ? std::exp(log_w[i] - top) : 0.0;
        sum += w[i];
        sum2 += w[i] * w[i];
    }
    for (double& v : w) v /= sum;
    return sum * sum / (static_cast<double>(log_w.size()) * sum2);
}

void weighted_moments(const Mat& x, const std::vector<double>& w, Vec& mean, Mat& cov) {
    const Eigen::Map<const Vec> wv(w.data(), static_cast<Eigen::Index>(w.size()));
    mean = x.transpose() * wv;
    const Mat centred = x.rowwise() - mean.transpose();
    cov = centred.transpose() * wv.asDiagonal() * centred;
}

// Adds a relative ridge so that a covariance from a few draws stays positive definite.
void regularise(Mat& cov) {
    const double scale = std::max(cov.trace() / static_cast<double>(cov.rows()), 1e-12);
    cov.diagonal().array() += 1e-9 * scale;
}

// Weighted k-means++ seeding: the first centre drawn by weight, each next one with
// probability ∝ w_i × (Mahalanobis distance to the nearest centre)².
std::vector<Vec> seed_centres(const Mat& x, const std::vector<double>& w, const Mat& cov_lower, int k,
                              inference::Rng& rng) {
    std::vector<Vec> centres;
    const auto n = static_cast<std::size_t>(x.rows());
    std::vector<double> d2(n, std::numeric_limits<double>::infinity());
    std::vector<double> p(n);
    Vec diff(x.cols());
    for (int c = 0; c < k; ++c) {
        double total = 0;
        for (std::size_t i = 0; i < n; ++i) total += p[i] = w[i] * (c == 0 ? 1.0 : d2[i]);
        if (!(total > 0)) break;
        double u = rng.uniform() * total;
        std::size_t pick = 0;
        while (pick + 1 < n && (u -= p[pick]) > 0) ++pick;
        centres.push_back(x.row(static_cast<Eigen::Index>(pick)).transpose());
        for (std::size_t i = 0; i < n; ++i) {
            diff = (x.row(static_cast<Eigen::Index>(i)) - centres.back().transpose()).transpose();
            cov_lower.triangularView<Eigen::Lower>().solveInPlace(diff);
            d2[i] = std::min(d2[i], diff.squaredNorm());
        }
    }
    return centres;
}

// Weighted EM for a mixture of t's with fixed df on draws x (rows) with normalised weights w.
// Components left with too little weight to estimate a covariance are dropped.
void em(TMixture& m, const Mat& x, const std::vector<double>& w, int iterations, int threads) {
    const Eigen::Index n = x.rows(), d = x.cols();
    const Eigen::Map<const Vec> wv(w.data(), n);
    Mat terms, delta, resp, scale;
    std::vector<Mat> scratch(static_cast<std::size_t>(std::max(threads, 1)));
    for (int it = 0; it < iterations && !m.parts.empty(); ++it) {
        const auto k_count = static_cast<Eigen::Index>(m.parts.size());
        // resp(i, k) = w_i ρ_ik, the responsibilities ρ a softmax of each row of the terms;
        // scale(i, k) = w_i ρ_ik u_ik with the t's latent scale u = (ν + d) / (ν + δ). Row by
        // row, so over chunks of rows on the threads.
        terms.resize(n, k_count);
        delta.resize(n, k_count);
        resp.resize(n, k_count);
        scale.resize(n, k_count);
        for_row_chunks(threads, n, [&](Eigen::Index begin, Eigen::Index count, std::size_t part) {
            m.component_terms(x, begin, count, terms, delta, scratch[part]);
            const Vec top = terms.middleRows(begin, count).rowwise().maxCoeff();
            auto r = resp.middleRows(begin, count);
            r = (terms.middleRows(begin, count).colwise() - top).array().exp().matrix();
            const Vec sum = r.rowwise().sum();
            for (Eigen::Index i = 0; i < count; ++i)
                r.row(i) *= std::isfinite(top[i]) && sum[i] > 0 ? wv[begin + i] / sum[i] : 0.0;
            for (Eigen::Index k = 0; k < k_count; ++k) {
                const TComponent& c = m.parts[static_cast<std::size_t>(k)];
                if (c.gaussian())
                    scale.col(k).segment(begin, count) = r.col(k);
                else
                    scale.col(k).segment(begin, count).array() =
                        r.col(k).array() * (c.df + static_cast<double>(d)) / (c.df + delta.col(k).segment(begin, count).array());
            }
        });
        // M-step, one component per index.
        std::vector<TComponent> fitted(static_cast<std::size_t>(k_count));
        std::vector<char> kept(static_cast<std::size_t>(k_count), 0);
        inference::parallel_ranges(threads, static_cast<std::size_t>(k_count), [&](std::size_t begin, std::size_t end, std::size_t) {
            for (std::size_t k = begin; k < end; ++k) {
                const auto kk = static_cast<Eigen::Index>(k);
                const double s0 = resp.col(kk).sum();
                const double s2 = resp.col(kk).squaredNorm();
                const double su = scale.col(kk).sum();
                // Fewer effective draws than a covariance needs: drop the component.
                if (!(s0 > 0) || !(su > 0) || s0 * s0 < static_cast<double>(d + 2) * 4 * s2) continue;
                TComponent& c = fitted[k];
                c.mean = x.transpose() * scale.col(kk) / su;
                const Mat centred = x.rowwise() - c.mean.transpose();
                Mat cov = centred.transpose() * scale.col(kk).asDiagonal() * centred / s0;
                regularise(cov);
                c.df = m.parts[k].df;
                if (!cholesky(cov, c.lower)) continue;
                c.log_weight = std::log(s0);
                c.finish();
                kept[k] = 1;
            }
        });
        std::vector<TComponent> next;
        double total = 0;
        for (std::size_t k = 0; k < fitted.size(); ++k)
            if (kept[k]) {
                total += std::exp(fitted[k].log_weight);
                next.push_back(std::move(fitted[k]));
            }
        if (next.empty()) return;  // keep the last good mixture
        for (TComponent& c : next) c.log_weight -= std::log(total);
        m.parts = std::move(next);
    }
}

}  // namespace

Eigen::VectorXd prior_mean(const ir::Graph& graph) {
    Vec mean(graph.dim);
    for (const ir::Block& b : graph.blocks) mean.segment(b.offset, b.size) = Eigen::Map<const Vec>(b.prior_mean.data(), b.size);
    return mean;
}

double heavy_prior_df(const ir::Graph& graph) {
    double df = std::numeric_limits<double>::infinity();
    for (const ir::Block& b : graph.blocks)
        for (double nu : b.prior_df)
            if (nu > 0) df = std::min(df, nu);
    return df;
}

void prior_gaussian(const ir::Graph& graph, Eigen::VectorXd& mean, Eigen::MatrixXd& cov) {
    mean = prior_mean(graph);
    cov = Mat::Zero(graph.dim, graph.dim);
    for (const ir::Block& b : graph.blocks) {
        cov.block(b.offset, b.offset, b.size, b.size) =
            Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(b.prior_cov.data(), b.size, b.size);
    }
}

std::vector<double> laplace_weights(const std::vector<PosteriorMode>& modes) {
    std::vector<double> w;
    double total = 0;
    for (const PosteriorMode& m : modes) total += w.emplace_back(std::exp(m.log_mass - modes.front().log_mass));
    for (double& v : w) v /= total;
    return w;
}

inference::MixtureProposal laplace_mixture(const std::vector<PosteriorMode>& modes, double df, double inflation) {
    if (modes.empty()) throw std::invalid_argument("laplace_mixture: no modes");
    std::vector<inference::GaussianProposal> components;
    for (const PosteriorMode& m : modes) {
        inference::GaussianProposal c(m.mode, m.cov, df);
        c.inflate(inflation);
        components.push_back(std::move(c));
    }
    return {std::move(components), floored_laplace_weights(modes)};
}

PmcFit fit_pmc_mixture(const Target& target, const std::vector<PosteriorMode>& modes, const Eigen::VectorXd& prior_mean,
                       const Eigen::MatrixXd& prior_cov, double start_df, double start_inflation, inference::Rng& rng,
                       const PmcOptions& o) {
    if (modes.empty()) throw std::invalid_argument("fit_pmc_mixture: no modes");
    if (o.components_per_mode < 1 || o.max_components < 1 || o.draws_per_dim < 1 || o.rounds < 0 || o.min_rounds < 0 ||
        o.em_iterations < 1 || !(o.df > 0) || !(o.widen >= 1) || !std::isfinite(o.widen) ||
        !(o.prior_weight > 0 && o.prior_weight < 1) || !(o.prior_df > 0))
        throw std::invalid_argument("fit_pmc_mixture: bad options");
    const Eigen::Index d = target.dim();
    const auto n = static_cast<std::size_t>(o.draws_per_dim * (d + 2));

    // The start: the modes' Laplace t's.
    TMixture adaptive;
    const std::vector<double> start_w = floored_laplace_weights(modes);
    for (std::size_t k = 0; k < modes.size(); ++k) {
        TComponent c;
        c.df = start_df;
        if (!cholesky(start_inflation * modes[k].cov, c.lower)) throw std::invalid_argument("fit_pmc_mixture: bad mode covariance");
        c.mean = modes[k].mode;
        c.log_weight = std::log(start_w[k]);
        c.finish();
        adaptive.parts.push_back(std::move(c));
    }
    TComponent prior;
    prior.df = o.prior_df;
    prior.mean = prior_mean;
    if (prior_mean.size() != d || !cholesky(prior_cov, prior.lower))
        throw std::invalid_argument("fit_pmc_mixture: the prior is not a Gaussian of the target's dimension");
    prior.log_weight = std::log(o.prior_weight);
    prior.finish();
    // The proposal of a round: the components (the fitted ones widened), and the prior.
    const auto proposal_of = [&](const TMixture& a, bool widened) {
        TMixture q;
        for (TComponent part : a.parts) {
            part.log_weight += std::log1p(-o.prior_weight);
            if (widened) {
                part.lower *= o.widen;
                part.finish();
            }
            q.parts.push_back(std::move(part));
        }
        q.parts.push_back(prior);
        return q;
    };

    Mat x(static_cast<Eigen::Index>(n), d);
    std::vector<double> log_w(n), w;
    const int threads = std::max(1, o.threads);
    std::vector<Target::Workspace> workspaces;
    for (int t = 0; t < threads; ++t) workspaces.push_back(target.make_workspace());
    Vec draw(d), z(d), log_q;
    Mat terms, delta;
    std::vector<Mat> scratch(static_cast<std::size_t>(threads));
    TMixture best;
    std::vector<double> best_log_w;
    PmcFit out{laplace_mixture(modes, start_df, start_inflation)};
    out.ess_fraction = -1;
    for (int round = 0; round <= o.rounds; ++round) {
        const TMixture q = proposal_of(adaptive, round > 0);
        for (std::size_t i = 0; i < n; ++i) {
            q.sample(rng, draw, z);
            x.row(static_cast<Eigen::Index>(i)) = draw.transpose();
        }
        // Each draw's weight p / q: the mixture's density and the target's, a chunk of draws at a time.
        terms.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(q.parts.size()));
        delta.resize(terms.rows(), terms.cols());
        log_q.resize(static_cast<Eigen::Index>(n));
        for_row_chunks(threads, static_cast<Eigen::Index>(n), [&](Eigen::Index begin, Eigen::Index count, std::size_t part) {
            q.log_density(x, begin, count, log_q, terms, delta, scratch[part]);
            Vec xi(d);
            for (Eigen::Index i = begin; i < begin + count; ++i) {
                xi = x.row(i).transpose();
                const double lp = target.log_density(xi, workspaces[part]);
                log_w[static_cast<std::size_t>(i)] = std::isfinite(lp) ? lp - log_q[i] : -std::numeric_limits<double>::infinity();
            }
        });
        const double ess = normalise(log_w, w);
        if (round == 0) out.initial_ess_fraction = ess;
        if (ess > out.ess_fraction) {
            out.ess_fraction = ess;
            best_log_w = log_w;  // its k̂ is found once, for the proposal kept (a sort of n)
            best = q;
        }
        // Past min_rounds, stop once the weights are nearly even. Stopping at the first round
        // without a gain instead picked, now and then, a fit that missed the far tail.
        if (round == o.rounds || !(ess > 0) || (round >= o.min_rounds && ess >= o.good_enough)) break;
        out.rounds = round + 1;
        if (round == 0) {
            // Replace the modes' components by more, seeded over the weighted draws with
            // scales from their weighted covariance shrunk by the number of components.
            Vec mean;
            Mat cov, lower;
            weighted_moments(x, w, mean, cov);
            regularise(cov);
            if (!cholesky(cov, lower)) break;
            const int k = std::min(o.max_components, o.components_per_mode * static_cast<int>(modes.size()));
            Mat start_cov = cov / std::pow(static_cast<double>(k), 2.0 / static_cast<double>(d));
            TMixture seeded;
            for (const Vec& c : seed_centres(x, w, lower, k, rng)) {
                TComponent part;
                part.df = o.df;
                part.mean = c;
                if (!cholesky(start_cov, part.lower)) break;
                part.log_weight = -std::log(static_cast<double>(k));
                part.finish();
                seeded.parts.push_back(std::move(part));
            }
            if (seeded.parts.empty()) break;
            const double log_total = std::log(static_cast<double>(seeded.parts.size()) / static_cast<double>(k));
            for (TComponent& c : seeded.parts) c.log_weight -= log_total;
            adaptive = std::move(seeded);
        }
        em(adaptive, x, w, o.em_iterations, threads);
    }
    if (!best_log_w.empty())
        out.pareto_k = inference::pareto_k(Eigen::Map<const Vec>(best_log_w.data(), static_cast<Eigen::Index>(n)));
    if (out.ess_fraction > 0) out.proposal = best.proposal();
    out.ess_fraction = std::max(out.ess_fraction, 0.0);
    return out;
}

}  // namespace vbn
