#include "runtime/target/families.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"
#include "runtime/target/elimination_order.hpp"
#include "runtime/target/family_memo.hpp"
#include "runtime/target/row_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace vbn {

namespace {

// A product of parents x_first Π x_also in a row: the observed factors' values multiplied
// into `value`, the unobserved ones (local[e] >= 0) listed in link.var and link.also.
// Returns whether any factor is unobserved.
bool split_product(int first, const std::vector<int>& also, const std::vector<double>& x,
                   const std::vector<int>& local, double& value, FactorLink& link) {
    int n = 0;
    auto take = [&](int e) {
        if (local[sz(e)] < 0) {
            value *= x[sz(e)];
        } else {
            if (n == 0) link.var = local[sz(e)];
            else link.also[sz(n - 1)] = local[sz(e)];
            ++n;
        }
    };
    take(first);
    for (int e : also) take(e);
    return n > 0;
}

}  // namespace

void fold_cpd(const ir::Graph& g, int element, const std::vector<double>& x, const std::vector<int>& local,
              Factor& out) {
    const ir::Cpd& cpd = g.cpds[sz(element)];
    out.element = element;
    out.block = cpd.block;
    out.base = cpd.offset;
    out.links.clear();
    for (const auto& t : cpd.fixed) {
        if (!t.also.empty()) {
            FactorLink link;
            double value = t.coef;
            if (split_product(t.element, t.also, x, local, value, link)) {
                link.coef = value;
                out.links.push_back(link);
            } else {
                out.base += value;
            }
        } else if (local[sz(t.element)] >= 0) {
            out.links.push_back({local[sz(t.element)], -1, t.coef});
        } else {
            out.base += t.coef * x[sz(t.element)];
        }
    }
    // In block coordinates: features that share a weight (a declared parameter used twice)
    // add up in its entry.
    out.f.setZero(cpd.block >= 0 ? g.blocks[sz(cpd.block)].size : 0);
    for (const auto& ft : cpd.features) {
        const auto w = static_cast<Eigen::Index>(ft.weight);
        if (!ft.also.empty()) {
            FactorLink link;
            link.feature = ft.weight;
            double value = ft.sign;
            if (split_product(ft.element, ft.also, x, local, value, link)) {
                link.coef = value;
                out.links.push_back(link);
            } else {
                out.f[w] += value;
            }
        } else if (ft.element < 0) {
            out.f[w] += ft.sign;
        } else if (local[sz(ft.element)] >= 0) {
            out.links.push_back({local[sz(ft.element)], ft.weight, ft.sign});
        } else {
            out.f[w] += ft.sign * x[sz(ft.element)];
        }
    }
}

std::vector<int> factor_scope(const Factor& f) {
    std::vector<int> s;
    if (f.self >= 0) s.push_back(f.self);
    for (const auto& l : f.links) {
        s.push_back(l.var);
        for (int a : l.also)
            if (a >= 0) s.push_back(a);
    }
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
}

namespace {

using inference::log_inv_logit;

struct UnionFind {
    std::vector<int> parent;
    explicit UnionFind(int n) : parent(sz(n)) { std::iota(parent.begin(), parent.end(), 0); }
    int find(int x) {
        while (parent[sz(x)] != x) {
            parent[sz(x)] = parent[sz(parent[sz(x)])];
            x = parent[sz(x)];
        }
        return x;
    }
    void unite(int a, int b) {
        a = find(a);
        b = find(b);
        if (a != b) parent[sz(std::max(a, b))] = std::min(a, b);
    }
};

// The graph facts the per-row work needs, computed once.
struct GraphInfo {
    std::vector<std::vector<int>> parents;   // per element
    std::vector<std::vector<int>> children;  // per element
    std::vector<int> reverse_topo;           // binary elements, children before parents
};

GraphInfo analyse(const ir::Graph& g) {
    GraphInfo info;
    const int n = static_cast<int>(g.elements.size());
    info.parents.resize(sz(n));
    info.children.resize(sz(n));
    for (int e = 0; e < n; ++e) {
        if (!g.elements[sz(e)].binary) continue;
        info.parents[sz(e)] = g.parents(e);
        for (int p : info.parents[sz(e)]) info.children[sz(p)].push_back(e);
    }
    info.reverse_topo.assign(g.topological_order.rbegin(), g.topological_order.rend());
    return info;
}

void check_shapes(const ir::Graph& g, const Dataset& d) {
    const std::size_t n = g.elements.size();
    auto bad = [&](const std::string& what) {
        throw Error(ErrorKind::data, fmt::format("data '{}' does not fit model '{}': {}", d.name, g.name, what));
    };
    if (g.cpds.size() != n) bad("the model has no CPD for some elements");
    if (d.column_of.size() != n) bad(fmt::format("{} column assignments for {} model elements", d.column_of.size(), n));
    if (d.patterns < 0) bad("negative pattern count");
    const std::size_t p = sz(d.patterns);
    if (d.binary.size() != p * d.binary_columns()) bad("binary values do not fill patterns × columns");
    if (d.real.size() != p * d.real_columns()) bad("real values do not fill patterns × columns");
    if (d.count.size() != p) bad("one count per pattern is needed");
    for (std::size_t e = 0; e < n; ++e) {
        const int c = d.column_of[e];
        const auto& el = g.elements[e];
        if (!el.binary) {
            if (c < 0 || sz(c) >= d.real_columns())
                bad(fmt::format("covariate '{}' has no column", el.name));
        } else if (c >= 0 && (el.hidden || sz(c) >= d.binary_columns())) {
            bad(fmt::format("node '{}' has an invalid column", el.name));
        }
    }
    if (static_cast<int>(g.topological_order.size()) !=
        std::count_if(g.elements.begin(), g.elements.end(), [](const ir::Element& e) { return e.binary; }))
        bad("the topological order does not list every node");
    for (std::size_t b = 0; b < g.blocks.size(); ++b) {
        const auto& blk = g.blocks[b];
        bool fits = blk.size >= 0 && !blk.elements.empty() && blk.elements.front() == blk.element;
        for (int e : blk.elements) {
            fits = fits && e >= 0 && sz(e) < n && g.cpds[sz(e)].block == static_cast<int>(b);
            if (!fits) break;
            for (const auto& ft : g.cpds[sz(e)].features) fits = fits && ft.weight >= 0 && ft.weight < blk.size;
        }
        if (!fits) bad(fmt::format("block {} does not match its node", b + 1));
    }
}

long line_of(const Dataset& d, int pattern) {
    return sz(pattern) < d.first_line.size() ? d.first_line[sz(pattern)] : 0;
}

// Numbers in a linear predictor are refused beyond ±1e100: η² (in the variational bound and
// the Hessians) and the sums over rows of log g(±η) or of the features would overflow a
// double, and the log density would be infinite or NaN at every θ, even 0. Predictors people
// write stay within ±10³; the limit stops only numbers no one means (a constant 1.1e308).
constexpr double kMaxPredictorMagnitude = 1e100;

// |x_first Π x_also| in a row; an unobserved binary value counts as 1 (it is ±1).
double product_magnitude(const ir::Graph& g, const std::vector<double>& x, int first, const std::vector<int>& also) {
    auto one = [&](int e) { return g.elements[sz(e)].binary ? 1.0 : std::abs(x[sz(e)]); };
    double v = first < 0 ? 1.0 : one(first);
    for (int e : also) v *= one(e);
    return v;
}

// Checks that every node's constant and fixed terms together, and each learned term's
// feature, lie within ±kMaxPredictorMagnitude in a row; else a data error naming the line
// and the node. A term of binary factors alone has the same magnitude in every row, so a
// node's such terms are summed once here and only terms with a covariate are evaluated row
// by row (evaluating every term was a fifth of loading 10^6 rows of 40 nodes with 10
// binary parents).
class PredictorBounds {
public:
    explicit PredictorBounds(const ir::Graph& g) : g_(g) {
        for (std::size_t e = 0; e < g.elements.size(); ++e) {
            if (!g.elements[e].binary) continue;
            const ir::Cpd& cpd = g.cpds[e];
            Node n{static_cast<int>(e), std::abs(cpd.offset), 0.0, {}, {}};
            for (const auto& t : cpd.fixed) {
                if (binary_only(t.element, t.also)) n.fixed += std::abs(t.coef);
                else n.row_fixed.push_back(&t);
            }
            for (const auto& ft : cpd.features) {
                if (binary_only(ft.element, ft.also)) n.feature = std::max(n.feature, std::abs(ft.sign));
                else n.row_features.push_back(&ft);
            }
            nodes_.push_back(std::move(n));
        }
    }

    void check(const Dataset& d, int pattern, const std::vector<double>& x) const {
        for (const Node& n : nodes_) {
            double fixed = n.fixed;
            for (const ir::FixedTerm* t : n.row_fixed)
                fixed += std::abs(t->coef) * product_magnitude(g_, x, t->element, t->also);
            // Written as !(v <= limit) so that a NaN (0 · inf in a product) is refused too.
            if (!(fixed <= kMaxPredictorMagnitude)) refuse(d, pattern, n, "constant and fixed terms adding up to", fixed);
            if (!(n.feature <= kMaxPredictorMagnitude)) refuse(d, pattern, n, "a learned term's feature of", n.feature);
            for (const ir::Feature* ft : n.row_features) {
                const double v = std::abs(ft->sign) * product_magnitude(g_, x, ft->element, ft->also);
                if (!(v <= kMaxPredictorMagnitude)) refuse(d, pattern, n, "a learned term's feature of", v);
            }
        }
    }

private:
    struct Node {
        int element;
        double fixed;    // |offset| + Σ |c| over the fixed terms of binary factors
        double feature;  // the largest |scale| of the learned terms of binary factors
        std::vector<const ir::FixedTerm*> row_fixed;   // the fixed terms with a covariate
        std::vector<const ir::Feature*> row_features;  // the learned terms with a covariate
    };

    bool binary_only(int first, const std::vector<int>& also) const {
        if (first >= 0 && !g_.elements[sz(first)].binary) return false;
        return std::all_of(also.begin(), also.end(), [&](int e) { return g_.elements[sz(e)].binary; });
    }

    [[noreturn]] void refuse(const Dataset& d, int pattern, const Node& n, const char* what, double v) const {
        const long line = line_of(d, pattern);
        throw Error(ErrorKind::data,
                    fmt::format("{}: line {}: the linear predictor of node '{}' has {} {:g} in this row, beyond ±1e100, "
                                "where its square and its sums over rows overflow; rescale the covariates or the "
                                "fixed weights",
                                d.name, line, g_.elements[sz(n.element)].name, what, v),
                    line);
    }

    const ir::Graph& g_;
    std::vector<Node> nodes_;
};

// One row pattern's values: ±1 for observed binary elements, 0 for unobserved ones, the
// real value for covariates.
void read_values(const ir::Graph& g, const Dataset& d, int pattern, std::vector<double>& x) {
    for (std::size_t e = 0; e < g.elements.size(); ++e) {
        const int c = d.column_of[e];
        if (!g.elements[e].binary) {
            x[e] = d.real_value(pattern, c);
            if (!std::isfinite(x[e]))
                throw Error(ErrorKind::data,
                            fmt::format("{}: line {}: covariate '{}' is not a finite number", d.name,
                                        line_of(d, pattern), g.elements[e].name),
                            line_of(d, pattern));
        } else if (c < 0) {
            x[e] = 0;
        } else {
            const int v = d.value(pattern, c);
            if (v != 1 && v != -1 && v != 0)
                throw Error(ErrorKind::data,
                            fmt::format("{}: line {}: node '{}' has code {}, expected 1, -1 or missing", d.name,
                                        line_of(d, pattern), g.elements[e].name, v),
                            line_of(d, pattern));
            x[e] = v;
        }
    }
}

// The key that makes two components the same case: elements, then per factor its node,
// value, base and observed features (links follow from the graph and the elements, but for
// the observed factors of a product).
void component_key(const Component& c, std::vector<double>& key) {
    key.clear();
    key.push_back(c.size());
    for (int e : c.elements) key.push_back(e);
    key.push_back(static_cast<double>(c.factors.size()));
    for (const auto& f : c.factors) {
        key.push_back(f.element);
        key.push_back(f.value);
        key.push_back(f.base);
        key.insert(key.end(), f.f.data(), f.f.data() + f.f.size());
        // A product's link coefficient holds its observed factors' values, which vary by row.
        for (const auto& l : f.links) key.push_back(l.coef);
    }
}

// log g(z) of the fixed CPDs' terms, each element's last two arguments remembered: a root's
// z takes two values (±its offset), so most patterns need no log. The same numbers as
// log_inv_logit(z) every time.
class RecentLogs {
public:
    explicit RecentLogs(int elements) : recent_(sz(elements), {nan, 0.0, nan, 0.0}) {}
    double at(int e, double z) {
        auto& r = recent_[sz(e)];
        if (z == r[0]) return r[1];
        if (z == r[2]) return r[3];
        r = {z, log_inv_logit(z), r[0], r[1]};
        return r[1];
    }

private:
    static constexpr double nan = std::numeric_limits<double>::quiet_NaN();  // equal to nothing
    std::vector<std::array<double, 4>> recent_;  // per element: z, log g(z), older z, its log
};

struct VectorHash {
    std::size_t operator()(const std::vector<double>& v) const { return hash_doubles(v.data(), v.size()); }
};

std::string limit_message(const ir::Graph& g, const Dataset& d, int size, int width, const std::vector<int>& elements,
                          const std::vector<long>& lines, int limit) {
    std::string names;
    for (std::size_t k = 0; k < elements.size() && k < 6; ++k)
        names += (k ? ", " : "") + g.elements[sz(elements[k])].name;
    if (elements.size() > 6) names += ", ...";
    std::string where;
    for (std::size_t k = 0; k < lines.size(); ++k) where += (k ? ", " : "") + std::to_string(lines[k]);
    const std::string need = width >= size ? fmt::format("2^{} terms per row", size)
                                           : fmt::format("{} of them summed together, 2^{} terms", width, width);
    return fmt::format(
        "{}: {} {}: {} unobserved nodes ({}) are linked through the nodes they share, so summing them out "
        "exactly needs {}; the limit is {}. `vbn fit --method gibbs` samples the hidden "
        "values instead of summing them out",
        d.name, lines.size() == 1 ? "line" : "lines", where, size, names, need, limit);
}

// Variable elimination instead of enumeration: for Summation::eliminate whenever there is
// more than one variable; for automatic when enumeration is over the limit, or when
// elimination sums at least 4 times fewer terms. Its terms cost more (messages are read
// through index maps, tables are not shared between rows): in bench_target's BM_Chain*, a
// gradient's term costs 1.1-2.1 times as much by elimination, so the two break even near a
// ratio of 2, and past 4 elimination is 2.5-5 times faster (8 hidden values in a ladder of
// width 3 and in a chain of width 2; bench/results/summation.txt). No connected group of 6
// or fewer values reaches the ratio.
bool by_elimination(const EliminationOrder& o, int m, Summation how, int limit) {
    if (how == Summation::eliminate) return m >= 2;
    if (how == Summation::enumerate) return false;
    return m > limit || 4 * o.cost <= std::ldexp(1.0, m);
}

struct IntsHash {
    std::size_t operator()(const std::vector<int>& v) const {
        std::size_t h = 0xcbf29ce484222325ULL ^ v.size();
        for (int x : v) h = (h ^ static_cast<std::size_t>(x)) * 0x100000001b3ULL;
        return h;
    }
};

// Stage 1: observed nodes that are missing in every row are summed out like hidden nodes;
// the caller is told so.
void note_missing_everywhere(const ir::Graph& g, const Dataset& d, std::vector<std::string>& notes) {
    for (std::size_t e = 0; e < g.elements.size(); ++e) {
        const auto& el = g.elements[e];
        if (!el.binary || el.hidden) continue;
        const int c = d.column_of[e];
        bool all_missing = d.rows > 0 && c < 0;
        if (c >= 0 && d.rows > 0) {
            all_missing = true;
            for (int p = 0; p < d.patterns && all_missing; ++p)
                if (d.count[sz(p)] > 0 && d.value(p, c) != 0) all_missing = false;
        }
        if (all_missing)
            notes.push_back(fmt::format("node '{}' is missing in every row of '{}'; it is summed out like a hidden node",
                                        el.name, d.name));
    }
}

// Components too wide to sum out: the widest, and the first (at most three) lines and the
// rows where any appeared, for the error or the report.
void add_too_wide(TooWide& t, const Component& comp, long line, double rows, bool new_row) {
    if (comp.width > t.width || (comp.width == t.width && comp.size() > t.size)) {
        t.size = comp.size();
        t.width = comp.width;
        t.elements = comp.elements;
    }
    if (new_row) t.rows += rows;
    if (t.lines.size() < 3 && (t.lines.empty() || t.lines.back() != line)) t.lines.push_back(line);
}

// Stage 2, row pattern by row pattern: each node whose family is complete in the row adds a
// row to its block's table (or, without weights, a term of the fixed log likelihood); the
// unobserved elements that matter are split into components that share no factor (the
// likelihood's sum over them factorises: Variational MCMC, Sec. 2), each stored once with
// the rows' weight. The scratch vectors are reused from row to row.
class RowScanner {
public:
    RowScanner(const ir::Graph& g, const Dataset& d, const FamilyOptions& options, Families& out)
        : g_(g), d_(d), options_(options), out_(out), info_(analyse(g)), n_(static_cast<int>(g.elements.size())),
          x_(sz(n_)), kept_(sz(n_)), local_(sz(n_), -1), fixed_logs_(n_), bounds_(g), memo_(g, info_.parents) {
        for (const auto& b : g.blocks) tables_.emplace_back(sz(b.size) + 2);
        if (options_.pattern_terms) {
            terms_.row_start.push_back(0);
            terms_.component_start.push_back(0);
        }
    }

    void scan(int p) {
        const double w = d_.count[sz(p)];
        if (!(w >= 0) || !std::isfinite(w))
            throw Error(ErrorKind::data, fmt::format("{}: pattern {} has an invalid count {}", d_.name, p + 1, w));
        if (w == 0 && !options_.pattern_terms) return;
        read_values(g_, d_, p, x_);
        bounds_.check(d_, p, x_);
        prune_barren();
        UnionFind uf(n_);
        route_factors(w, uf);
        // One component per union-find root, variables and factors in element order.
        for (int root : unobserved_)
            if (uf.find(root) == root) add_component(root, p, w, uf);
        end_pattern();
    }

    // The pattern terms with complete-family rows numbered through the blocks (stage 3's
    // order): block b's rows follow those of the blocks before it.
    PatternTerms pattern_terms() {
        if (!options_.pattern_terms) return {};
        std::vector<int> first(tables_.size() + 1, 0);
        for (std::size_t b = 0; b < tables_.size(); ++b) first[b + 1] = first[b] + static_cast<int>(tables_[b].rows());
        for (std::size_t k = 0; k < terms_.rows.size(); ++k) terms_.rows[k] += first[sz(row_blocks_[k])];
        return std::move(terms_);
    }

    // Throws Error(limit) naming the widest component found too wide to sum out, if any
    // (unless the options say to report them instead).
    void check_limit() const {
        const TooWide& t = out_.too_wide;
        if (t.width == 0 || !options_.refuse_too_wide) return;
        const long first = t.lines.empty() ? 0 : t.lines.front();
        throw Error(ErrorKind::limit,
                    limit_message(g_, d_, t.size, t.width, t.elements, t.lines, options_.max_enumerated), first);
    }

    std::deque<RowTable>& tables() { return tables_; }

private:
    // Barren pruning: an unobserved element is kept iff it has an observed child or a kept
    // unobserved child; everything else sums to one and drops out.
    void prune_barren() {
        unobserved_.clear();
        for (int e : info_.reverse_topo) {
            kept_[sz(e)] = 0;
            if (x_[sz(e)] != 0) continue;
            for (int c : info_.children[sz(e)])
                if (x_[sz(c)] != 0 || kept_[sz(c)]) {
                    kept_[sz(e)] = 1;
                    break;
                }
            if (kept_[sz(e)]) unobserved_.push_back(e);
        }
        std::sort(unobserved_.begin(), unobserved_.end());
    }

    // Factors touching kept unobserved elements (their own CPDs and those of observed
    // children) are listed and their unobserved elements united; every other observed node
    // has a complete family in this row.
    void route_factors(double w, UnionFind& uf) {
        factor_nodes_.clear();
        for (int e = 0; e < n_; ++e) {
            if (!g_.elements[sz(e)].binary) continue;
            if (x_[sz(e)] == 0 && !kept_[sz(e)]) continue;
            bool involved = x_[sz(e)] == 0;
            for (int q : info_.parents[sz(e)])
                if (g_.elements[sz(q)].binary && x_[sz(q)] == 0) involved = true;
            if (!involved) {
                add_complete(e, w);
                continue;
            }
            factor_nodes_.push_back(e);
            int anchor = x_[sz(e)] == 0 ? e : -1;
            for (int q : info_.parents[sz(e)]) {
                if (!g_.elements[sz(q)].binary || x_[sz(q)] != 0) continue;
                if (anchor < 0)
                    anchor = q;
                else
                    uf.unite(anchor, q);
            }
        }
    }

    // Node e's family is complete in this row: one (y, a, f) row of its block's table, or for
    // a node without weights its term of the fixed log likelihood.
    void add_complete(int e, double w) {
        const ir::Cpd& cpd = g_.cpds[sz(e)];
        if (cpd.block >= 0) {
            if (!options_.complete_rows) return;
            RowTable& t = tables_[sz(cpd.block)];
            int* memo = memo_.entry(e, x_);
            int r = memo ? *memo : -1;
            if (r >= 0) {
                t.add_weight(r, w);
            } else {
                fold_cpd(g_, e, x_, local_, scratch_);
                double* row = t.candidate();
                row[0] = x_[sz(e)];
                row[1] = scratch_.base;
                std::copy(scratch_.f.data(), scratch_.f.data() + scratch_.f.size(), row + 2);
                r = t.commit(w);
                if (memo) *memo = r;
            }
            if (options_.pattern_terms) {
                terms_.rows.push_back(r);  // numbered within its block until pattern_terms()
                row_blocks_.push_back(cpd.block);
            }
        } else {
            double a = cpd.offset;
            for (const auto& ft : cpd.fixed) {
                double t = ft.coef * x_[sz(ft.element)];
                for (int e : ft.also) t *= x_[sz(e)];
                a += t;
            }
            const double l = fixed_logs_.at(e, x_[sz(e)] * a);
            out_.fixed_log_likelihood += w * l;
            pattern_fixed_ += l;
        }
    }

    // Closes the pattern's lists in the pattern terms.
    void end_pattern() {
        if (!options_.pattern_terms) return;
        terms_.row_start.push_back(static_cast<int>(terms_.rows.size()));
        terms_.component_start.push_back(static_cast<int>(terms_.components.size()));
        terms_.fixed.push_back(pattern_fixed_);
        pattern_fixed_ = 0;
    }

    // The component of `root`: its elements (local_ numbers them while its factors are
    // folded), its factors and how it is summed, then stored or, when too wide to sum out,
    // remembered for the error.
    void add_component(int root, int p, double w, UnionFind& uf) {
        Component comp;
        for (int e : unobserved_)
            if (uf.find(e) == root) {
                local_[sz(e)] = static_cast<int>(comp.elements.size());
                comp.elements.push_back(e);
            }
        const int m = comp.size();
        const bool enumerate_only = options_.summation == Summation::enumerate;
        if (!enumerate_only || m <= options_.max_enumerated) collect_factors(comp, root, uf);
        for (int e : comp.elements) local_[sz(e)] = -1;
        comp.width = m;
        if (!enumerate_only) {
            const EliminationOrder& o = order_of(comp);
            comp.width = o.width;
            if (o.width <= options_.max_enumerated && by_elimination(o, m, options_.summation, options_.max_enumerated))
                comp.order = o.order;
        }
        if (comp.width > options_.max_enumerated) {
            add_too_wide(out_.too_wide, comp, line_of(d_, p), w, too_wide_pattern_ != p);
            too_wide_pattern_ = p;
            return;
        }
        const int c = record_case(std::move(comp), p, w);
        if (options_.pattern_terms) terms_.components.push_back(c);
    }

    // The component's min-fill order, computed once per shape: rows with the same pattern of
    // missing values (and so the same factor scopes) share it.
    const EliminationOrder& order_of(const Component& comp) {
        const int m = comp.size();
        scopes_.clear();
        shape_.assign(1, m);
        for (const auto& f : comp.factors) {
            std::vector<int> s = factor_scope(f);
            shape_.push_back(static_cast<int>(s.size()));
            shape_.insert(shape_.end(), s.begin(), s.end());
            scopes_.push_back(std::move(s));
        }
        auto it = orders_.find(shape_);
        if (it == orders_.end())
            it = orders_.emplace(shape_, min_fill_order(m, scopes_, options_.max_enumerated)).first;
        return it->second;
    }

    // A factor belongs to the component of its own node when unobserved, else of its first
    // unobserved parent.
    void collect_factors(Component& comp, int root, UnionFind& uf) {
        for (int j : factor_nodes_) {
            int owner = x_[sz(j)] == 0 ? j : -1;
            if (owner < 0)
                for (int q : info_.parents[sz(j)])
                    if (g_.elements[sz(q)].binary && x_[sz(q)] == 0) {
                        owner = q;
                        break;
                    }
            if (uf.find(owner) != root) continue;
            Factor f;
            fold_cpd(g_, j, x_, local_, f);
            f.value = static_cast<int>(x_[sz(j)]);
            f.self = f.value == 0 ? local_[sz(j)] : -1;
            comp.factors.push_back(std::move(f));
        }
        // Unobserved CPDs first, then observed children: the order the header promises.
        std::stable_partition(comp.factors.begin(), comp.factors.end(), [](const Factor& f) { return f.value == 0; });
    }

    // Identical cases from different rows are stored once, their weights summed. Returns
    // the case's index.
    int record_case(Component comp, int p, double w) {
        component_key(comp, key_);
        auto [it, inserted] = case_index_.emplace(key_, static_cast<int>(out_.components.size()));
        if (!inserted) {
            out_.components[sz(it->second)].weight += w;
            return it->second;
        }
        comp.weight = w;
        comp.first_line = line_of(d_, p);
        for (const auto& f : comp.factors)
            if (f.block >= 0) comp.blocks.push_back(f.block);
        std::sort(comp.blocks.begin(), comp.blocks.end());
        comp.blocks.erase(std::unique(comp.blocks.begin(), comp.blocks.end()), comp.blocks.end());
        if (comp.size() > out_.largest_component) {
            out_.largest_component = comp.size();
            out_.largest_line = comp.first_line;
        }
        if (comp.width > out_.widest_component) {
            out_.widest_component = comp.width;
            out_.widest_line = comp.first_line;
        }
        out_.components.push_back(std::move(comp));
        return it->second;
    }

    const ir::Graph& g_;
    const Dataset& d_;
    const FamilyOptions& options_;
    Families& out_;
    const GraphInfo info_;
    const int n_;
    std::deque<RowTable> tables_;  // deque: tables hold pointers to themselves, never move them
    std::vector<double> x_;        // the row's values (read_values)
    std::vector<char> kept_;       // unobserved elements that matter (prune_barren)
    std::vector<int> local_;       // an element's variable in the component being built, else -1
    std::vector<int> unobserved_;  // the kept ones, ascending
    std::vector<int> factor_nodes_;
    std::vector<double> key_;
    Factor scratch_;
    std::unordered_map<std::vector<double>, int, VectorHash> case_index_;
    RecentLogs fixed_logs_;
    PredictorBounds bounds_;  // the ±1e100 check of each row
    FamilyRowMemo memo_;      // complete-family rows met before, by their binary values
    int too_wide_pattern_ = -1;  // the last pattern counted in Families::too_wide
    std::unordered_map<std::vector<int>, EliminationOrder, IntsHash> orders_;  // by shape (order_of)
    std::vector<int> shape_;                  // order_of's key: m, then each factor's scope
    std::vector<std::vector<int>> scopes_;    // order_of's factor scopes
    PatternTerms terms_;           // with FamilyOptions::pattern_terms
    std::vector<int> row_blocks_;  // per entry of terms_.rows: its block
    double pattern_fixed_ = 0;     // the current pattern's fixed-CPD terms
};

// Stage 3: each block's table as its node's complete family.
// The tables are consumed: each is freed as its rows are copied out, so that the table and
// its family (each about as large as the data: at 10^6 distinct rows of 11 weights, 104 and
// 112 MB) are not held whole at once.
std::vector<CompleteFamily> complete_families(const ir::Graph& g, std::deque<RowTable>& tables) {
    const int nblocks = static_cast<int>(g.blocks.size());
    std::vector<CompleteFamily> complete(sz(nblocks));
    for (int b = 0; b < nblocks; ++b) {
        CompleteFamily& cf = complete[sz(b)];
        RowTable& t = tables[sz(b)];
        t.drop_index();
        const auto rows = static_cast<Eigen::Index>(t.rows());
        const int dim = g.blocks[sz(b)].size;
        cf.element = g.blocks[sz(b)].element;
        cf.block = b;
        cf.f.resize(rows, dim);
        cf.y.resize(rows);
        cf.a.resize(rows);
        cf.w.resize(rows);
        for (Eigen::Index r = 0; r < rows; ++r) {
            const double* row = t.row(sz(static_cast<int>(r)));
            cf.y[r] = row[0];
            cf.a[r] = row[1];
            for (int k = 0; k < dim; ++k) cf.f(r, k) = row[2 + k];
            cf.w[r] = t.weight(sz(static_cast<int>(r)));
            if (r % 4096 == 4095) t.release_before(sz(static_cast<int>(r)));
        }
        t.release_before(sz(static_cast<int>(rows)));
    }
    return complete;
}

// Stage 4: which components involve each block, and the groups of blocks that components
// couple (directly or through a chain of them): the posterior factorises over the groups.
void couple_blocks(Families& out, int nblocks) {
    out.components_of_block.resize(sz(nblocks));
    UnionFind coupled(nblocks);
    for (int c = 0; c < static_cast<int>(out.components.size()); ++c) {
        const auto& blocks = out.components[sz(c)].blocks;
        for (int b : blocks) out.components_of_block[sz(b)].push_back(c);
        for (std::size_t k = 1; k < blocks.size(); ++k) coupled.unite(blocks[0], blocks[k]);
    }
    std::vector<int> group_of(sz(nblocks), -1);
    for (int b = 0; b < nblocks; ++b) {
        const int r = coupled.find(b);
        if (group_of[sz(r)] < 0) {
            group_of[sz(r)] = static_cast<int>(out.coupled_groups.size());
            out.coupled_groups.emplace_back();
        }
        out.coupled_groups[sz(group_of[sz(r)])].push_back(b);
    }
}

}  // namespace

Families build_families(const ir::Graph& g, const Dataset& d, const FamilyOptions& options) {
    check_shapes(g, d);
    Families out;
    note_missing_everywhere(g, d, out.notes);
    RowScanner scanner(g, d, options, out);
    for (int p = 0; p < d.patterns; ++p) scanner.scan(p);
    scanner.check_limit();
    out.complete = complete_families(g, scanner.tables());
    out.pattern_terms = scanner.pattern_terms();
    couple_blocks(out, static_cast<int>(g.blocks.size()));
    return out;
}

}  // namespace vbn
