// Exact sign flips and exchangeable hidden nodes (lang/symmetry.hpp). Both are checked term by
// term: a relabelling is exact when it maps every CPD to itself (with θ changed to match) and
// the Gaussian prior of every block it touches to itself; anything else breaks it for some data.
#include "lang/symmetry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace vbn::lang {
namespace {

const ir::Cpd& cpd_of(const ir::Graph& g, int e) { return g.cpds[static_cast<std::size_t>(e)]; }
const ir::Block& block_of(const ir::Graph& g, int b) { return g.blocks[static_cast<std::size_t>(b)]; }

bool hidden_binary(const ir::Graph& g, int e) {
    const ir::Element& el = g.elements[static_cast<std::size_t>(e)];
    return el.binary && el.hidden;
}

// Positions in c's features of the learned terms on element h alone (not in a product).
std::vector<int> features_on(const ir::Graph& g, int c, int h) {
    std::vector<int> out;
    const auto& f = cpd_of(g, c).features;
    for (std::size_t k = 0; k < f.size(); ++k)
        if (f[k].element == h && f[k].also.empty()) out.push_back(static_cast<int>(k));
    return out;
}

// Positions in c's block of the learned weights on element h alone, ascending.
std::vector<int> weights_on(const ir::Graph& g, int c, int h) {
    std::vector<int> out;
    for (int k : features_on(g, c, h)) out.push_back(cpd_of(g, c).features[static_cast<std::size_t>(k)].weight);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

// Positions in h's own block of the weights its features read, ascending.
std::vector<int> own_weights(const ir::Graph& g, int h) {
    std::vector<int> out;
    for (const ir::Feature& f : cpd_of(g, h).features) out.push_back(f.weight);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

// Block b serves one element whose features each read a weight of their own (no declared
// parameter ties anything in it): the swap rules below assume that.
bool untied(const ir::Graph& g, int b) {
    if (b < 0) return true;
    const ir::Block& blk = g.blocks[static_cast<std::size_t>(b)];
    if (blk.elements.size() > 1) return false;
    const auto& f = cpd_of(g, blk.element).features;
    for (std::size_t k = 0; k < f.size(); ++k)
        if (f[k].weight != static_cast<int>(k)) return false;
    return true;
}

// The sum of c's fixed coefficients on h alone: the fixed part of h's term in c's logit.
double fixed_on(const ir::Graph& g, int c, int h) {
    double sum = 0;
    for (const ir::FixedTerm& t : cpd_of(g, c).fixed)
        if (t.element == h && t.also.empty()) sum += t.coef;
    return sum;
}

// Whether h is a factor of a product of parents (an interaction) in c's predictor. Such a
// term is treated as breaking every flip and swap of h: flipping h flips the product, which
// a relabelling could follow, but checking that is left out to keep the rules simple.
bool in_product(const ir::Graph& g, int c, int h) {
    auto has = [h](int e, const std::vector<int>& also) {
        return !also.empty() && (e == h || std::find(also.begin(), also.end(), h) != also.end());
    };
    for (const ir::FixedTerm& t : cpd_of(g, c).fixed)
        if (has(t.element, t.also)) return true;
    for (const ir::Feature& f : cpd_of(g, c).features)
        if (has(f.element, f.also)) return true;
    return false;
}

double cov(const ir::Block& b, int k, int l) {
    return b.prior_cov[static_cast<std::size_t>(k * b.size + l)];
}

// The degrees of freedom of entry k's prior: 0 for a Gaussian entry.
double df(const ir::Block& b, int k) { return b.heavy_tailed() ? b.prior_df[static_cast<std::size_t>(k)] : 0.0; }

// N(μ, Σ) of block b is unchanged by negating the entries in `neg` (sorted): those means are
// 0 and they have no covariance with the other entries. The same holds for Student-t entries,
// which are independent of the rest and symmetric about their location.
bool prior_sign_symmetric(const ir::Block& b, const std::vector<int>& neg) {
    for (int k : neg) {
        if (b.prior_mean[static_cast<std::size_t>(k)] != 0) return false;
        for (int l = 0; l < b.size; ++l)
            if (!std::binary_search(neg.begin(), neg.end(), l) && cov(b, k, l) != 0) return false;
    }
    return true;
}

// N(μ, Σ) of block b is unchanged by permuting its entries by p (local indices).
bool prior_permutation_symmetric(const ir::Block& b, const std::vector<int>& p) {
    for (int k = 0; k < b.size; ++k) {
        if (b.prior_mean[static_cast<std::size_t>(p[static_cast<std::size_t>(k)])] !=
                b.prior_mean[static_cast<std::size_t>(k)] ||
            df(b, p[static_cast<std::size_t>(k)]) != df(b, k))
            return false;
        for (int l = 0; l < b.size; ++l)
            if (cov(b, p[static_cast<std::size_t>(k)], p[static_cast<std::size_t>(l)]) != cov(b, k, l)) return false;
    }
    return true;
}

bool mentions(const ir::Cpd& c, int i, int j) {
    auto has = [i, j](int e, const std::vector<int>& also) {
        return e == i || e == j || std::find(also.begin(), also.end(), i) != also.end() ||
               std::find(also.begin(), also.end(), j) != also.end();
    };
    for (const auto& t : c.fixed)
        if (has(t.element, t.also)) return true;
    for (const auto& f : c.features)
        if (has(f.element, f.also)) return true;
    return false;
}

bool has_product(const ir::Cpd& c) {
    for (const auto& t : c.fixed)
        if (!t.also.empty()) return true;
    for (const auto& f : c.features)
        if (!f.also.empty()) return true;
    return false;
}

// Whether a swap must leave prior × likelihood unchanged (exact), or need only have the same
// form on both sides, offsets and priors aside (a map of θ for an approximate exchange).
enum class Swap { exact, structural };

// i's and j's own CPDs are the same distribution with the same prior, so swapping their
// blocks entry by entry maps one to the other (structural: the same but for the offset and the
// prior).
bool same_own_cpd(const ir::Graph& g, int i, int j, Swap rule) {
    const ir::Cpd& a = cpd_of(g, i);
    const ir::Cpd& b = cpd_of(g, j);
    const bool offsets = rule == Swap::structural || a.offset == b.offset;
    if (a.logistic != b.logistic || !offsets || mentions(a, i, j) || mentions(b, i, j) ||
        has_product(a) || has_product(b))
        return false;
    auto key = [](const ir::FixedTerm& t) { return std::pair(t.element, t.coef); };
    std::vector<std::pair<int, double>> fa, fb;
    for (const auto& t : a.fixed) fa.push_back(key(t));
    for (const auto& t : b.fixed) fb.push_back(key(t));
    std::sort(fa.begin(), fa.end());
    std::sort(fb.begin(), fb.end());
    if (fa != fb || a.features.size() != b.features.size() || (a.block < 0) != (b.block < 0)) return false;
    for (std::size_t k = 0; k < a.features.size(); ++k)
        if (a.features[k].element != b.features[k].element || a.features[k].sign != b.features[k].sign) return false;
    if (a.block < 0) return true;
    const ir::Block& ba = block_of(g, a.block);
    const ir::Block& bb = block_of(g, b.block);
    if (rule == Swap::structural) return ba.size == bb.size;
    return ba.prior_mean == bb.prior_mean && ba.prior_cov == bb.prior_cov && ba.prior_df == bb.prior_df;
}

// In child c, swapping the terms on i and j: their fixed parts are equal, their learned weights
// pair up in order with equal signs, and c's prior is unchanged by the swap (structural: any
// prior). Adds the swapped pairs of θ entries to perm.
bool child_swaps(const ir::Graph& g, int c, int i, int j, Swap rule, std::vector<int>& perm) {
    if (in_product(g, c, i) || in_product(g, c, j) || fixed_on(g, c, i) != fixed_on(g, c, j)) return false;
    const std::vector<int> wi = features_on(g, c, i);
    const std::vector<int> wj = features_on(g, c, j);
    if (wi.size() != wj.size()) return false;
    if (wi.empty()) return true;
    const ir::Cpd& cpd = cpd_of(g, c);
    if (!untied(g, cpd.block)) return false;  // then feature k reads weight k
    const ir::Block& b = block_of(g, cpd.block);
    std::vector<int> local(static_cast<std::size_t>(b.size));
    std::iota(local.begin(), local.end(), 0);
    for (std::size_t k = 0; k < wi.size(); ++k) {
        const auto ki = static_cast<std::size_t>(wi[k]);
        const auto kj = static_cast<std::size_t>(wj[k]);
        if (cpd.features[ki].sign != cpd.features[kj].sign) return false;
        std::swap(local[ki], local[kj]);
    }
    if (rule == Swap::exact && !prior_permutation_symmetric(b, local)) return false;
    for (int k = 0; k < b.size; ++k)
        perm[static_cast<std::size_t>(b.offset + k)] = b.offset + local[static_cast<std::size_t>(k)];
    return true;
}

std::uint64_t factorial_capped(int m, bool& over) {
    std::uint64_t f = 1;
    for (int k = 2; k <= m; ++k) {
        if (f > 1'000'000'000'000'000'000ULL / static_cast<std::uint64_t>(k)) over = true;
        else f *= static_cast<std::uint64_t>(k);
    }
    return f;
}

std::optional<std::uint64_t> group_order(const Symmetries& s) {
    constexpr std::uint64_t cap = 1'000'000'000'000'000'000ULL;
    bool over = s.flips.size() >= 60;
    std::uint64_t n = over ? 1 : (std::uint64_t{1} << s.flips.size());
    if (n > cap) over = true;
    for (const auto& cls : s.exchangeable) {
        const std::uint64_t f = factorial_capped(static_cast<int>(cls.size()), over);
        if (over || n > cap / f) return std::nullopt;
        n *= f;
    }
    if (over) return std::nullopt;
    return n;
}

std::string names(const ir::Graph& g, const std::vector<int>& elements) {
    std::string out;
    for (std::size_t k = 0; k < elements.size(); ++k) {
        if (k == 6 && elements.size() > 7) return out + fmt::format(" and {} more", elements.size() - k);
        out += (k ? ", " : "") + g.elements[static_cast<std::size_t>(elements[k])].name;
    }
    return out;
}

}  // namespace

std::vector<int> flip_coordinates(const ir::Graph& g, int h) {
    std::vector<int> out;
    const ir::Cpd& own = cpd_of(g, h);
    if (own.block >= 0)
        for (int k : own_weights(g, h)) out.push_back(block_of(g, own.block).offset + k);
    for (int c : g.children(h)) {
        const int block = cpd_of(g, c).block;
        for (int k : weights_on(g, c, h)) out.push_back(block_of(g, block).offset + k);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

namespace {

// No weight the flip of h negates is read by a term the flip leaves alone: a weight a
// declared parameter shares between h's own predictor (or a term on h) and another node's
// term cannot change sign in one and not the other. Always true without declared parameters.
bool flip_untangled(const ir::Graph& g, int h) {
    const std::vector<int> negated = flip_coordinates(g, h);
    for (std::size_t e = 0; e < g.cpds.size(); ++e) {
        const ir::Cpd& c = g.cpds[e];
        if (c.block < 0) continue;
        for (const ir::Feature& f : c.features) {
            const int entry = block_of(g, c.block).offset + f.weight;
            const bool flips = static_cast<int>(e) == h || (f.element == h && f.also.empty());
            if (!flips && std::binary_search(negated.begin(), negated.end(), entry)) return false;
        }
    }
    return true;
}

}  // namespace

bool flip_is_exact(const ir::Graph& g, int h) {
    if (!hidden_binary(g, h)) return false;
    const ir::Cpd& own = cpd_of(g, h);
    // h's own logit must turn into its negative: no offset or fixed term, a symmetric prior.
    if (own.offset != 0 || !own.fixed.empty()) return false;
    if (own.block >= 0 && !prior_sign_symmetric(block_of(g, own.block), own_weights(g, h))) return false;
    // Each child sees h only through learned weights whose prior is symmetric in them.
    for (int c : g.children(h)) {
        if (in_product(g, c, h) || fixed_on(g, c, h) != 0) return false;
        const std::vector<int> w = weights_on(g, c, h);
        if (!w.empty() && !prior_sign_symmetric(block_of(g, cpd_of(g, c).block), w)) return false;
    }
    return flip_untangled(g, h);
}

namespace {

std::vector<int> swap_map(const ir::Graph& g, int i, int j, Swap rule) {
    if (i == j || !hidden_binary(g, i) || !hidden_binary(g, j) || !untied(g, cpd_of(g, i).block) ||
        !untied(g, cpd_of(g, j).block) || !same_own_cpd(g, i, j, rule))
        return {};
    std::vector<int> ci = g.children(i), cj = g.children(j);
    std::sort(ci.begin(), ci.end());
    std::sort(cj.begin(), cj.end());
    if (ci != cj) return {};
    std::vector<int> perm(static_cast<std::size_t>(g.dim));
    std::iota(perm.begin(), perm.end(), 0);
    const int bi = cpd_of(g, i).block, bj = cpd_of(g, j).block;
    if (bi >= 0) {
        const ir::Block& a = block_of(g, bi);
        const ir::Block& b = block_of(g, bj);
        for (int k = 0; k < a.size; ++k) std::swap(perm[static_cast<std::size_t>(a.offset + k)], perm[static_cast<std::size_t>(b.offset + k)]);
    }
    for (int c : ci)
        if (!child_swaps(g, c, i, j, rule, perm)) return {};
    return perm;
}

}  // namespace

std::vector<int> swap_permutation(const ir::Graph& g, int i, int j) { return swap_map(g, i, j, Swap::exact); }

std::vector<int> structural_swap_permutation(const ir::Graph& g, int i, int j) {
    return swap_map(g, i, j, Swap::structural);
}

Symmetries find_symmetries(const ir::Graph& g) {
    Symmetries s;
    const int n = static_cast<int>(g.elements.size());
    auto moves_theta = [&](const std::vector<int>& perm) {
        for (std::size_t k = 0; k < perm.size(); ++k)
            if (perm[k] != static_cast<int>(k)) return true;
        return false;
    };
    for (int h = 0; h < n; ++h)
        if (flip_is_exact(g, h) && !flip_coordinates(g, h).empty()) s.flips.push_back(h);
    // Exchangeability is an equivalence (every condition is an equality), so comparing with
    // the first member of each class suffices. Only hidden nodes are swapped (swap_permutation):
    // the pairs are those of the hidden ones, not of every element (quadratic in the
    // elements, that took 10 s of reading a model of 10^5 observed nodes).
    std::vector<int> hidden;
    for (int e = 0; e < n; ++e)
        if (hidden_binary(g, e)) hidden.push_back(e);
    std::vector<bool> placed(static_cast<std::size_t>(n), false);
    for (std::size_t a = 0; a < hidden.size(); ++a) {
        const int i = hidden[a];
        if (placed[static_cast<std::size_t>(i)]) continue;
        std::vector<int> cls{i};
        for (std::size_t b = a + 1; b < hidden.size(); ++b) {
            const int j = hidden[b];
            if (placed[static_cast<std::size_t>(j)]) continue;
            const std::vector<int> perm = swap_permutation(g, i, j);
            if (!perm.empty() && moves_theta(perm)) {
                cls.push_back(j);
                placed[static_cast<std::size_t>(j)] = true;
            }
        }
        if (cls.size() > 1) s.exchangeable.push_back(cls);
    }
    s.labelings = group_order(s);
    return s;
}

std::string describe_symmetries(const ir::Graph& g, const Symmetries& s) {
    if (!s.any()) return {};
    std::string count = s.labelings ? fmt::format("{}", *s.labelings) : std::string("more than 10^18");
    std::vector<std::string> parts;
    if (!s.flips.empty())
        parts.push_back(s.flips.size() == 1 ? names(g, s.flips) + " flips sign with its weights"
                                            : "each of " + names(g, s.flips) + " flips sign with its weights");
    for (const auto& cls : s.exchangeable) parts.push_back(names(g, cls) + " are exchangeable");
    std::string out = count + " equivalent labelings: ";
    for (std::size_t k = 0; k < parts.size(); ++k) out += (k ? "; " : "") + parts[k];
    return out;
}

}  // namespace vbn::lang
