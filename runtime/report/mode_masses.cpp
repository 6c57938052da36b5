#include "runtime/report/mode_masses.hpp"

#include "inference/diagnostics.hpp"
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

std::vector<ModeMass> mode_masses(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies) {
    std::vector<ModeMass> out;
    if (chains.empty() || copies.negated.empty()) return out;
    const Eigen::Index m = static_cast<Eigen::Index>(copies.theta.size());
    const Eigen::Index rows = chains.front().rows();
    const auto nchains = static_cast<Eigen::Index>(chains.size());
    if (rows == 0) return out;
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
    Eigen::MatrixXi copy(rows, nchains);
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
    Eigen::MatrixXd indicator(rows, nchains);
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

}  // namespace vbn
