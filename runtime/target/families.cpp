#include "runtime/target/families.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"
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

using inference::log_inv_logit;

std::size_t sz(int i) { return static_cast<std::size_t>(i); }

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
        if (blk.element < 0 || sz(blk.element) >= n || g.cpds[sz(blk.element)].block != static_cast<int>(b) ||
            static_cast<int>(g.cpds[sz(blk.element)].features.size()) != blk.size)
            bad(fmt::format("block {} does not match its node", b + 1));
    }
}

long line_of(const Dataset& d, int pattern) {
    return sz(pattern) < d.first_line.size() ? d.first_line[sz(pattern)] : 0;
}

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

// Folds a CPD's observed parents into base and f; unobserved parents (local[e] >= 0)
// become links. The Factor's own value/self are set by the caller.
void fold_cpd(const ir::Graph& g, int element, const std::vector<double>& x, const std::vector<int>& local,
              Factor& out) {
    const ir::Cpd& cpd = g.cpds[sz(element)];
    out.element = element;
    out.block = cpd.block;
    out.base = cpd.offset;
    out.links.clear();
    for (const auto& t : cpd.fixed) {
        if (local[sz(t.element)] >= 0)
            out.links.push_back({local[sz(t.element)], -1, t.coef});
        else
            out.base += t.coef * x[sz(t.element)];
    }
    out.f.setZero(static_cast<Eigen::Index>(cpd.features.size()));
    for (std::size_t k = 0; k < cpd.features.size(); ++k) {
        const auto& ft = cpd.features[k];
        if (ft.element < 0)
            out.f[static_cast<Eigen::Index>(k)] = ft.sign;
        else if (local[sz(ft.element)] >= 0)
            out.links.push_back({local[sz(ft.element)], static_cast<int>(k), ft.sign});
        else
            out.f[static_cast<Eigen::Index>(k)] = ft.sign * x[sz(ft.element)];
    }
}

// The key that makes two components the same case: elements, then per factor its node,
// value, base and observed features (links follow from the graph and the elements).
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

std::string limit_message(const ir::Graph& g, const Dataset& d, int size, const std::vector<int>& elements,
                          const std::vector<long>& lines, int limit) {
    std::string names;
    for (std::size_t k = 0; k < elements.size() && k < 6; ++k)
        names += (k ? ", " : "") + g.elements[sz(elements[k])].name;
    if (elements.size() > 6) names += ", ...";
    std::string where;
    for (std::size_t k = 0; k < lines.size(); ++k) where += (k ? ", " : "") + std::to_string(lines[k]);
    return fmt::format(
        "{}: {} {}: {} unobserved nodes ({}) are linked through the nodes they share, so summing them out "
        "exactly needs 2^{} terms per row; the limit is {}. Use `--method gibbs`, which samples the hidden "
        "values instead of summing them out",
        d.name, lines.size() == 1 ? "line" : "lines", where, size, names, size, limit);
}

}  // namespace

Families build_families(const ir::Graph& g, const Dataset& d, const FamilyOptions& options) {
    check_shapes(g, d);
    const GraphInfo info = analyse(g);
    const int n = static_cast<int>(g.elements.size());
    const int nblocks = static_cast<int>(g.blocks.size());

    Families out;
    for (int e = 0; e < n; ++e) {
        const auto& el = g.elements[sz(e)];
        if (!el.binary || el.hidden) continue;
        const int c = d.column_of[sz(e)];
        bool all_missing = d.rows > 0 && c < 0;
        if (c >= 0 && d.rows > 0) {
            all_missing = true;
            for (int p = 0; p < d.patterns && all_missing; ++p)
                if (d.count[sz(p)] > 0 && d.value(p, c) != 0) all_missing = false;
        }
        if (all_missing)
            out.notes.push_back(fmt::format("node '{}' is missing in every row of '{}'; it is summed out like a hidden node",
                                            el.name, d.name));
    }

    std::deque<RowTable> tables;  // deque: tables hold pointers to themselves, never move them
    for (const auto& b : g.blocks) tables.emplace_back(sz(b.size) + 2);

    std::vector<double> x(sz(n));
    std::vector<char> kept(sz(n));
    std::vector<int> local(sz(n), -1);
    std::vector<int> unobserved;
    std::vector<int> factor_nodes;
    std::vector<double> key;
    Factor scratch;
    std::unordered_map<std::vector<double>, int, VectorHash> case_index;
    RecentLogs fixed_logs(n);

    int too_big = 0;
    std::vector<int> too_big_elements;
    std::vector<long> too_big_lines;

    for (int p = 0; p < d.patterns; ++p) {
        const double w = d.count[sz(p)];
        if (!(w >= 0) || !std::isfinite(w))
            throw Error(ErrorKind::data, fmt::format("{}: pattern {} has an invalid count {}", d.name, p + 1, w));
        if (w == 0) continue;
        read_values(g, d, p, x);

        // Barren pruning: an unobserved element is kept iff it has an observed child or a
        // kept unobserved child; everything else sums to one and drops out.
        unobserved.clear();
        for (int e : info.reverse_topo) {
            kept[sz(e)] = 0;
            if (x[sz(e)] != 0) continue;
            for (int c : info.children[sz(e)])
                if (x[sz(c)] != 0 || kept[sz(c)]) {
                    kept[sz(e)] = 1;
                    break;
                }
            if (kept[sz(e)]) unobserved.push_back(e);
        }
        std::sort(unobserved.begin(), unobserved.end());

        // Factors touching kept unobserved elements: their own CPDs and those of observed
        // children. All other observed nodes have complete families in this row.
        factor_nodes.clear();
        UnionFind uf(n);
        for (int e = 0; e < n; ++e) {
            if (!g.elements[sz(e)].binary) continue;
            if (x[sz(e)] == 0 && !kept[sz(e)]) continue;
            bool involved = x[sz(e)] == 0;
            for (int q : info.parents[sz(e)])
                if (g.elements[sz(q)].binary && x[sz(q)] == 0) involved = true;
            if (!involved) {
                const ir::Cpd& cpd = g.cpds[sz(e)];
                if (cpd.block >= 0) {
                    RowTable& t = tables[sz(cpd.block)];
                    fold_cpd(g, e, x, local, scratch);
                    double* row = t.candidate();
                    row[0] = x[sz(e)];
                    row[1] = scratch.base;
                    std::copy(scratch.f.data(), scratch.f.data() + scratch.f.size(), row + 2);
                    t.commit(w);
                } else {
                    double a = cpd.offset;
                    for (const auto& ft : cpd.fixed) a += ft.coef * x[sz(ft.element)];
                    out.fixed_log_likelihood += w * fixed_logs.at(e, x[sz(e)] * a);
                }
                continue;
            }
            factor_nodes.push_back(e);
            int anchor = x[sz(e)] == 0 ? e : -1;
            for (int q : info.parents[sz(e)]) {
                if (!g.elements[sz(q)].binary || x[sz(q)] != 0) continue;
                if (anchor < 0)
                    anchor = q;
                else
                    uf.unite(anchor, q);
            }
        }
        if (unobserved.empty()) continue;

        // One component per union-find root, variables and factors in element order.
        for (int root : unobserved) {
            if (uf.find(root) != root) continue;
            Component comp;
            for (int e : unobserved)
                if (uf.find(e) == root) {
                    local[sz(e)] = static_cast<int>(comp.elements.size());
                    comp.elements.push_back(e);
                }
            if (comp.size() > options.max_enumerated) {
                if (comp.size() > too_big) {
                    too_big = comp.size();
                    too_big_elements = comp.elements;
                }
                if (too_big_lines.size() < 3 && (too_big_lines.empty() || too_big_lines.back() != line_of(d, p)))
                    too_big_lines.push_back(line_of(d, p));
                for (int e : comp.elements) local[sz(e)] = -1;
                continue;
            }
            for (int j : factor_nodes) {
                int owner = x[sz(j)] == 0 ? j : -1;
                if (owner < 0)
                    for (int q : info.parents[sz(j)])
                        if (g.elements[sz(q)].binary && x[sz(q)] == 0) {
                            owner = q;
                            break;
                        }
                if (uf.find(owner) != root) continue;
                Factor f;
                fold_cpd(g, j, x, local, f);
                f.value = static_cast<int>(x[sz(j)]);
                f.self = f.value == 0 ? local[sz(j)] : -1;
                comp.factors.push_back(std::move(f));
            }
            // Unobserved CPDs first, then observed children: the order the header promises.
            std::stable_partition(comp.factors.begin(), comp.factors.end(),
                                  [](const Factor& f) { return f.value == 0; });
            for (int e : comp.elements) local[sz(e)] = -1;

            component_key(comp, key);
            auto [it, inserted] = case_index.emplace(key, static_cast<int>(out.components.size()));
            if (inserted) {
                comp.weight = w;
                comp.first_line = line_of(d, p);
                for (const auto& f : comp.factors)
                    if (f.block >= 0) comp.blocks.push_back(f.block);
                std::sort(comp.blocks.begin(), comp.blocks.end());
                comp.blocks.erase(std::unique(comp.blocks.begin(), comp.blocks.end()), comp.blocks.end());
                out.largest_component = std::max(out.largest_component, comp.size());
                out.components.push_back(std::move(comp));
            } else {
                out.components[sz(it->second)].weight += w;
            }
        }
    }
    if (too_big > 0) {
        const long first = too_big_lines.empty() ? 0 : too_big_lines.front();
        throw Error(ErrorKind::limit,
                    limit_message(g, d, too_big, too_big_elements, too_big_lines, options.max_enumerated), first);
    }

    out.complete.resize(sz(nblocks));
    for (int b = 0; b < nblocks; ++b) {
        CompleteFamily& cf = out.complete[sz(b)];
        const RowTable& t = tables[sz(b)];
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
        }
    }

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
    return out;
}

}  // namespace vbn
