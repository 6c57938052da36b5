#include "runtime/report/mode_masses.hpp"

#include "inference/diagnostics.hpp"
#include "inference/parallel.hpp"
#include "inference/psis.hpp"
#include "inference/symmetry_jump.hpp"
#include "runtime/report/code.hpp"
#include "runtime/sampling/symmetry_moves.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numeric>
#include <utility>

namespace vbn {
namespace {

std::size_t at(Eigen::Index i) { return static_cast<std::size_t>(i); }

// The images g_k(centre) of the centre under every copy's move, one per column, and scratch
// for a draw's distances: the assignment visits every draw once per labeling, twice over.
struct CopyImages {
    Eigen::MatrixXd image;  // m × K
    Eigen::VectorXd scratch;
};

CopyImages copy_images(const FlipCopies& copies, const Eigen::VectorXd& centre) {
    CopyImages c{Eigen::MatrixXd(centre.size(), static_cast<Eigen::Index>(copies.moves.size())), Eigen::VectorXd(centre.size())};
    for (std::size_t k = 0; k < copies.moves.size(); ++k) {
        code::apply(copies.moves[k], centre, c.scratch);
        c.image.col(static_cast<Eigen::Index>(k)) = c.scratch;
    }
    return c;
}

// The copy (0: the major one, k: copies.moves[k − 1]) whose image of the centre is nearest x,
// distances scaled by 1 / scale².
int nearest_copy(const Eigen::VectorXd& x, const Eigen::VectorXd& centre, const Eigen::VectorXd& inv_var, CopyImages& c,
                 double* distance = nullptr) {
    c.scratch = x - centre;
    double best_d = c.scratch.array().square().matrix().dot(inv_var);
    int best = 0;
    for (Eigen::Index k = 0; k < c.image.cols(); ++k) {
        c.scratch = x - c.image.col(k);
        const double d = c.scratch.array().square().matrix().dot(inv_var);
        if (d < best_d) {
            best_d = d;
            best = static_cast<int>(k) + 1;
        }
    }
    if (distance) *distance = best_d;
    return best;
}

// x folded back into the major copy: copy k's move undone (`out` distinct from x).
void fold(const Eigen::VectorXd& x, const FlipCopies& copies, int copy, Eigen::VectorXd& out) {
    if (copy == 0) out = x;
    else code::apply(copies.inverse_moves[at(copy - 1)], x, out);
}

// The copy h g(centre) nearest x over every labeling h and copy g: h preserves the scaled
// distance (the scales are equal on the columns it exchanges), so |x − h g c| = |h⁻¹ x − g c|.
// Returns the copy (0: the major one) and the labeling; `best_y` ends as h⁻¹ x of the labeling
// found (`y` and `c` are scratch, c holding the copies' images of the centre).
std::pair<int, int> nearest_labeled_copy(const Eigen::VectorXd& x, const FlipCopies& copies, const Eigen::VectorXd& centre,
                                         const Eigen::VectorXd& inv_var, Eigen::VectorXd& y, Eigen::VectorXd& best_y,
                                         CopyImages& c) {
    std::pair<int, int> best{0, 0};
    double best_d = std::numeric_limits<double>::infinity();
    for (std::size_t h = 0; h < copies.inverse_labelings.size(); ++h) {
        code::apply(copies.inverse_labelings[h], x, y);
        double d = 0;
        const int k = nearest_copy(y, centre, inv_var, c, &d);
        if (d < best_d) {  // ties to the lowest labeling, the identity first
            best_d = d;
            best = {k, static_cast<int>(h)};
            best_y = y;
        }
    }
    return best;
}

// Every column in a class with the columns the labelings and the moves take it to: equal
// scales there.
std::vector<int> column_classes(const FlipCopies& copies) {
    std::vector<int> cls(copies.theta.size());
    std::iota(cls.begin(), cls.end(), 0);
    const auto root = [&](int j) {
        while (cls[at(j)] != j) j = cls[at(j)] = cls[at(cls[at(j)])];
        return j;
    };
    std::vector<std::vector<int>> codes = copies.inverse_labelings;
    codes.insert(codes.end(), copies.moves.begin(), copies.moves.end());
    for (const auto& code : codes)
        for (std::size_t j = 0; j < code.size(); ++j) {
            const int a = root(static_cast<int>(j)), b = root(std::abs(code[j]) - 1);
            if (a != b) cls[at(std::max(a, b))] = std::min(a, b);
        }
    for (std::size_t j = 0; j < cls.size(); ++j) cls[j] = root(static_cast<int>(j));
    return cls;
}

// The labelings of `exact` on the columns `theta` (each inverted), the identity first.
std::vector<std::vector<int>> inverse_labelings(const LabelingGroup* exact, const std::vector<int>& theta) {
    const auto m = theta.size();
    std::vector<std::vector<int>> out{code::identity(static_cast<int>(m))};
    if (!exact) return out;
    const auto local = [&](int t) { return static_cast<int>(std::lower_bound(theta.begin(), theta.end(), t) - theta.begin()); };
    for (std::size_t e = 1; e < exact->size(); ++e) {
        // h restricted to theta's columns (a labeling maps them among themselves), then inverted.
        code::Code h(m);
        for (std::size_t j = 0; j < m; ++j) {
            const int c = exact->elements[e][at(theta[j])];
            h[j] = (c > 0 ? 1 : -1) * (local(std::abs(c) - 1) + 1);
        }
        out.push_back(code::inverse(h));
    }
    return out;
}

// The copies conjugation by the labelings exchanges: h g h⁻¹ for labeling h and copy g, again
// a listed copy where the moves are closed (the exact labelings permute the approximate
// symmetries: lang's flips negate whole blocks' entries, its swaps exchange them).
void merge_conjugate_copies(FlipCopies& out) {
    std::map<std::vector<int>, int> index;
    for (std::size_t k = 0; k < out.moves.size(); ++k) index[out.moves[k]] = static_cast<int>(k);
    std::vector<int> mode_of(out.moves.size(), -1);
    for (std::size_t k = 0; k < out.moves.size(); ++k) {
        if (mode_of[k] >= 0) continue;
        mode_of[k] = static_cast<int>(out.modes.size());
        std::vector<int> members{static_cast<int>(k)};
        for (std::size_t h = 1; h < out.inverse_labelings.size(); ++h) {
            const std::vector<int>& h_inv = out.inverse_labelings[h];
            const std::vector<int> conj = code::compose(code::inverse(h_inv), code::compose(out.moves[k], h_inv));
            const auto it = index.find(conj);
            if (it == index.end() || mode_of[at(it->second)] >= 0) continue;
            mode_of[at(it->second)] = mode_of[k];
            members.push_back(it->second);
        }
        std::sort(members.begin(), members.end());
        std::string name;
        for (int c : members) name += (name.empty() ? "" : " or ") + out.names[at(c)];
        out.modes.push_back(std::move(members));
        out.mode_names.push_back(std::move(name));
    }
}

// A move's name from the generators' names: "d1 + d2", "d1 + d1 <-> d2" (the word of
// inference::move_set, an inverse marked ^-1).
std::string move_name(const std::vector<int>& word, const std::vector<std::string>& names) {
    std::string out;
    for (int w : word) out += (out.empty() ? "" : " + ") + (w >= 0 ? names[at(w)] : names[at(-w - 1)] + "^-1");
    return out;
}

// The least of h g over the labelings h (codes on the copies' columns): one key per right
// coset H g.
std::vector<int> coset_key(const std::vector<std::vector<int>>& labelings, const std::vector<int>& g) {
    std::vector<int> best = code::compose(labelings.front(), g);
    for (std::size_t h = 1; h < labelings.size(); ++h) best = std::min(best, code::compose(labelings[h], g));
    return best;
}

// Keeps one move per right coset H g (H left out) and groups them by double coset H g H, the
// keys of g h over h: replaces the moves, names and modes that flip_copies listed.
void keep_cosets(FlipCopies& out) {
    const auto& H = out.inverse_labelings;  // as a set, H itself (closed under inverses)
    std::map<std::vector<int>, int> copy_of{{coset_key(H, code::identity(static_cast<int>(out.theta.size()))), -1}};
    FlipCopies kept = out;
    kept.moves.clear(), kept.inverse_moves.clear(), kept.names.clear(), kept.modes.clear(), kept.mode_names.clear();
    for (std::size_t k = 0; k < out.moves.size(); ++k) {
        const auto [it, fresh] = copy_of.emplace(coset_key(H, out.moves[k]), static_cast<int>(kept.moves.size()));
        if (!fresh) continue;
        kept.moves.push_back(out.moves[k]);
        kept.inverse_moves.push_back(out.inverse_moves[k]);
        kept.names.push_back(out.names[k]);
    }
    std::vector<int> mode_of(kept.moves.size(), -1);
    for (std::size_t k = 0; k < kept.moves.size(); ++k) {
        if (mode_of[k] >= 0) continue;
        mode_of[k] = static_cast<int>(kept.modes.size());
        std::vector<int> members{static_cast<int>(k)};
        for (const auto& h : H) {
            const int c = copy_of.at(coset_key(H, code::compose(kept.moves[k], h)));
            if (c < 0 || mode_of[at(c)] >= 0) continue;
            mode_of[at(c)] = mode_of[k];
            members.push_back(c);
        }
        std::sort(members.begin(), members.end());
        std::string name;
        for (int c : members) name += (name.empty() ? "" : " or ") + kept.names[at(c)];
        kept.modes.push_back(std::move(members));
        kept.mode_names.push_back(std::move(name));
    }
    out = std::move(kept);
}

}  // namespace

FlipCopies flip_copies(const std::vector<lang::ApproximateFlip>& flips, const std::vector<lang::ApproximateSwap>& swaps,
                       const LabelingGroup* exact, const std::vector<inference::SignedPermutation>& exact_moves,
                       const std::vector<std::string>& exact_names) {
    FlipCopies out;
    // The same set the jumps propose (inference/symmetry_jump.hpp).
    std::vector<inference::SignedPermutation> generators = symmetry_generators(flips, swaps);
    std::vector<std::string> names = symmetry_generator_names(flips, swaps);
    inference::MoveSet set = inference::move_set(generators, inference::max_enumerated_flips);
    bool cosets = false;
    if (!exact_moves.empty() && exact && exact->size() > 1) {
        generators.insert(generators.end(), exact_moves.begin(), exact_moves.end());
        names.insert(names.end(), exact_names.begin(), exact_names.end());
        inference::MoveSet all = inference::move_set(generators, inference::max_enumerated_flips);
        if (all.closed) {
            set = std::move(all);
            cosets = true;
        } else {
            // The approximate moves' group alone may hold exact labelings (whose "copies" are
            // the major mode) and misses the copies only a labeling reaches: shares only, copy
            // by copy, no importance estimate and no merging.
            set.closed = false;
        }
    }
    for (const auto& g : set.moves)
        for (const auto& e : g.entries) out.theta.insert(out.theta.end(), {e.to, e.from});
    out.closed = set.closed;
    // Merging needs the whole group (a conjugate of a listed copy must be listed).
    if (exact && exact->size() > 1 && set.closed)
        out.theta.insert(out.theta.end(), exact->support.begin(), exact->support.end());
    else
        exact = nullptr;
    std::sort(out.theta.begin(), out.theta.end());
    out.theta.erase(std::unique(out.theta.begin(), out.theta.end()), out.theta.end());
    auto local = [&](int k) { return static_cast<int>(std::lower_bound(out.theta.begin(), out.theta.end(), k) - out.theta.begin()); };
    for (std::size_t k = 0; k < set.moves.size(); ++k) {
        code::Code move = code::identity(static_cast<int>(out.theta.size()));
        for (const auto& e : set.moves[k].entries) move[at(local(e.to))] = (e.negate ? -1 : 1) * (local(e.from) + 1);
        out.inverse_moves.push_back(code::inverse(move));
        out.moves.push_back(std::move(move));
        out.names.push_back(move_name(set.words[k], names));
    }
    out.inverse_labelings = inverse_labelings(exact, out.theta);
    if (cosets) keep_cosets(out);
    else merge_conjugate_copies(out);
    return out;
}

CopyAssignment assign_copies(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies) {
    const Eigen::Index m = static_cast<Eigen::Index>(copies.theta.size());
    const Eigen::Index rows = chains.empty() ? 0 : chains.front().rows();
    const auto nchains = static_cast<Eigen::Index>(chains.size());
    CopyAssignment out{Eigen::MatrixXi::Zero(rows, nchains), Eigen::MatrixXi::Zero(rows, nchains)};
    if (rows == 0 || copies.moves.empty()) return out;
    // Copy k (1-based) is in mode mode_of[k] (0: the major one).
    std::vector<int> mode_of(copies.moves.size() + 1, 0);
    for (std::size_t o = 0; o < copies.modes.size(); ++o)
        for (int k : copies.modes[o]) mode_of[at(k + 1)] = static_cast<int>(o) + 1;
    const std::vector<int> cls = column_classes(copies);
    // Start: the coordinate-wise median of every draw, unit scales. Chains may sit in different
    // exact labelings (unrelabelled draws), where the median of all would lie between them:
    // then the first chain's (a chain keeps its exact labeling; the jumps move it only between
    // the approximate symmetries' copies).
    Eigen::VectorXd centre(m), inv_var = Eigen::VectorXd::Ones(m);
    const Eigen::Index median_of = copies.inverse_labelings.size() > 1 ? 1 : nchains;
    std::vector<double> column(at(rows * median_of));
    for (Eigen::Index j = 0; j < m; ++j) {
        for (Eigen::Index c = 0; c < median_of; ++c)
            for (Eigen::Index i = 0; i < rows; ++i) column[at(c * rows + i)] = chains[at(c)](i, j);
        auto mid = column.begin() + static_cast<std::ptrdiff_t>(column.size() / 2);
        std::nth_element(column.begin(), mid, column.end());
        centre[j] = *mid;
    }
    Eigen::VectorXd x(m), y(m), x0(m), folded(m);
    // Two passes: assign, then re-centre and re-scale on the folded draws, then assign again.
    for (int pass = 0; pass < 2; ++pass) {
        Eigen::VectorXd sum = Eigen::VectorXd::Zero(m), sum2 = Eigen::VectorXd::Zero(m);
        CopyImages images = copy_images(copies, centre);
        for (Eigen::Index c = 0; c < nchains; ++c)
            for (Eigen::Index i = 0; i < rows; ++i) {
                x = chains[at(c)].row(i).transpose();
                const auto [k, h] = nearest_labeled_copy(x, copies, centre, inv_var, y, x0, images);
                out.mode(i, c) = mode_of[at(k)];
                out.labeling(i, c) = h;
                fold(x0, copies, k, folded);
                sum += folded;
                sum2 += folded.cwiseProduct(folded);
            }
        if (pass == 1) break;
        const double n = static_cast<double>(rows * nchains);
        centre = sum / n;
        Eigen::VectorXd var = (sum2 / n - centre.cwiseProduct(centre)).cwiseMax(1e-12);
        // Equal scales on the columns a labeling or a move exchanges, so that it preserves the distance.
        Eigen::VectorXd class_sum = Eigen::VectorXd::Zero(m), class_n = Eigen::VectorXd::Zero(m);
        for (Eigen::Index j = 0; j < m; ++j) {
            class_sum[cls[at(j)]] += var[j];
            class_n[cls[at(j)]] += 1;
        }
        for (Eigen::Index j = 0; j < m; ++j) var[j] = class_sum[cls[at(j)]] / class_n[cls[at(j)]];
        inv_var = var.cwiseInverse();
    }
    return out;
}

std::vector<ModeMass> mode_masses_from(const CopyAssignment& copy, const FlipCopies& copies) {
    std::vector<ModeMass> out;
    if (copy.mode.size() == 0 || copies.moves.empty()) return out;
    Eigen::MatrixXd indicator(copy.mode.rows(), copy.mode.cols());
    for (std::size_t o = 0; o < copies.modes.size(); ++o) {
        indicator = (copy.mode.array() == static_cast<int>(o) + 1).cast<double>();
        ModeMass mm;
        mm.flip = copies.mode_names[o];
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
    if (chains.empty() || copies.moves.empty() || chains.front().rows() == 0) return {};
    return mode_masses_from(assign_copies(chains, copies), copies);
}

void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const CopyAssignment& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const LogDensity& log_density, Eigen::Index max_evaluations) {
    add_importance_masses(masses, copies, copy, theta_of, [&] { return log_density; }, 1, max_evaluations);
}

void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const CopyAssignment& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const std::function<LogDensity()>& make_density, int threads, Eigen::Index max_evaluations) {
    const std::size_t K = copies.moves.size();
    if (!copies.closed || K == 0 || masses.size() != copies.modes.size() || copy.mode.size() == 0) return;
    const Eigen::Index max_draws = std::max<Eigen::Index>(1, max_evaluations / static_cast<Eigen::Index>(K + 1));
    const Eigen::Index chains = copy.mode.cols();
    const Eigen::Index thin = std::max<Eigen::Index>(1, (copy.mode.size() + max_draws - 1) / max_draws);
    const Eigen::Index rows = (copy.mode.rows() + thin - 1) / thin;
    const auto m = static_cast<Eigen::Index>(copies.theta.size());
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
        Eigen::VectorXd x(m), y(m), moved;
        for (std::size_t i = begin; i < end; ++i) {
            const auto c = static_cast<Eigen::Index>(i) / rows, t = static_cast<Eigen::Index>(i) % rows;
            if (copy.mode(t * thin, c) != 0) continue;
            Eigen::VectorXd theta = theta_of(static_cast<std::size_t>(c), t * thin);
            if (const int h = copy.labeling(t * thin, c); h != 0) {  // into m's labeling: the same density
                for (Eigen::Index j = 0; j < m; ++j) x[j] = theta[copies.theta[at(j)]];
                code::apply(copies.inverse_labelings[at(h)], x, y);
                for (Eigen::Index j = 0; j < m; ++j) theta[copies.theta[at(j)]] = y[j];
            }
            const double lp = log_density(theta);
            in0(t, c) = 1;
            for (Eigen::Index j = 0; j < m; ++j) x[j] = theta[copies.theta[at(j)]];
            moved = theta;
            for (std::size_t k = 0; k < K; ++k) {
                code::apply(copies.moves[k], x, y);  // r_k = p(g_k θ) / p(θ)
                for (Eigen::Index j = 0; j < m; ++j) moved[copies.theta[at(j)]] = y[j];
                log_r[k](t, c) = log_density(moved) - lp;
            }
        }
    });
    const double share0 = in0.mean();
    if (!(share0 > 0)) return;
    // A mode's ratio is the sum of its copies': log Σ_k r_k per draw.
    const std::size_t O = copies.modes.size();
    std::vector<double> rho(O), se(O);
    Eigen::MatrixXd log_mode(rows, chains);
    for (std::size_t o = 0; o < O; ++o) {
        const std::vector<int>& members = copies.modes[o];
        if (members.size() == 1) {
            log_mode = log_r[at(members[0])];
        } else {
            for (Eigen::Index c = 0; c < chains; ++c)
                for (Eigen::Index t = 0; t < rows; ++t) {
                    double top = -std::numeric_limits<double>::infinity(), sum = 0;
                    for (int k : members) top = std::max(top, log_r[at(k)](t, c));
                    for (int k : members) sum += std::exp(log_r[at(k)](t, c) - top);
                    log_mode(t, c) = top + std::log(sum);
                }
        }
        // Scaled by the largest ratio, so that no exp overflows; ρ_o carries the scale back.
        double top = -std::numeric_limits<double>::infinity();
        std::vector<double> logs;
        for (Eigen::Index c = 0; c < chains; ++c)
            for (Eigen::Index t = 0; t < rows; ++t)
                if (in0(t, c) > 0) {
                    top = std::max(top, log_mode(t, c));
                    logs.push_back(log_mode(t, c));
                }
        const Eigen::MatrixXd y = in0.cwiseProduct((log_mode.array() - top).exp().matrix());
        const double ratio = y.mean() / share0;
        const double s = inference::mcse_mean(y - ratio * in0) / share0;
        rho[o] = ratio * std::exp(top);
        se[o] = (std::isfinite(s) ? s : 0.0) * std::exp(top);
        masses[o].importance_khat = logs.size() >= 10 ? inference::pareto_k(Eigen::Map<const Eigen::VectorXd>(
                                                             logs.data(), static_cast<Eigen::Index>(logs.size())))
                                                       : std::numeric_limits<double>::quiet_NaN();
    }
    double total = 1;
    for (double r : rho) total += r;
    for (std::size_t k = 0; k < O; ++k) {
        masses[k].importance = rho[k] / total;
        // d/dρ_k of ρ_k / (1 + Σ ρ): the other ratios' errors are left out (their covariance is
        // not estimated); they move the total by less than their own size.
        masses[k].importance_mcse = se[k] * (total - rho[k]) / (total * total);
    }
}

}  // namespace vbn
