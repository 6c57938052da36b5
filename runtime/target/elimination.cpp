#include "runtime/target/elimination.hpp"

#include "runtime/index.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace vbn {

namespace {

void add_all(std::vector<int>& to, const std::vector<int>& from) {
    for (int v : from)
        if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
}

int bit_of(const std::vector<int>& clique, int var) {
    return static_cast<int>(std::find(clique.begin(), clique.end(), var) - clique.begin());
}

// Configuration `config` of a clique read at a sub-clique whose variable i sits at bit pos[i].
inline int sub_index(int config, const int* pos, int k) {
    int idx = 0;
    for (int i = 0; i < k; ++i) idx |= ((config >> pos[i]) & 1) << i;
    return idx;
}

// Whether Π x over the variables in `mask` is −1 in configuration `config` (bit 1: x = +1):
// an odd number of them at −1. One variable for a parent, several for a product of parents.
inline bool odd_zeros(int config, int mask) {
    return __builtin_popcount(static_cast<unsigned>(mask & ~config)) & 1;
}

}  // namespace

Eliminator::Eliminator(const Families& families, std::vector<int> block_offsets) : offsets_(std::move(block_offsets)) {
    plan_of_.assign(families.components.size(), -1);
    for (std::size_t c = 0; c < families.components.size(); ++c) {
        if (!families.components[c].eliminated()) continue;
        plan_of_[c] = static_cast<int>(plans_.size());
        plans_.push_back(make_plan(families.components[c]));
    }
}

// Symbolic bucket elimination along the component's order: each factor to the bucket of its
// first-eliminated variable; each bucket's clique is its own variable then the rest of its
// factors' and children's messages' variables (ascending), and its message goes to the bucket
// of the first-eliminated of the rest.
Eliminator::Plan Eliminator::make_plan(const Component& comp) {
    const int m = comp.size();
    std::vector<int> step(sz(m), 0);
    for (int t = 0; t < m; ++t) step[sz(comp.order[sz(t)])] = t;
    std::vector<std::vector<int>> scope(sz(m)), factors(sz(m)), children(sz(m)), clique(sz(m));
    for (int j = 0; j < static_cast<int>(comp.factors.size()); ++j) {
        const std::vector<int> s = factor_scope(comp.factors[sz(j)]);
        int first = s[0];
        for (int v : s) first = step[sz(v)] < step[sz(first)] ? v : first;
        add_all(scope[sz(step[sz(first)])], s);
        factors[sz(step[sz(first)])].push_back(j);
    }
    Plan p;
    p.factors_of = comp.factors;
    p.buckets.resize(sz(m));
    for (int t = 0; t < m; ++t) {
        const int v = comp.order[sz(t)];
        std::vector<int> rest;
        for (int u : scope[sz(t)])
            if (u != v) rest.push_back(u);
        std::sort(rest.begin(), rest.end());
        clique[sz(t)] = {v};
        clique[sz(t)].insert(clique[sz(t)].end(), rest.begin(), rest.end());
        Bucket& b = p.buckets[sz(t)];
        b.size = static_cast<int>(clique[sz(t)].size());
        if (!rest.empty()) {
            int first = rest[0];
            for (int u : rest) first = step[sz(u)] < step[sz(first)] ? u : first;
            b.parent = step[sz(first)];
            add_all(scope[sz(b.parent)], rest);
            children[sz(b.parent)].push_back(t);
        }
    }
    std::vector<int> first_link(comp.factors.size() + 1, 0);
    for (std::size_t j = 0; j < comp.factors.size(); ++j)
        first_link[j + 1] = first_link[j] + static_cast<int>(comp.factors[j].links.size());
    p.links = first_link.back();
    for (int t = 0; t < m; ++t) {
        Bucket& b = p.buckets[sz(t)];
        const auto& cl = clique[sz(t)];
        b.logs_at = p.logs_size;
        b.message_at = p.messages_size;
        p.logs_size += 1L << b.size;
        p.messages_size += 1L << (b.size - 1);
        b.first_factor = static_cast<int>(p.factors.size());
        for (int j : factors[sz(t)]) {
            const Factor& f = comp.factors[sz(j)];
            PlannedFactor pf{j, f.self >= 0 ? bit_of(cl, f.self) : -1, first_link[sz(j)], static_cast<int>(p.link_bits.size())};
            for (const auto& l : f.links) {
                int mask = 1 << bit_of(cl, l.var);
                for (int a : l.also)
                    if (a >= 0) mask |= 1 << bit_of(cl, a);
                p.link_bits.push_back(mask);
            }
            p.factors.push_back(pf);
        }
        b.end_factor = static_cast<int>(p.factors.size());
        b.first_child = static_cast<int>(p.children.size());
        p.children.insert(p.children.end(), children[sz(t)].begin(), children[sz(t)].end());
        b.end_child = static_cast<int>(p.children.size());
        b.first_pos = static_cast<int>(p.pos.size());
        if (b.parent >= 0)
            for (std::size_t i = 1; i < cl.size(); ++i) p.pos.push_back(bit_of(clique[sz(b.parent)], cl[i]));
    }
    return p;
}

Eliminator::Scratch Eliminator::make_scratch() const {
    Scratch s;
    std::size_t logs = 0, messages = 0, factors = 0, links = 0;
    for (const auto& p : plans_) {
        logs = std::max(logs, sz(p.logs_size));
        messages = std::max(messages, sz(p.messages_size));
        factors = std::max(factors, p.factors_of.size());
        links = std::max(links, sz(p.links));
    }
    s.logs.resize(logs);
    s.marginal.resize(logs);
    s.messages.resize(messages);
    s.rest.resize(messages);
    s.eta0.resize(factors);
    s.resid.resize(factors);
    s.coef.resize(links);
    s.link_acc.resize(links);
    return s;
}

double Eliminator::factor_eta(const Plan& p, const PlannedFactor& pf, int config, const Scratch& s, double& x) {
    const Factor& f = p.factors_of[sz(pf.factor)];
    double eta = s.eta0[sz(pf.factor)];
    const int n = static_cast<int>(f.links.size());
    for (int l = 0; l < n; ++l) {
        const double c = s.coef[sz(pf.first_link + l)];
        eta += odd_zeros(config, p.link_bits[sz(pf.first_bit + l)]) ? -c : c;
    }
    x = pf.self_bit < 0 ? f.value : ((config >> pf.self_bit) & 1 ? 1.0 : -1.0);
    return eta;
}

// L over each clique: its factors' log g(x η) (the stable form min(z, 0) − log1p(e^{−|z|}))
// plus its children's messages; then v, bit 0, summed out by log-sum-exp with the larger
// term taken out, so that nothing overflows or underflows to −∞.
double Eliminator::forward(const Plan& p, Scratch& s) const {
    double log_z = 0;
    for (const Bucket& b : p.buckets) {
        const int n = 1 << b.size;
        double* L = s.logs.data() + b.logs_at;
        std::fill(L, L + n, 0.0);
        for (int k = b.first_factor; k < b.end_factor; ++k) {
            const PlannedFactor& pf = p.factors[sz(k)];
            for (int c = 0; c < n; ++c) {
                double x = 0;
                const double eta = factor_eta(p, pf, c, s, x);  // sets x: read it only after the call
                const double z = x * eta;
                L[c] += std::min(z, 0.0) - std::log1p(std::exp(-std::abs(z)));
            }
        }
        for (int k = b.first_child; k < b.end_child; ++k) {
            const Bucket& u = p.buckets[sz(p.children[sz(k)])];
            const double* msg = s.messages.data() + u.message_at;
            const int* pos = p.pos.data() + u.first_pos;
            for (int c = 0; c < n; ++c) L[c] += msg[sub_index(c, pos, u.size - 1)];
        }
        double* M = s.messages.data() + b.message_at;
        for (int c = 0; c < n / 2; ++c) {
            const double a = L[2 * c], d = L[2 * c + 1];
            M[c] = std::max(a, d) + std::log1p(std::exp(-std::abs(a - d)));
        }
        if (b.parent < 0) log_z += M[0];
    }
    return log_z;
}

// From the roots down: a clique's marginal is p(v | rest) p(rest) = e^{L − message} p(rest)
// (a root's rest is empty, p = 1), and a child's p(rest) sums this marginal over the
// variables the child does not share. Each factor of a wanted block then adds its expected
// x_j g(−x_j η_j) (and times each link's variable) over its bucket's clique.
void Eliminator::backward(const Plan& p, bool all_blocks, int only_block, Scratch& s) const {
    std::fill(s.resid.begin(), s.resid.begin() + static_cast<long>(p.factors_of.size()), 0.0);
    std::fill(s.link_acc.begin(), s.link_acc.begin() + p.links, 0.0);
    for (int t = static_cast<int>(p.buckets.size()) - 1; t >= 0; --t) {
        const Bucket& b = p.buckets[sz(t)];
        const int n = 1 << b.size;
        const double* L = s.logs.data() + b.logs_at;
        const double* M = s.messages.data() + b.message_at;
        double* R = s.rest.data() + b.message_at;
        double* P = s.marginal.data() + b.logs_at;
        if (b.parent < 0) R[0] = 1;
        for (int c = 0; c < n; ++c) P[c] = std::exp(L[c] - M[c >> 1]) * R[c >> 1];
        for (int k = b.first_child; k < b.end_child; ++k) {
            const Bucket& u = p.buckets[sz(p.children[sz(k)])];
            double* Ru = s.rest.data() + u.message_at;
            std::fill(Ru, Ru + (1 << (u.size - 1)), 0.0);
            const int* pos = p.pos.data() + u.first_pos;
            for (int c = 0; c < n; ++c) Ru[sub_index(c, pos, u.size - 1)] += P[c];
        }
        for (int k = b.first_factor; k < b.end_factor; ++k) {
            const PlannedFactor& pf = p.factors[sz(k)];
            const Factor& f = p.factors_of[sz(pf.factor)];
            if (f.block < 0 || (!all_blocks && f.block != only_block)) continue;
            const int links = static_cast<int>(f.links.size());
            for (int c = 0; c < n; ++c) {
                double x = 0;
                const double eta = factor_eta(p, pf, c, s, x);  // sets x: read it only after the call
                const double z = x * eta;
                const double e = std::exp(-std::abs(z));
                const double r = P[c] * x * (z >= 0 ? e : 1.0) / (1.0 + e);
                s.resid[sz(pf.factor)] += r;
                for (int l = 0; l < links; ++l)
                    s.link_acc[sz(pf.first_link + l)] += odd_zeros(c, p.link_bits[sz(pf.first_bit + l)]) ? -r : r;
            }
        }
    }
}

// ∂η_j/∂θ_b = f_j + Σ_links sign_l x_{var_l} e_{feature_l}: each factor's expectations times
// weight, as Target::component_term adds them.
void Eliminator::scatter(const Plan& p, double weight, int only_block, double* grad, const Scratch& s) const {
    int li = 0;
    for (std::size_t j = 0; j < p.factors_of.size(); ++j) {
        const Factor& f = p.factors_of[j];
        const bool wanted = f.block >= 0 && (only_block < 0 || f.block == only_block);
        if (wanted) {
            double* g = only_block < 0 ? grad + offsets_[sz(f.block)] : grad;
            Eigen::Map<Eigen::VectorXd>(g, f.f.size()) += (weight * s.resid[j]) * f.f;
            for (std::size_t k = 0; k < f.links.size(); ++k)
                if (f.links[k].feature >= 0)
                    g[f.links[k].feature] += weight * f.links[k].coef * s.link_acc[sz(li + static_cast<int>(k))];
        }
        li += static_cast<int>(f.links.size());
    }
}

double Eliminator::component(int c, double weight, In theta, double* grad, int only_block, Scratch& s) const {
    const Plan& p = plans_[sz(plan_index(c))];
    int li = 0;
    for (std::size_t j = 0; j < p.factors_of.size(); ++j) {
        const Factor& f = p.factors_of[j];
        double e0 = f.base;
        const double* th = f.block >= 0 ? theta.data() + offsets_[sz(f.block)] : nullptr;
        if (th)
            for (int k = 0; k < f.f.size(); ++k) e0 += th[k] * f.f[k];
        s.eta0[j] = e0;
        for (const auto& l : f.links) s.coef[sz(li++)] = l.feature >= 0 ? th[l.feature] * l.coef : l.coef;
    }
    const double value = weight * forward(p, s);
    if (grad) {
        backward(p, only_block < 0, only_block, s);
        scatter(p, weight, only_block, grad, s);
    }
    return value;
}

}  // namespace vbn
