#include "runtime/report/mode_masses.hpp"

#include "inference/diagnostics.hpp"
#include "inference/parallel.hpp"
#include "inference/psis.hpp"
#include "inference/symmetry_jump.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace vbn {
namespace {

std::size_t at(Eigen::Index i) { return static_cast<std::size_t>(i); }

// The copy (0: the major one, k: copies.negated[k − 1]) whose image of x is nearest `centre`,
// distances scaled by 1 / scale².
int nearest_copy(const Eigen::VectorXd& x, const FlipCopies& copies, const Eigen::VectorXd& centre,
                 const Eigen::VectorXd& inv_var) {
    const Eigen::VectorXd d0 = (x - centre).array().square() * inv_var.array();
    const Eigen::VectorXd d1 = (x + centre).array().square() * inv_var.array();
    const double base = d0.sum();
    int best = 0;
    double best_d = base;
    for (std::size_t k = 0; k < copies.negated.size(); ++k) {
        // Negating column j swaps its term from d0 to d1.
        double d = base;
        for (int j : copies.negated[k]) d += d1[j] - d0[j];
        if (d < best_d) {
            best_d = d;
            best = static_cast<int>(k) + 1;
        }
    }
    return best;
}

// x folded back into the major copy: copy k's flip undone (each flip is its own inverse).
void fold(Eigen::VectorXd& x, const FlipCopies& copies, int copy) {
    if (copy == 0) return;
    for (int j : copies.negated[static_cast<std::size_t>(copy - 1)]) x[j] = -x[j];
}

}  // namespace

FlipCopies flip_copies(const std::vector<lang::ApproximateFlip>& flips) {
    FlipCopies out;
    for (const auto& f : flips) out.theta.insert(out.theta.end(), f.negated.begin(), f.negated.end());
    std::sort(out.theta.begin(), out.theta.end());
    out.theta.erase(std::unique(out.theta.begin(), out.theta.end()), out.theta.end());
    auto local = [&](int k) { return static_cast<int>(std::lower_bound(out.theta.begin(), out.theta.end(), k) - out.theta.begin()); };
    // The same set the jumps propose: every non-empty product up to max_enumerated_flips
    // generators, else the generators alone.
    const std::size_t n = flips.size();
    const bool all = n <= inference::max_enumerated_flips;
    out.closed = all;
    const std::size_t count = all ? (std::size_t{1} << n) - 1 : n;
    for (std::size_t c = 0; c < count; ++c) {
        const std::size_t mask = all ? c + 1 : std::size_t{1} << c;
        std::vector<int> neg;
        std::string name;
        for (std::size_t k = 0; k < n; ++k) {
            if (!(mask & (std::size_t{1} << k))) continue;
            std::vector<int> next;
            std::set_symmetric_difference(neg.begin(), neg.end(), flips[k].negated.begin(), flips[k].negated.end(),
                                          std::back_inserter(next));
            neg = std::move(next);
            name += (name.empty() ? "" : " + ") + flips[k].name;
        }
        if (neg.empty()) continue;
        for (int& k : neg) k = local(k);
        out.negated.push_back(std::move(neg));
        out.names.push_back(std::move(name));
    }
    return out;
}

Eigen::MatrixXi assign_copies(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies) {
    const Eigen::Index m = static_cast<Eigen::Index>(copies.theta.size());
    const Eigen::Index rows = chains.empty() ? 0 : chains.front().rows();
    const auto nchains = static_cast<Eigen::Index>(chains.size());
    Eigen::MatrixXi copy = Eigen::MatrixXi::Zero(rows, nchains);
    if (rows == 0 || copies.negated.empty()) return copy;
    // Start: the coordinate-wise median of every draw, unit scales.
    Eigen::VectorXd centre(m), inv_var = Eigen::VectorXd::Ones(m);
    std::vector<double> column(at(rows * nchains));
    for (Eigen::Index j = 0; j < m; ++j) {
        for (Eigen::Index c = 0; c < nchains; ++c)
            for (Eigen::Index i = 0; i < rows; ++i) column[at(c * rows + i)] = chains[at(c)](i, j);
        auto mid = column.begin() + static_cast<std::ptrdiff_t>(column.size() / 2);
        std::nth_element(column.begin(), mid, column.end());
        centre[j] = *mid;
    }
    Eigen::VectorXd x(m);
    // Two passes: assign, then re-centre and re-scale on the folded draws, then assign again.
    for (int pass = 0; pass < 2; ++pass) {
        Eigen::VectorXd sum = Eigen::VectorXd::Zero(m), sum2 = Eigen::VectorXd::Zero(m);
        for (Eigen::Index c = 0; c < nchains; ++c)
            for (Eigen::Index i = 0; i < rows; ++i) {
                x = chains[at(c)].row(i).transpose();
                copy(i, c) = nearest_copy(x, copies, centre, inv_var);
                fold(x, copies, copy(i, c));
                sum += x;
                sum2 += x.cwiseProduct(x);
            }
        if (pass == 1) break;
        const double n = static_cast<double>(rows * nchains);
        centre = sum / n;
        const Eigen::VectorXd var = (sum2 / n - centre.cwiseProduct(centre)).cwiseMax(1e-12);
        inv_var = var.cwiseInverse();
    }
    return copy;
}

std::vector<ModeMass> mode_masses_from(const Eigen::MatrixXi& copy, const FlipCopies& copies) {
    std::vector<ModeMass> out;
    if (copy.size() == 0 || copies.negated.empty()) return out;
    Eigen::MatrixXd indicator(copy.rows(), copy.cols());
    for (std::size_t k = 0; k < copies.negated.size(); ++k) {
        indicator = (copy.array() == static_cast<int>(k) + 1).cast<double>();
        ModeMass mm;
        mm.flip = copies.names[k];
        mm.mass = indicator.mean();
        // A copy no draw (or every draw) reached has no variance to estimate: its error is 0
        // only in that the draws say nothing more.
        const double se = inference::mcse_mean(indicator);
        mm.mcse = std::isfinite(se) ? se : 0.0;
        out.push_back(std::move(mm));
    }
    return out;
}

std::vector<ModeMass> mode_masses(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies) {
    if (chains.empty() || copies.negated.empty() || chains.front().rows() == 0) return {};
    return mode_masses_from(assign_copies(chains, copies), copies);
}

void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const Eigen::MatrixXi& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const LogDensity& log_density, Eigen::Index max_evaluations) {
    add_importance_masses(masses, copies, copy, theta_of, [&] { return log_density; }, 1, max_evaluations);
}

void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const Eigen::MatrixXi& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const std::function<LogDensity()>& make_density, int threads, Eigen::Index max_evaluations) {
    const std::size_t K = copies.negated.size();
    if (!copies.closed || K == 0 || masses.size() != K || copy.size() == 0) return;
    const Eigen::Index max_draws = std::max<Eigen::Index>(1, max_evaluations / static_cast<Eigen::Index>(K + 1));
    const Eigen::Index chains = copy.cols();
    const Eigen::Index thin = std::max<Eigen::Index>(1, (copy.size() + max_draws - 1) / max_draws);
    const Eigen::Index rows = (copy.rows() + thin - 1) / thin;
    // in0: the thinned draws in the major copy; log_r(t, c, k): log r_k there (0 elsewhere).
    // Each draw's entries are its own, so chunks of draws go to the threads, a density each.
    Eigen::MatrixXd in0 = Eigen::MatrixXd::Zero(rows, chains);
    std::vector<Eigen::MatrixXd> log_r(K, Eigen::MatrixXd::Zero(rows, chains));
    const int parts = std::max(1, threads);
    std::vector<LogDensity> density;
    for (int p = 0; p < parts; ++p) density.push_back(make_density());
    constexpr std::size_t kDrawChunk = 64;
    inference::parallel_chunks(parts, static_cast<std::size_t>(rows * chains), kDrawChunk,
                               [&](std::size_t begin, std::size_t end, std::size_t part) {
        const LogDensity& log_density = density[part];
        for (std::size_t i = begin; i < end; ++i) {
            const auto c = static_cast<Eigen::Index>(i) / rows, t = static_cast<Eigen::Index>(i) % rows;
            if (copy(t * thin, c) != 0) continue;
            Eigen::VectorXd theta = theta_of(static_cast<std::size_t>(c), t * thin);
            const double lp = log_density(theta);
            in0(t, c) = 1;
            for (std::size_t k = 0; k < K; ++k) {
                for (int j : copies.negated[k]) theta[copies.theta[at(j)]] = -theta[copies.theta[at(j)]];
                log_r[k](t, c) = log_density(theta) - lp;
                for (int j : copies.negated[k]) theta[copies.theta[at(j)]] = -theta[copies.theta[at(j)]];
            }
        }
    });
    const double share0 = in0.mean();
    if (!(share0 > 0)) return;
    std::vector<double> rho(K), se(K);
    for (std::size_t k = 0; k < K; ++k) {
        // Scaled by the largest ratio, so that no exp overflows; ρ_k carries the scale back.
        double top = -std::numeric_limits<double>::infinity();
        std::vector<double> logs;
        for (Eigen::Index c = 0; c < chains; ++c)
            for (Eigen::Index t = 0; t < rows; ++t)
                if (in0(t, c) > 0) {
                    top = std::max(top, log_r[k](t, c));
                    logs.push_back(log_r[k](t, c));
                }
        const Eigen::MatrixXd y = in0.cwiseProduct((log_r[k].array() - top).exp().matrix());
        const double ratio = y.mean() / share0;
        const double s = inference::mcse_mean(y - ratio * in0) / share0;
        rho[k] = ratio * std::exp(top);
        se[k] = (std::isfinite(s) ? s : 0.0) * std::exp(top);
        masses[k].importance_khat = logs.size() >= 10 ? inference::pareto_k(Eigen::Map<const Eigen::VectorXd>(
                                                             logs.data(), static_cast<Eigen::Index>(logs.size())))
                                                       : std::numeric_limits<double>::quiet_NaN();
    }
    double total = 1;
    for (double r : rho) total += r;
    for (std::size_t k = 0; k < K; ++k) {
        masses[k].importance = rho[k] / total;
        // d/dρ_k of ρ_k / (1 + Σ ρ): the other ratios' errors are left out (their covariance is
        // not estimated); they move the total by less than their own size.
        masses[k].importance_mcse = se[k] * (total - rho[k]) / (total * total);
    }
}

}  // namespace vbn
