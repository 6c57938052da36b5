// Pivot relabelling (runtime/report/relabel.hpp): the group is enumerated by closing its
// generators (each flip, each swap of neighbours in an exchangeable class) under composition,
// so it holds every product of flips and permutations exactly once.
#include "runtime/report/relabel.hpp"

#include "lang/symmetry.hpp"
#include "runtime/report/code.hpp"
#include "runtime/sampling/symmetry_moves.hpp"

#include <cstdlib>
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>

namespace vbn {

namespace {

using code::Code;
using code::identity;

// The generators in θ's layout: the symmetry jumps' exact generators (each flip, then each
// exchange of neighbours in a class).
std::vector<Code> generators(const ir::Graph& graph, const lang::Symmetries& s) {
    std::vector<Code> out;
    for (const auto& g : exact_generators(graph, s).moves) out.push_back(code::of(g, graph.dim));
    return out;
}

// A θ-layout code as it acts on columns where column j holds θ's entry order[j].
Code in_columns(const Code& theta_code, const std::vector<int>& order) {
    std::vector<int> column_of(theta_code.size(), -1);
    for (std::size_t j = 0; j < order.size(); ++j) column_of[static_cast<std::size_t>(order[j])] = static_cast<int>(j);
    Code out(order.size());
    for (std::size_t j = 0; j < order.size(); ++j) {
        const int c = theta_code[static_cast<std::size_t>(order[j])];
        const int col = column_of[static_cast<std::size_t>(std::abs(c) - 1)] + 1;
        out[j] = c > 0 ? col : -col;
    }
    return out;
}

double distance(const Code& g, const std::vector<int>& support, const Eigen::Ref<const Eigen::VectorXd>& x,
                const Eigen::VectorXd& pivot) {
    double d = 0;
    for (int k : support) {
        const double v = code::entry(g, static_cast<std::size_t>(k), x);
        d += (v - pivot[k]) * (v - pivot[k]);
    }
    return d;
}

int nearest(const LabelingGroup& group, const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::VectorXd& pivot) {
    int best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    for (std::size_t e = 0; e < group.size(); ++e) {
        const double d = distance(group.elements[e], group.support, x, pivot);
        if (d < best_d) {
            best_d = d;
            best = static_cast<int>(e);
        }
    }
    return best;
}

// The draw of highest log density over all chains: the first pivot.
Eigen::VectorXd highest_draw(std::size_t chains, const std::function<ChainDraws(std::size_t)>& read) {
    Eigen::VectorXd best;
    double best_lp = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < chains; ++c) {
        const ChainDraws d = read(c);
        for (Eigen::Index i = 0; i < d.draws.rows(); ++i)
            if (best.size() == 0 || d.lp[i] > best_lp) {
                best_lp = d.lp[i];
                best = d.draws.row(i).transpose();
            }
    }
    return best;
}

// Moves the whole relabelled set by m⁻¹, m the element most draws were given, so that the
// labeling most draws were drawn in is kept and `relabelled` counts the others. Signed
// permutations keep distances, so every draw stays nearest the (moved) pivot.
void keep_majority_labeling(const LabelingGroup& group, PivotRelabelling& r) {
    std::vector<long> count(group.size(), 0);
    for (const auto& chain : r.element)
        for (int e : chain) ++count[static_cast<std::size_t>(e)];
    const auto m = static_cast<std::size_t>(std::max_element(count.begin(), count.end()) - count.begin());
    if (m == 0 || count[m] == count[0]) return;
    std::map<Code, int> index;
    for (std::size_t e = 0; e < group.size(); ++e) index.emplace(group.elements[e], static_cast<int>(e));
    const int inverse = index.at(code::inverse(group.elements[m]));
    const Code& m_inv = group.elements[static_cast<std::size_t>(inverse)];
    r.relabelled = 0;
    for (auto& chain : r.element)
        for (int& e : chain) {
            e = index.at(code::compose(m_inv, group.elements[static_cast<std::size_t>(e)]));
            r.relabelled += e != 0 ? 1 : 0;
        }
    apply_labeling(group, inverse, r.pivot);
}

}  // namespace

std::optional<LabelingGroup> labeling_group(const ir::Graph& graph, const std::vector<int>& order,
                                            std::size_t max_labelings) {
    return labeling_group(graph, lang::find_symmetries(graph), order, max_labelings);
}

std::optional<LabelingGroup> labeling_group(const ir::Graph& graph, const lang::Symmetries& s,
                                            const std::vector<int>& order, std::size_t max_labelings) {
    if (!s.any() || !s.labelings || *s.labelings > max_labelings) return std::nullopt;
    const std::vector<Code> gens = generators(graph, s);
    std::set<Code> seen{identity(graph.dim)};
    std::vector<Code> elements{identity(graph.dim)};
    std::deque<Code> todo{identity(graph.dim)};
    while (!todo.empty()) {
        const Code a = todo.front();
        todo.pop_front();
        for (const Code& g : gens) {
            Code b = code::compose(g, a);
            if (!seen.insert(b).second) continue;
            if (elements.size() == max_labelings) return std::nullopt;
            elements.push_back(b);
            todo.push_back(std::move(b));
        }
    }
    LabelingGroup group;
    for (const Code& e : elements) group.elements.push_back(in_columns(e, order));
    for (std::size_t k = 0; k < order.size(); ++k)
        for (const Code& e : group.elements)
            if (e[k] != static_cast<int>(k) + 1) {
                group.support.push_back(static_cast<int>(k));
                break;
            }
    return group;
}

void apply_labeling(const LabelingGroup& group, int e, Eigen::Ref<Eigen::VectorXd> x) {
    if (e == 0) return;
    const Code& g = group.elements[static_cast<std::size_t>(e)];
    const Eigen::VectorXd old = x;
    for (int k : group.support) x[k] = code::entry(g, static_cast<std::size_t>(k), old);
}

// Each row is read from one copy made before the loop, so relabelling a chain allocates once,
// not once per draw.
void apply_labeling(const LabelingGroup& group, const std::vector<int>& element, Eigen::MatrixXd& draws) {
    Eigen::VectorXd row(draws.cols());  // row i as it was before its relabelling
    for (Eigen::Index i = 0; i < draws.rows() && i < static_cast<Eigen::Index>(element.size()); ++i) {
        const int e = element[static_cast<std::size_t>(i)];
        if (e == 0) continue;
        const Code& g = group.elements[static_cast<std::size_t>(e)];
        row = draws.row(i).transpose();
        for (int k : group.support) draws(i, k) = code::entry(g, static_cast<std::size_t>(k), row);
    }
}

PivotRelabelling relabel_to_pivot(const LabelingGroup& group, std::size_t chains,
                                  const std::function<ChainDraws(std::size_t c)>& read, int max_passes) {
    PivotRelabelling r;
    r.pivot = highest_draw(chains, read);
    r.element.assign(chains, {});
    if (r.pivot.size() == 0) return r;
    Eigen::VectorXd x(r.pivot.size()), y(r.pivot.size());  // a draw, and its relabelled copy
    for (r.passes = 1; r.passes <= max_passes; ++r.passes) {
        bool changed = false;
        Eigen::VectorXd sum = Eigen::VectorXd::Zero(r.pivot.size());
        r.draws = r.relabelled = 0;
        for (std::size_t c = 0; c < chains; ++c) {
            const ChainDraws d = read(c);
            std::vector<int>& el = r.element[c];
            const bool first = el.size() != static_cast<std::size_t>(d.draws.rows());
            el.resize(static_cast<std::size_t>(d.draws.rows()), 0);
            for (Eigen::Index i = 0; i < d.draws.rows(); ++i) {
                x = d.draws.row(i).transpose();
                const int e = nearest(group, x, r.pivot);
                changed = changed || first || e != el[static_cast<std::size_t>(i)];
                el[static_cast<std::size_t>(i)] = e;
                // y = g_e x into the buffer (apply_labeling's own copy would allocate per draw).
                y = x;
                if (e != 0) {
                    const Code& g = group.elements[static_cast<std::size_t>(e)];
                    for (int k : group.support) y[k] = code::entry(g, static_cast<std::size_t>(k), x);
                }
                sum += y;
                r.relabelled += e != 0 ? 1 : 0;
            }
            r.draws += d.draws.rows();
        }
        r.pivot = sum / static_cast<double>(std::max<long>(r.draws, 1));
        if (!changed) break;
    }
    if (r.passes > max_passes) {
        r.passes = max_passes;
        r.converged = false;
    }
    keep_majority_labeling(group, r);
    return r;
}

}  // namespace vbn
