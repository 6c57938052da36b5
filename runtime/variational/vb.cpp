#include "runtime/variational/vb.hpp"

#include "inference/clock.hpp"
#include "inference/math.hpp"
#include "inference/parallel.hpp"
#include "inference/rng.hpp"
#include "runtime/distributed/communicator.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"
#include "runtime/target/families.hpp"
#include "runtime/variational/scale_q.hpp"

#include <Eigen/Cholesky>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace vbn {

namespace {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;
using inference::inv_logit;
using inference::jj_lambda;
using inference::log_inv_logit;

// ---------------------------------------------------------------------------------------
// The fixed part of the problem: priors and the mean-field view of the families.

// One unobserved parent of a factor with all its terms merged: it adds x_v (c + θ' g) to
// the factor's linear predictor η, g sparse over the block's features.
struct MfLink {
    int var = 0;
    double c = 0;
    std::vector<std::pair<int, double>> g;
};

// A term of a factor with a product of parents (an interaction): it adds
// π (c + θ' g) to η, π = Π_{v ∈ vars} x_v, g sparse over the block's features.
struct MfProduct {
    std::vector<int> vars;  // sorted, distinct
    double c = 0;
    std::vector<std::pair<int, double>> g;
};

struct MfFactor {
    const Factor* src = nullptr;  // base, observed features, value or self, block
    std::vector<MfLink> links;
    // A factor with a product of unobserved parents keeps every link here instead (a single
    // parent as a product of one) and takes the general path (product_moments).
    std::vector<MfProduct> products;
};

// Where an unobserved element enters a factor: as the factor's own node (link < 0, not
// product) or through one of its links, or through a term of a factor on the general path.
struct Touch {
    int factor = 0;
    int link = -1;
    bool product = false;
};

struct MfComponent {
    const Component* src = nullptr;
    std::vector<MfFactor> factors;
    std::vector<std::vector<Touch>> touches;  // per local variable
};

// Student-t entries enter as scale mixtures w_j | λ_j ~ N(μ_j, s_j²/λ_j), λ_j ~ Gamma(ν_j/2,
// ν_j/2) (Bishop 2006, eq. 2.161; Tipping 2001 for the same step in ARD): cov and precision
// hold them at λ_j = 1, and each fit keeps a mean-field q(λ_j) (HeavyFit).
struct PriorBlock {
    Vec mean;
    Mat cov;
    Mat precision;       // Σ0^{-1}, needed entrywise in the posterior precision
    Vec precision_mean;  // Σ0^{-1} μ0
    double log_det = 0;  // log |Σ0|
    std::vector<int> heavy;       // Student-t entries (local), uncorrelated with the rest
    std::vector<double> nu, scale2;
    // Entries with a learned scale (local), uncorrelated with the rest, held at τ = 1 in cov
    // and precision, and the index of their scale (Problem::scales).
    std::vector<int> scaled, scale_of;
};

// A learned scale τ (ir::Scale) and the weights it scales: (block, local entry) pairs.
struct ScaleProblem {
    const ir::Scale* scale = nullptr;
    std::vector<std::pair<int, int>> entries;
    std::vector<double> means;
};

struct Problem {
    const ir::Graph* graph = nullptr;
    const Families* families = nullptr;
    std::vector<PriorBlock> priors;
    std::vector<ScaleProblem> scales;
    std::vector<MfComponent> components;
    std::vector<std::vector<std::pair<int, int>>> factors_of_block;  // (component, factor)
    int max_features = 0;
    int max_links = 0;
    int max_products = 0;
};

std::string block_label(const ir::Graph& g, int b) {
    const ir::Block& blk = g.blocks[sz(b)];
    std::string names;
    for (int k = 0; k < blk.size && k < 4; ++k) names += (k ? ", " : "") + g.theta_name(blk.offset + k);
    if (blk.size > 4) names += ", ...";
    return fmt::format("the weights of node '{}' ({})", g.elements[sz(blk.element)].name, names);
}

PriorBlock make_prior(const ir::Graph& g, int b) {
    const ir::Block& blk = g.blocks[sz(b)];
    const int k = blk.size;
    if (k < 0 || blk.prior_mean.size() != sz(k) || blk.prior_cov.size() != sz(k) * sz(k))
        throw Error(ErrorKind::inference, fmt::format("the prior of {} does not have the block's size", block_label(g, b)));
    PriorBlock p;
    p.mean = Eigen::Map<const Vec>(blk.prior_mean.data(), k);
    p.cov = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        blk.prior_cov.data(), k, k);
    if (!p.mean.allFinite() || !p.cov.allFinite())
        throw Error(ErrorKind::inference,
                    fmt::format("the prior of {} is not finite (a standard deviation too large for a double?)",
                                block_label(g, b)));
    const Eigen::LLT<Mat> llt(p.cov);
    if (llt.info() != Eigen::Success)
        throw Error(ErrorKind::inference,
                    fmt::format("the prior covariance of {} is not positive definite", block_label(g, b)));
    p.precision = llt.solve(Mat::Identity(k, k));
    p.precision_mean = llt.solve(p.mean);
    p.log_det = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
    for (int j = 0; blk.heavy_tailed() && j < k; ++j)
        if (blk.prior_df[sz(j)] > 0) {
            p.heavy.push_back(j);
            p.nu.push_back(blk.prior_df[sz(j)]);
            p.scale2.push_back(blk.prior_cov[sz(j * k + j)]);
        }
    for (int j = 0; blk.has_learned_scale() && j < k; ++j)
        if (blk.prior_scale[sz(j)] >= 0) {
            p.scaled.push_back(j);
            p.scale_of.push_back(blk.prior_scale[sz(j)]);
        }
    if (!p.precision.allFinite() || !std::isfinite(p.log_det))
        throw Error(ErrorKind::inference,
                    fmt::format("the prior of {} is too wide or too narrow to compute with", block_label(g, b)));
    return p;
}

// Adds link l to a term (MfLink or MfProduct): a fixed term's coefficient to c, a learned
// weight's sign to its feature's entry of g.
template <class Term>
void add_link_coef(Term& t, const FactorLink& l) {
    if (l.feature < 0) {
        t.c += l.coef;
        return;
    }
    auto gk = std::find_if(t.g.begin(), t.g.end(), [&](const auto& e) { return e.first == l.feature; });
    if (gk == t.g.end())
        t.g.emplace_back(l.feature, l.coef);
    else
        gk->second += l.coef;
}

// The terms of a factor with a product of unobserved parents, merged by variable set.
std::vector<MfProduct> product_terms(const Factor& f) {
    std::vector<MfProduct> out;
    for (const FactorLink& l : f.links) {
        std::vector<int> vars{l.var};
        for (int a : l.also)
            if (a >= 0) vars.push_back(a);
        std::sort(vars.begin(), vars.end());
        auto it = std::find_if(out.begin(), out.end(), [&](const MfProduct& p) { return p.vars == vars; });
        if (it == out.end()) {
            out.push_back({vars, 0.0, {}});
            it = std::prev(out.end());
        }
        add_link_coef(*it, l);
    }
    return out;
}

MfComponent make_component(const Component& c) {
    MfComponent mc;
    mc.src = &c;
    mc.touches.resize(sz(c.size()));
    for (const Factor& f : c.factors) {
        MfFactor mf;
        mf.src = &f;
        if (std::any_of(f.links.begin(), f.links.end(), [](const FactorLink& l) { return l.product(); })) {
            mf.products = product_terms(f);
            const int fi = static_cast<int>(mc.factors.size());
            if (f.self >= 0) mc.touches[sz(f.self)].push_back({fi, -1, false});
            std::vector<int> vars;
            for (const MfProduct& p : mf.products) vars.insert(vars.end(), p.vars.begin(), p.vars.end());
            std::sort(vars.begin(), vars.end());
            vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
            for (int v : vars) mc.touches[sz(v)].push_back({fi, -1, true});
            mc.factors.push_back(std::move(mf));
            continue;
        }
        for (const FactorLink& l : f.links) {
            auto it = std::find_if(mf.links.begin(), mf.links.end(), [&](const MfLink& m) { return m.var == l.var; });
            if (it == mf.links.end()) {
                mf.links.push_back({l.var, 0.0, {}});
                it = std::prev(mf.links.end());
            }
            add_link_coef(*it, l);
        }
        const int fi = static_cast<int>(mc.factors.size());
        if (f.self >= 0) mc.touches[sz(f.self)].push_back({fi, -1});
        for (int li = 0; li < static_cast<int>(mf.links.size()); ++li)
            mc.touches[sz(mf.links[sz(li)].var)].push_back({fi, li});
        mc.factors.push_back(std::move(mf));
    }
    return mc;
}

Problem make_problem(const ir::Graph& g, const Families& fam) {
    Problem p;
    p.graph = &g;
    p.families = &fam;
    const int nb = static_cast<int>(g.blocks.size());
    if (static_cast<int>(fam.complete.size()) != nb)
        throw Error(ErrorKind::data, fmt::format("the data's families have {} blocks, the model {}", fam.complete.size(), nb));
    for (int b = 0; b < nb; ++b) {
        p.priors.push_back(make_prior(g, b));
        p.max_features = std::max(p.max_features, g.blocks[sz(b)].size);
        const CompleteFamily& cf = fam.complete[sz(b)];
        if (cf.f.cols() != g.blocks[sz(b)].size)
            throw Error(ErrorKind::data, fmt::format("the data's patterns for {} have the wrong width", block_label(g, b)));
    }
    for (const ir::Scale& sc : g.scales) {
        ScaleProblem sp;
        sp.scale = &sc;
        p.scales.push_back(std::move(sp));
    }
    for (int b = 0; b < nb; ++b) {
        const PriorBlock& pr = p.priors[sz(b)];
        for (std::size_t j = 0; j < pr.scaled.size(); ++j) {
            ScaleProblem& sp = p.scales.at(sz(pr.scale_of[j]));
            sp.entries.emplace_back(b, pr.scaled[j]);
            sp.means.push_back(pr.mean[pr.scaled[j]]);
        }
    }
    p.factors_of_block.resize(sz(nb));
    for (const Component& c : fam.components) {
        const int ci = static_cast<int>(p.components.size());
        p.components.push_back(make_component(c));
        const MfComponent& mc = p.components.back();
        for (int fi = 0; fi < static_cast<int>(mc.factors.size()); ++fi) {
            const Factor& f = *mc.factors[sz(fi)].src;
            p.max_links = std::max(p.max_links, static_cast<int>(mc.factors[sz(fi)].links.size()));
            p.max_products = std::max(p.max_products, static_cast<int>(mc.factors[sz(fi)].products.size()));
            if (f.block < 0) continue;
            if (f.block >= nb || f.f.size() != g.blocks[sz(f.block)].size)
                throw Error(ErrorKind::data, "a summed-out factor does not match its parameter block");
            p.factors_of_block[sz(f.block)].emplace_back(ci, fi);
        }
    }
    return p;
}

// ---------------------------------------------------------------------------------------
// The state of one fit: q(θ) per block, q(h) per component, ξ per factor.

// q(λ_j) = Gamma(shape_j, rate_j) of each Student-t entry of a block, with E[λ_j] and
// E[log λ_j] = ψ(shape_j) − log rate_j.
struct HeavyFit {
    Vec shape, rate, e_lambda, e_log_lambda;

    void set(std::size_t j, double a, double b) {
        const auto i = static_cast<Eigen::Index>(j);
        shape[i] = a;
        rate[i] = b;
        e_lambda[i] = a / b;
        e_log_lambda[i] = inference::digamma(a) - std::log(b);
    }
};

// q(θ_i): what an accelerated step saves and restores (with the Cholesky factor of Σ⁻¹).
struct BlockQ {
    Vec mu;
    Mat sigma;
    double log_det = 0;  // log |Σ|
    HeavyFit heavy;      // q(λ) of the Student-t entries (none for a Gaussian prior)
};

// q(θ_i) and the ξ of its complete patterns.
struct BlockFit : BlockQ {
    // Complete-family patterns: ξ, λ(ξ), log g(ξ), E[η], E[η²], one entry per pattern.
    Vec xi, lambda, log_g, e_eta, e_eta2;
};

// λ(ξ) and log g(ξ) of every complete pattern, computed once per new ξ: the next q(θ_i) and
// the bound use them, and the bound is evaluated several times per ξ (before and after an
// extrapolated step, and for each iteration's ELBO).
void update_lambda(BlockFit& bf) {
    bf.lambda.resize(bf.xi.size());
    bf.log_g.resize(bf.xi.size());
    inference::jj_lambda_log_inv_logit(bf.xi.data(), bf.xi.size(), bf.lambda.data(), bf.log_g.data());
}

// The rows × features products of an update (the weighted features of the precision's
// rank update, L⁻¹-whitened features for f'Σf) are formed this many patterns at a time, so
// their memory is a part's, not the data's (at 10^6 rows × 11 weights they were two 88 MB
// matrices).
constexpr Eigen::Index kMomentRows = 4096;

struct BlockState : BlockFit {
    Mat precision;       // workspace for Σ^{-1}
    Vec h;               // workspace for Σ^{-1} μ
    Vec diff, pdiff;     // workspaces for the prior term
    Eigen::LLT<Mat> llt;
    Vec coef;  // per complete pattern
    Mat scaled, fs;  // per complete pattern × feature, kMomentRows patterns at a time
    Mat linv;        // L⁻¹ for Σ⁻¹ = LL'
};

struct ComponentState {
    Vec d;  // natural parameter: q(x = +1) = g(d)
    Vec m;  // E_q[x] = tanh(d / 2)
    Vec v;  // Var_q[x] = 1 - m², computed without cancellation
    std::vector<double> xi;  // per factor
    // λ(ξ) and log g(ξ) per factor, made with each new ξ (update_lambda's reasons): the block
    // updates, the sweeps over q(h) and the bound read them.
    std::vector<double> lambda, log_g;
};

void update_lambda(ComponentState& cs) {
    cs.lambda.resize(cs.xi.size());
    cs.log_g.resize(cs.xi.size());
    inference::jj_lambda_log_inv_logit(cs.xi.data(), static_cast<Eigen::Index>(cs.xi.size()), cs.lambda.data(), cs.log_g.data());
}

struct Workspace {
    Vec fbar, sf;
    std::vector<double> r, q;
    // The general path (product_moments), per product term L: E[π_L], r̄_L = c_L + μ'g_L,
    // and C_LM = Cov(π_L, π_M).
    Vec pi, rbar;
    Mat cov;
};

struct State {
    std::vector<BlockState> blocks;
    std::vector<ComponentState> comps;
    std::vector<ScaleQ> scales;  // q(τ) of each learned scale
    Workspace w;
};

// q(τ) of every learned scale given the blocks' q(θ) (runtime/variational/scale_q.hpp): an
// exact coordinate maximisation of the bound, so it never lowers it.
void update_scales(const Problem& p, State& s) {
    for (std::size_t g = 0; g < p.scales.size(); ++g) {
        const ScaleProblem& sp = p.scales[g];
        double sum = 0;
        for (std::size_t j = 0; j < sp.entries.size(); ++j) {
            const auto [b, k] = sp.entries[j];
            const BlockState& bs = s.blocks[sz(b)];
            const double d = bs.mu[k] - sp.means[j];
            sum += d * d + bs.sigma(k, k);
        }
        s.scales[g] = fit_scale_q(*sp.scale, static_cast<int>(sp.entries.size()), sum);
    }
}

void set_q(ComponentState& cs, int u, double d) {
    cs.d[u] = d;
    inference::spin_moments(d, cs.m[u], cs.v[u]);
}

// Blocks of at most this many weights (a latent class's item: intercept and class weight) have
// their products with Σ and rank-one updates of Σ⁻¹ written out: Eigen's general routines,
// made for large sizes, cost more in set-up than in arithmetic at 2 × 2, and the mean-field
// sweep calls them for every factor of every row several times an iteration (`vbn vb` on
// tests/corpus/housevotes, eight starts: 0.097-0.102 s with them, 0.070-0.072 without).
constexpr Eigen::Index kSmallBlock = 4;

// E[η], E[η²] and E[x] of one factor under q(θ_i) q(h). Leaves in the workspace E_q[f]
// (fbar), Σ E_q[f] (sf), and per link r = c + μ'g and s = g'Σg.
//
// With η = a + θ'f + Σ_v x_v (c_v + θ'g_v) and independent x_v (mean field),
//   E[η²] = E[η]² + F̄'ΣF̄ + Σ_v Var(x_v) E_θ[(c_v + θ'g_v)²],  F̄ = f + Σ_v m_v g_v,
// the expectation inside the ξ-bound (Variational MCMC, Sec. 3.3; JJ eq. 51, 63).
struct Moments {
    double e_eta = 0;
    double e_eta2 = 0;
    double ex = 0;
};

// E_q[x_v] with x_u taken as mu instead when u >= 0 (product_moments' slope in m_u).
double mean_of(const ComponentState& cs, int v, int u, double mu) { return v == u ? mu : cs.m[v]; }

// The product terms' E[π_L] and covariances under mean field: x_v² = 1, so
// E[π_L π_M] = Π_{v ∈ L △ M} m_v, and C_LM = E[π_L π_M] − E[π_L] E[π_M].
void product_covariance(const MfFactor& mf, const ComponentState& cs, int u, double mu, Workspace& w) {
    const auto n = static_cast<Eigen::Index>(mf.products.size());
    for (Eigen::Index a = 0; a < n; ++a) {
        double e = 1;
        for (int v : mf.products[sz(static_cast<int>(a))].vars) e *= mean_of(cs, v, u, mu);
        w.pi[a] = e;
    }
    for (Eigen::Index a = 0; a < n; ++a)
        for (Eigen::Index b = 0; b <= a; ++b) {
            const auto& la = mf.products[sz(static_cast<int>(a))].vars;
            const auto& lb = mf.products[sz(static_cast<int>(b))].vars;
            double both = 1;
            std::size_t i = 0, j = 0;  // the symmetric difference of two sorted lists
            while (i < la.size() || j < lb.size()) {
                if (j == lb.size() || (i < la.size() && la[i] < lb[j])) both *= mean_of(cs, la[i++], u, mu);
                else if (i == la.size() || lb[j] < la[i]) both *= mean_of(cs, lb[j++], u, mu);
                else ++i, ++j;
            }
            w.cov(a, b) = w.cov(b, a) = both - w.pi[a] * w.pi[b];
        }
}

// factor_moments for a factor with product terms: η = a + θ'f + Σ_L π_L (c_L + θ'g_L),
//   E[η²] = E[η]² + F̄'ΣF̄ + Σ_LM C_LM (r̄_L r̄_M + g_L'Σg_M),  F̄ = f + Σ_L E[π_L] g_L,
// the single-parent formula of factor_moments with the diagonal C replaced by the full one.
// With u >= 0, m_u is taken as mu: the bound is affine in m_u, so two values give its slope.
Moments product_moments(const MfFactor& mf, const ComponentState& cs, const BlockState* bs, Workspace& w, int u = -1,
                        double mu = 0) {
    const Factor& f = *mf.src;
    const Eigen::Index k = f.f.size();
    const auto n = static_cast<Eigen::Index>(mf.products.size());
    product_covariance(mf, cs, u, mu, w);
    auto fbar = w.fbar.head(k);
    fbar = f.f;
    double a = f.base;
    for (Eigen::Index l = 0; l < n; ++l) {
        const MfProduct& p = mf.products[sz(static_cast<int>(l))];
        a += w.pi[l] * p.c;
        for (const auto& [j, s] : p.g) fbar[j] += w.pi[l] * s;
        double r = p.c;
        if (k > 0)
            for (const auto& [j, s] : p.g) r += bs->mu[j] * s;
        w.rbar[l] = r;
    }
    Moments out;
    out.e_eta = a;
    if (k > 0) {
        auto sf = w.sf.head(k);
        sf.noalias() = bs->sigma * fbar;
        out.e_eta += bs->mu.dot(fbar);
        out.e_eta2 = fbar.dot(sf);
    }
    out.e_eta2 += out.e_eta * out.e_eta;
    for (Eigen::Index l = 0; l < n; ++l)
        for (Eigen::Index m = 0; m < n; ++m) {
            if (w.cov(l, m) == 0) continue;
            double gsg = 0;
            if (k > 0)
                for (const auto& [i, si] : mf.products[sz(static_cast<int>(l))].g)
                    for (const auto& [j, sj] : mf.products[sz(static_cast<int>(m))].g) gsg += si * sj * bs->sigma(i, j);
            out.e_eta2 += w.cov(l, m) * (w.rbar[l] * w.rbar[m] + gsg);
        }
    out.ex = f.self >= 0 ? mean_of(cs, f.self, u, mu) : f.value;
    return out;
}

Moments factor_moments(const MfFactor& mf, const ComponentState& cs, const BlockState* bs, Workspace& w) {
    if (!mf.products.empty()) return product_moments(mf, cs, bs, w);
    const Factor& f = *mf.src;
    const Eigen::Index k = f.f.size();
    auto fbar = w.fbar.head(k);
    auto sf = w.sf.head(k);
    fbar = f.f;
    double a = f.base;
    for (const MfLink& l : mf.links) {
        const double m = cs.m[l.var];
        a += m * l.c;
        for (const auto& [j, s] : l.g) fbar[j] += m * s;
    }
    Moments out;
    out.e_eta = a;
    out.e_eta2 = 0;
    if (k > 0 && k <= kSmallBlock) {
        const double* S = bs->sigma.data();
        const Eigen::Index ld = bs->sigma.outerStride();
        double e2 = 0, m = 0;
        for (Eigen::Index i = 0; i < k; ++i) {
            double acc = 0;
            for (Eigen::Index j = 0; j < k; ++j) acc += S[j * ld + i] * fbar[j];
            sf[i] = acc;
            e2 += fbar[i] * acc;
            m += bs->mu[i] * fbar[i];
        }
        out.e_eta += m;
        out.e_eta2 = e2;
    } else if (k > 0) {
        sf.noalias() = bs->sigma * fbar;
        out.e_eta += bs->mu.dot(fbar);
        out.e_eta2 = fbar.dot(sf);
    }
    out.e_eta2 += out.e_eta * out.e_eta;
    for (std::size_t li = 0; li < mf.links.size(); ++li) {
        const MfLink& l = mf.links[li];
        double r = l.c, s = 0;
        for (const auto& [j, sj] : l.g) {
            r += bs->mu[j] * sj;
            for (const auto& [i, si] : l.g) s += sj * si * bs->sigma(j, i);
        }
        w.r[li] = r;
        w.q[li] = s;
        out.e_eta2 += cs.v[l.var] * (r * r + s);
    }
    out.ex = f.self >= 0 ? cs.m[f.self] : f.value;
    return out;
}

// The expected log ξ-bound of one factor (JJ eq. 7, 51; Variational MCMC eq. 6):
//   log g(ξ) + (E[x η] − ξ)/2 − λ(ξ)(E[η²] − ξ²).
double bound_term(double xi, double lambda, double ex_eta, double e_eta2, double log_g_xi) {
    return log_g_xi + 0.5 * (ex_eta - xi) - lambda * (e_eta2 - xi * xi);
}

// Entropy of a Bernoulli with natural parameter d.
double bernoulli_entropy(double d) {
    return -(inv_logit(d) * log_inv_logit(d) + inv_logit(-d) * log_inv_logit(-d));
}

const BlockState* block_of(const State& s, const Factor& f) {
    return f.block >= 0 ? &s.blocks[sz(f.block)] : nullptr;
}

// A factor with product terms in the update of q(θ_i): E[F F'] = F̄F̄' + Σ_LM C_LM g_L g_M'
// and E[A F] = a F̄ + Σ_LM C_LM c_L g_M, A = base + Σ_L π_L c_L, F = f + Σ_L π_L g_L.
void add_products_to_block(const MfFactor& mf, const ComponentState& cs, double weight, double lam, BlockState& bs,
                           Workspace& w) {
    const Factor& f = *mf.src;
    const auto n = static_cast<Eigen::Index>(mf.products.size());
    product_covariance(mf, cs, -1, 0, w);
    auto fbar = w.fbar.head(f.f.size());
    fbar = f.f;
    double a = f.base;
    for (Eigen::Index l = 0; l < n; ++l) {
        const MfProduct& p = mf.products[sz(static_cast<int>(l))];
        a += w.pi[l] * p.c;
        for (const auto& [j, s] : p.g) fbar[j] += w.pi[l] * s;
    }
    const double ex = f.self >= 0 ? cs.m[f.self] : f.value;
    bs.precision.selfadjointView<Eigen::Lower>().rankUpdate(fbar, 2.0 * weight * lam);
    bs.h += weight * (0.5 * ex - 2.0 * lam * a) * fbar;
    for (Eigen::Index l = 0; l < n; ++l)
        for (Eigen::Index m = 0; m < n; ++m) {
            const double c = w.cov(l, m);
            if (c == 0) continue;
            const MfProduct& pl = mf.products[sz(static_cast<int>(l))];
            const MfProduct& pm = mf.products[sz(static_cast<int>(m))];
            for (const auto& [j, sj] : pm.g) {
                bs.h[j] -= weight * 2.0 * lam * c * pl.c * sj;
                for (const auto& [i, si] : pl.g)
                    if (j >= i) bs.precision(j, i) += 2.0 * weight * lam * c * sj * si;
            }
        }
}

// q(λ_j) given q(θ_i): the Gamma that maximises the bound,
//   q(λ_j) = Gamma((ν_j + 1)/2, (ν_j + E[(w_j − μ_j)²]/s_j²)/2)
// (Bishop 2006, eq. 10.29–10.30 for one weight; ARD's update of Tipping 2001, eq. 20).
void update_heavy(const PriorBlock& pr, BlockFit& bs) {
    for (std::size_t j = 0; j < pr.heavy.size(); ++j) {
        const int k = pr.heavy[j];
        const double d = bs.mu[k] - pr.mean[k];
        const double e_sq = d * d + bs.sigma(k, k);
        bs.heavy.set(j, 0.5 * (pr.nu[j] + 1), 0.5 * (pr.nu[j] + e_sq / pr.scale2[j]));
    }
}

// q(θ_i) given ξ and q(h): the Gaussian that maximises the bound,
//   Σ^{-1} = Σ0^{-1} + 2 Σ_t w_t λ(ξ_t) E[f f'],
//   Σ^{-1} μ = Σ0^{-1} μ0 + Σ_t w_t E[(x_t/2 − 2λ(ξ_t) a_t) f_t]
// (Variational MCMC, Sec. 3.2–3.3; JJ eq. 10–11, 53–54). Only the lower triangle of the
// precision is formed; the Cholesky factor reads nothing else. In three steps, so that
// the rows' share can be summed over shards held by other processes (run_sharded below).
//
// The prior's share of Σ^{-1} and Σ^{-1} μ, into the block's workspaces.
void prior_to_block(const Problem& p, State& s, int b) {
    BlockState& bs = s.blocks[sz(b)];
    const PriorBlock& pr = p.priors[sz(b)];
    bs.precision = pr.precision;
    bs.h = pr.precision_mean;
    // A Student-t entry's Gaussian prior given q(λ_j): precision E[λ_j]/s_j² (its prior row and
    // column are 0 elsewhere).
    for (std::size_t j = 0; j < pr.heavy.size(); ++j) {
        const int k = pr.heavy[j];
        const double prec = bs.heavy.e_lambda[static_cast<Eigen::Index>(j)] / pr.scale2[j];
        bs.precision(k, k) = prec;
        bs.h[k] = prec * pr.mean[k];
    }
    // A weight with a learned scale: precision E[1/τ²] under q(τ).
    for (std::size_t j = 0; j < pr.scaled.size(); ++j) {
        const int k = pr.scaled[j];
        const double prec = s.scales[sz(pr.scale_of[j])].e_precision;
        bs.precision(k, k) = prec;
        bs.h[k] = prec * pr.mean[k];
    }
}

// The rows' share (the sums over t below), added to the block's workspaces.
void rows_to_block(const Problem& p, State& s, int b) {
    BlockState& bs = s.blocks[sz(b)];
    const CompleteFamily& cf = p.families->complete[sz(b)];
    if (cf.patterns() > 0) {
        for (Eigen::Index t = 0; t < cf.w.size(); ++t) bs.coef[t] = cf.w[t] * bs.lambda[t];
        for (Eigen::Index start = 0; start < cf.f.rows(); start += kMomentRows) {
            const Eigen::Index len = std::min(kMomentRows, cf.f.rows() - start);
            auto scaled = bs.scaled.topRows(len);
            scaled = cf.f.middleRows(start, len).array().colwise() * (2.0 * bs.coef.segment(start, len).array()).sqrt();
            bs.precision.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
        }
        // coef becomes w (x/2 − 2λa), the weight of f in Σ^{-1}μ.
        bs.coef = (0.5 * cf.w.cwiseProduct(cf.y)).array() - 2.0 * bs.coef.cwiseProduct(cf.a).array();
        bs.h.noalias() += cf.f.transpose() * bs.coef;
    }
    Workspace& w = s.w;
    for (const auto& [ci, fi] : p.factors_of_block[sz(b)]) {
        const MfComponent& mc = p.components[sz(ci)];
        const MfFactor& mf = mc.factors[sz(fi)];
        const ComponentState& cs = s.comps[sz(ci)];
        const Factor& f = *mf.src;
        const double weight = mc.src->weight;
        const double lam = cs.lambda[sz(fi)];
        auto fbar = w.fbar.head(f.f.size());
        fbar = f.f;
        double a = f.base;
        for (const MfLink& l : mf.links) {
            a += cs.m[l.var] * l.c;
            for (const auto& [j, sj] : l.g) fbar[j] += cs.m[l.var] * sj;
        }
        if (!mf.products.empty()) {
            add_products_to_block(mf, cs, weight, lam, bs, w);
            continue;
        }
        const double ex = f.self >= 0 ? cs.m[f.self] : f.value;
        const Eigen::Index k = fbar.size();
        if (k <= kSmallBlock) {
            const double alpha = 2.0 * weight * lam;
            for (Eigen::Index j = 0; j < k; ++j)
                for (Eigen::Index i = j; i < k; ++i) bs.precision(i, j) += alpha * fbar[i] * fbar[j];
        } else {
            bs.precision.selfadjointView<Eigen::Lower>().rankUpdate(fbar, 2.0 * weight * lam);
        }
        bs.h += weight * (0.5 * ex - 2.0 * lam * a) * fbar;
        // The variance of each unobserved parent: E[f f'] and E[a f] beyond their means.
        for (const MfLink& l : mf.links) {
            const double var = cs.v[l.var];
            if (var == 0) continue;
            for (const auto& [j, sj] : l.g) {
                bs.h[j] -= weight * 2.0 * lam * var * l.c * sj;
                for (const auto& [i, si] : l.g)
                    if (j >= i) bs.precision(j, i) += 2.0 * weight * lam * var * sj * si;
            }
        }
    }
}

// q(θ_i) from the precision and Σ^{-1} μ in the block's workspaces.
void solve_block(const Problem& p, State& s, int b, int iteration) {
    BlockState& bs = s.blocks[sz(b)];
    bs.llt.compute(bs.precision);
    if (bs.llt.info() != Eigen::Success)
        throw Error(ErrorKind::inference,
                    fmt::format("variational EM, iteration {}: the posterior precision of {} is not positive definite "
                                "(is the prior too wide for these data?)",
                                iteration, block_label(*p.graph, b)));
    bs.mu = bs.llt.solve(bs.h);
    bs.sigma.setIdentity();
    bs.llt.solveInPlace(bs.sigma);
    bs.log_det = -2.0 * bs.llt.matrixLLT().diagonal().array().log().sum();
    if (!bs.mu.allFinite() || !bs.sigma.allFinite() || !std::isfinite(bs.log_det))
        throw Error(ErrorKind::inference,
                    fmt::format("variational EM, iteration {}: the posterior of {} is no longer finite "
                                "(the prior may be too wide for data that separate perfectly)",
                                iteration, block_label(*p.graph, b)));
    update_heavy(p.priors[sz(b)], bs);
}

void update_block(const Problem& p, State& s, int b, int iteration) {
    prior_to_block(p, s, b);
    rows_to_block(p, s, b);
    solve_block(p, s, b, iteration);
}

// E[η] and E[η²] = E[η]² + f'Σf of every complete pattern under the current q(θ_i).
void complete_moments(const Problem& p, State& s, int b) {
    BlockState& bs = s.blocks[sz(b)];
    const CompleteFamily& cf = p.families->complete[sz(b)];
    if (cf.patterns() == 0) return;
    bs.e_eta = cf.a;
    bs.e_eta.noalias() += cf.f * bs.mu;
    // f'Σf = |L⁻¹f|² with Σ⁻¹ = LL': L⁻¹ once, then one triangular product for all patterns,
    // which runs faster than a triangular solve with as many right-hand sides.
    bs.linv.setIdentity();
    bs.llt.matrixL().solveInPlace(bs.linv);
    for (Eigen::Index start = 0; start < cf.f.rows(); start += kMomentRows) {
        const Eigen::Index len = std::min(kMomentRows, cf.f.rows() - start);
        auto fs = bs.fs.topRows(len);
        fs.noalias() = cf.f.middleRows(start, len) * bs.linv.triangularView<Eigen::Lower>().transpose();
        bs.e_eta2.segment(start, len) = bs.e_eta.segment(start, len).array().square() + fs.rowwise().squaredNorm().array();
    }
}

// ξ² = E[(a + θ'f)²] for every complete pattern (Variational MCMC, Sec. 3.2; JJ eq. 12).
void update_xi_complete(const Problem& p, State& s, int b) {
    complete_moments(p, s, b);
    BlockState& bs = s.blocks[sz(b)];
    bs.xi = bs.e_eta2.array().sqrt();
    update_lambda(bs);
}

// A fixed root's factor has E[η²] = η², so its ξ = |η| makes the bound exact: such nodes
// contribute their exact expected log prior.
void update_xi_component(const Problem& p, State& s, int ci) {
    const MfComponent& mc = p.components[sz(ci)];
    ComponentState& cs = s.comps[sz(ci)];
    for (std::size_t fi = 0; fi < mc.factors.size(); ++fi) {
        const MfFactor& mf = mc.factors[fi];
        const Moments mo = factor_moments(mf, cs, block_of(s, *mf.src), s.w);
        cs.xi[fi] = std::sqrt(mo.e_eta2);
    }
    update_lambda(cs);
}

// One sweep of coordinate ascent over q(h) in a component. The bound is affine in each
// m_u = E[x_u] (x_u² = 1), so q(x_u = +1) = g(D_u) with D_u = 2 ∂bound/∂m_u maximises it
// exactly (Variational MCMC eq. 7–8; JJ eq. 64–66). A node's own factor contributes
// E[η]/2 — for a fixed root, half its prior logit — and a child's factor
//   E[x_c] r/2 − λ(ξ) ∂E[η²]/∂m_u,  ∂E[η²]/∂m_u = 2(E[η] r + g'ΣF̄ − m_u (r² + g'Σg)).
void sweep_component(const Problem& p, State& s, int ci) {
    const MfComponent& mc = p.components[sz(ci)];
    ComponentState& cs = s.comps[sz(ci)];
    Workspace& w = s.w;
    for (int u = 0; u < static_cast<int>(mc.touches.size()); ++u) {
        double grad = 0;
        for (const Touch& t : mc.touches[sz(u)]) {
            const MfFactor& mf = mc.factors[sz(t.factor)];
            if (t.product) {
                // Affine in m_u: the slope is the difference between m_u = 1 and m_u = 0.
                const BlockState* bs = block_of(s, *mf.src);
                const Moments one = product_moments(mf, cs, bs, w, u, 1.0);
                const Moments zero = product_moments(mf, cs, bs, w, u, 0.0);
                grad += 0.5 * one.ex * (one.e_eta - zero.e_eta) -
                        cs.lambda[sz(t.factor)] * (one.e_eta2 - zero.e_eta2);
                continue;
            }
            const Moments mo = factor_moments(mf, cs, block_of(s, *mf.src), w);
            if (t.link < 0) {
                grad += 0.5 * mo.e_eta;
                continue;
            }
            const MfLink& l = mf.links[sz(t.link)];
            const double r = w.r[sz(t.link)], q = w.q[sz(t.link)];
            double gsf = 0;
            for (const auto& [j, sj] : l.g) gsf += sj * w.sf[j];
            const double d_eta2 = 2.0 * (mo.e_eta * r + gsf - cs.m[u] * (r * r + q));
            grad += 0.5 * mo.ex * r - cs.lambda[sz(t.factor)] * d_eta2;
        }
        set_q(cs, u, 2.0 * grad);
    }
}

// −KL(q(θ_i) ‖ p0(θ_i)) = E_q[log p0(θ_i)] + H[q(θ_i)], constants included. With Student-t
// entries, −KL(q(θ_i) q(λ) ‖ p0(θ_i | λ) p(λ)): E_q[log p0(θ_i | λ)] is the Gaussian term with
// λ_j/s_j² replaced by E[λ_j]/s_j² in the quadratic and trace, and log s_j² by
// log s_j² − E[log λ_j] in log |Σ0|; each λ_j adds E[log Gamma(λ_j; ν/2, ν/2)] + H[q(λ_j)].
// A weight with a learned scale likewise, with λ = 1/τ² and s = 1; q(τ)'s own share of the
// bound is counted once, in elbo().
double neg_kl(const PriorBlock& pr, BlockState& bs, const std::vector<ScaleQ>& scales) {
    bs.diff = bs.mu - pr.mean;
    bs.pdiff.noalias() = pr.precision * bs.diff;
    double trace = pr.precision.cwiseProduct(bs.sigma).sum();
    double log_det = pr.log_det, gamma_terms = 0;
    for (std::size_t j = 0; j < pr.heavy.size(); ++j) {
        const int k = pr.heavy[j];
        const auto i = static_cast<Eigen::Index>(j);
        const double el = bs.heavy.e_lambda[i], ell = bs.heavy.e_log_lambda[i];
        const double a = bs.heavy.shape[i], rate = bs.heavy.rate[i], half = 0.5 * pr.nu[j];
        bs.pdiff[k] *= el;
        trace += (el - 1) * bs.sigma(k, k) / pr.scale2[j];
        log_det -= ell;
        gamma_terms += half * std::log(half) - inference::log_gamma(half) + (half - 1) * ell - half * el;  // E log p(λ)
        gamma_terms += a - std::log(rate) + inference::log_gamma(a) + (1 - a) * inference::digamma(a);  // H[q(λ)]
    }
    for (std::size_t j = 0; j < pr.scaled.size(); ++j) {
        const int k = pr.scaled[j];
        const ScaleQ& q = scales[sz(pr.scale_of[j])];
        bs.pdiff[k] *= q.e_precision;
        trace += (q.e_precision - 1) * bs.sigma(k, k);
        log_det -= q.e_log_precision;
    }
    const double quad = bs.diff.dot(bs.pdiff);
    const double k = static_cast<double>(bs.mu.size());
    return -0.5 * (trace + quad - k + log_det - bs.log_det) + gamma_terms;
}

// The expected log ξ-bounds of a block's complete patterns, added to `total` term by term.
double add_patterns_bound(const Problem& p, const BlockState& bs, std::size_t b, double total) {
    const CompleteFamily& cf = p.families->complete[b];
    for (Eigen::Index t = 0; t < cf.w.size(); ++t)
        total += cf.w[t] * bound_term(bs.xi[t], bs.lambda[t], cf.y[t] * bs.e_eta[t], bs.e_eta2[t], bs.log_g[t]);
    return total;
}

// A block's share of the bound: −KL of q(θ_i) and the expected log ξ-bounds of its
// complete patterns, added to `total` term by term.
double add_block_bound(const Problem& p, BlockState& bs, const std::vector<ScaleQ>& scales, std::size_t b, double total = 0) {
    return add_patterns_bound(p, bs, b, total + neg_kl(p.priors[b], bs, scales));
}

// The components' share: their expected log ξ-bounds and the entropy of q(h), added to
// `total` component by component.
double add_components_bound(const Problem& p, State& s, double total) {
    for (std::size_t ci = 0; ci < p.components.size(); ++ci) {
        const MfComponent& mc = p.components[ci];
        const ComponentState& cs = s.comps[ci];
        double part = 0;
        for (std::size_t fi = 0; fi < mc.factors.size(); ++fi) {
            const MfFactor& mf = mc.factors[fi];
            const Moments mo = factor_moments(mf, cs, block_of(s, *mf.src), s.w);
            part += bound_term(cs.xi[fi], cs.lambda[fi], mo.ex * mo.e_eta, mo.e_eta2, cs.log_g[fi]);
        }
        for (Eigen::Index u = 0; u < cs.d.size(); ++u) part += bernoulli_entropy(cs.d[u]);
        total += mc.src->weight * part;
    }
    return total;
}

// The bound on log p(x_v) (Variational MCMC eq. 4; JJ eq. 55–57): expected log ξ-bounds,
// exact log-likelihood of fixed complete families, −KL of q(θ) and the entropy of q(h).
double elbo(const Problem& p, State& s) {
    double total = p.families->fixed_log_likelihood;
    for (std::size_t b = 0; b < s.blocks.size(); ++b) total = add_block_bound(p, s.blocks[b], s.scales, b, total);
    for (const ScaleQ& q : s.scales) total += q.bound;
    return add_components_bound(p, s, total);
}

// Restart 0 starts every unobserved node at its own conditional under the prior means,
// its unobserved parents at zero; restart k ≥ 1 starts from q(x = +1) ~ Uniform(0, 1),
// drawn from the random stream `stream` of `seed`.
State initial_state(const Problem& p, int restart, std::uint64_t seed, std::uint64_t stream) {
    State s;
    const Families& fam = *p.families;
    for (std::size_t b = 0; b < p.priors.size(); ++b) {
        BlockState bs;
        bs.mu = p.priors[b].mean;
        bs.sigma = p.priors[b].cov;
        bs.log_det = p.priors[b].log_det;
        const auto n = fam.complete[b].w.size();
        const auto k = bs.mu.size();
        bs.precision.resize(k, k);
        bs.h.resize(k);
        bs.diff.resize(k);
        bs.pdiff.resize(k);
        bs.xi.setZero(n);
        update_lambda(bs);
        bs.e_eta.setZero(n);
        bs.e_eta2.setZero(n);
        bs.coef.setZero(n);
        bs.scaled.resize(std::min<Eigen::Index>(n, kMomentRows), k);
        bs.fs.resize(std::min<Eigen::Index>(n, kMomentRows), k);
        bs.linv.resize(k, k);
        bs.llt.compute(p.priors[b].precision);  // q(θ_i) = prior until the first update
        // q(λ_j) = its prior Gamma(ν/2, ν/2) until then.
        const auto nh = static_cast<Eigen::Index>(p.priors[b].heavy.size());
        for (Vec* v : {&bs.heavy.shape, &bs.heavy.rate, &bs.heavy.e_lambda, &bs.heavy.e_log_lambda}) v->resize(nh);
        for (std::size_t j = 0; j < p.priors[b].heavy.size(); ++j)
            bs.heavy.set(j, 0.5 * p.priors[b].nu[j], 0.5 * p.priors[b].nu[j]);
        s.blocks.push_back(std::move(bs));
        complete_moments(p, s, static_cast<int>(b));
    }
    // q(τ) from the blocks' start, the prior at τ = 1: a proper q, so the first bound is one.
    s.scales.resize(p.scales.size());
    update_scales(p, s);
    s.w.fbar.setZero(p.max_features);
    s.w.sf.setZero(p.max_features);
    s.w.r.assign(sz(p.max_links), 0.0);
    s.w.q.assign(sz(p.max_links), 0.0);
    s.w.pi.setZero(p.max_products);
    s.w.rbar.setZero(p.max_products);
    s.w.cov.setZero(p.max_products, p.max_products);
    inference::Rng rng(seed, stream);
    for (const MfComponent& mc : p.components) {
        ComponentState cs;
        const int n = mc.src->size();
        cs.d.setZero(n);
        cs.m.setZero(n);
        cs.v.setOnes(n);
        cs.xi.assign(mc.factors.size(), 0.0);
        update_lambda(cs);
        for (int u = 0; u < n; ++u) {
            double d = 0;
            if (restart > 0) {
                d = inference::logit(rng.uniform());
            } else {
                for (const Touch& t : mc.touches[sz(u)]) {
                    if (t.link >= 0 || t.product) continue;
                    const Factor& f = *mc.factors[sz(t.factor)].src;
                    d = f.base + (f.block >= 0 ? s.blocks[sz(f.block)].mu.dot(f.f) : 0.0);
                }
            }
            set_q(cs, u, d);
        }
        s.comps.push_back(std::move(cs));
    }
    return s;
}

VbFit assemble(const ir::Graph& g, const State& s) {
    VbFit fit;
    fit.mean.setZero(g.dim);
    for (std::size_t b = 0; b < s.blocks.size(); ++b) {
        const ir::Block& blk = g.blocks[b];
        fit.mean.segment(blk.offset, blk.size) = s.blocks[b].mu;
        fit.covs.push_back(s.blocks[b].sigma);
        fit.offsets.push_back(blk.offset);
    }
    // The learned scales' log τ: q(τ)'s mean and variance of η, as one diagonal block after
    // the weights' (mean field: uncorrelated with them).
    if (!g.scales.empty()) {
        Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(g.scales.size()),
                                                    static_cast<Eigen::Index>(g.scales.size()));
        for (std::size_t j = 0; j < g.scales.size(); ++j) {
            fit.mean[g.scales[j].theta_index] = s.scales[j].mean_log;
            fit.scale_mean.push_back(s.scales[j].mean);
            fit.scale_sd.push_back(s.scales[j].sd);
            cov(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j)) = s.scales[j].var_log;
        }
        fit.covs.push_back(std::move(cov));
        fit.offsets.push_back(g.scales.front().theta_index);
    }
    return fit;
}

void check_finite_bound(double value, int iteration) {
    if (!std::isfinite(value))
        throw Error(ErrorKind::inference,
                    fmt::format("variational EM, iteration {}: the bound on the log evidence is not finite", iteration));
}

// q(θ_i) with its Cholesky factor, as an extrapolated step saves it before trying.
struct SavedBlock {
    BlockQ q;
    Eigen::LLT<Mat> llt;

    void save(const BlockState& bs) {
        q = bs;
        llt = bs.llt;
    }
    void restore(BlockState& bs) const {
        static_cast<BlockQ&>(bs) = q;
        bs.llt = llt;
    }
};

// SQUAREM (Varadhan & Roland 2008, scheme S3) on the ξ of a fully observed model. The EM
// map F: ξ → q(θ) → ξ converges linearly, and slowly when the data are informative (a rate
// near 0.76 on the paper's 50-parent example). From ξ0 two EM steps give r = ξ1 − ξ0 and
// v = ξ2 − 2ξ1 + ξ0; the extrapolation ξ0 − 2αr + α²v, α = min(−1, −|r|/|v|), is mapped
// once more by F. Any ξ gives a valid bound (λ is even, so |ξ| is used), and without
// unobserved entries each block's share of the bound depends on its own ξ alone, so each
// block keeps the extrapolated result only if its share is at least that after ξ2, and
// otherwise goes back to ξ2: the bound never decreases, and a fixed point of the scheme
// is one of EM. |α| is about 1/(1 − rate) for a linear rate, 6 at most on the paper's
// examples; capping it at 8 keeps a map that drifts without converging (data that separate
// perfectly under a flat prior) at about plain EM's pace instead of driving q(θ) off
// geometrically to where the bound is mostly rounding.
class Squarem {
    static constexpr double max_step = 8;

public:
    explicit Squarem(const State& s) : xi0_(s.blocks.size()), r_(xi0_), v_(xi0_), saved_(s.blocks.size()) {}

    void start(const State& s) {
        for (std::size_t b = 0; b < s.blocks.size(); ++b) xi0_[b] = s.blocks[b].xi;
    }
    void after_first_step(const State& s) {
        for (std::size_t b = 0; b < s.blocks.size(); ++b) r_[b] = s.blocks[b].xi - xi0_[b];
    }
    // One F of the extrapolated ξ, block by block, after the second step.
    void extrapolated_step(const Problem& p, State& s, int iteration) {
        for (std::size_t b = 0; b < s.blocks.size(); ++b) {
            BlockState& bs = s.blocks[b];
            v_[b] = bs.xi - xi0_[b] - 2.0 * r_[b];
            const double vn = v_[b].norm();
            // α = −1 maps ξ2 itself: a plain EM step where the steps do not shrink.
            const double alpha = vn > 0 ? std::clamp(-r_[b].norm() / vn, -max_step, -1.0) : -1.0;
            saved_[b].save(bs);
            const double before = add_block_bound(p, bs, s.scales, b);
            bs.xi = (xi0_[b] - 2.0 * alpha * r_[b] + alpha * alpha * v_[b]).cwiseAbs();
            update_lambda(bs);
            const int bi = static_cast<int>(b);
            update_block(p, s, bi, iteration);
            update_xi_complete(p, s, bi);
            if (add_block_bound(p, bs, s.scales, b) >= before) continue;
            ++undone_;
            // Back to ξ2. After a plain step the patterns' ξ, λ, log g, E[η] and E[η²] are
            // functions of q(θ_i) and its factor (update_xi_complete), so they are made again
            // from the saved q, by the same operations on the same numbers: the same bits as
            // a saved copy, without five vectors of one entry per pattern (40 MB at 10^6).
            saved_[b].restore(bs);
            update_xi_complete(p, s, bi);
        }
    }

    int undone() const { return undone_; }

private:
    int undone_ = 0;
    std::vector<Vec> xi0_, r_, v_;
    std::vector<SavedBlock> saved_;
};

// SQUAREM where rows have unobserved entries. The EM map F takes the ξ of every complete
// pattern, each unobserved entry's natural parameter d (q(x = +1) = g(d)) and each component
// factor's ξ to their next values; plain EM crawls along it where q(h) and q(θ) move
// together (sbn2: about 1,050 iterations a start). The extrapolation is Squarem's, with one
// α over the whole vector (Varadhan & Roland 2008, S3): q(h) couples the blocks, so the bound
// is not a sum of blocks' shares that depend on their own ξ alone, and the step is kept only
// if the whole bound after F of the extrapolated point is at least that at ξ2; else the
// state goes back to ξ2. Any ξ ≥ 0 and any d give a valid bound, so the bound never
// decreases and a fixed point of the scheme is one of EM.
class HiddenSquarem {
    static constexpr double max_step = 8;  // as Squarem's

public:
    void start(const State& s) { flatten(s, x0_); }
    void after_first_step(const State& s) {
        flatten(s, r_);
        r_ -= x0_;
    }
    // After the second plain step, whose bound is `bound`: F of the extrapolated point by
    // `plain`, kept if it does not lower the bound. Returns the bound after.
    double extrapolated_step(const Problem& p, State& s, double bound, const std::function<void()>& plain) {
        flatten(s, v_);
        v_ -= x0_ + 2.0 * r_;
        const double vn = v_.norm();
        // α = −1 maps ξ2 itself: a plain EM step where the steps do not shrink.
        const double alpha = vn > 0 ? std::clamp(-r_.norm() / vn, -max_step, -1.0) : -1.0;
        save(s);
        x0_ += -2.0 * alpha * r_ + alpha * alpha * v_;
        unflatten(x0_, s);
        double after = -std::numeric_limits<double>::infinity();
        try {
            plain();
            after = elbo(p, s);
        } catch (const Error& e) {
            // An extrapolated point far out (a λ that underflows) is simply not taken.
            if (e.kind() != ErrorKind::inference) throw;
        }
        if (after >= bound) return after;
        ++undone_;
        restore(p, s);
        return bound;
    }
    int undone() const { return undone_; }

private:
    static Eigen::Index length(const State& s) {
        Eigen::Index n = 0;
        for (const BlockState& b : s.blocks) n += b.xi.size();
        for (const ComponentState& c : s.comps) n += c.d.size() + static_cast<Eigen::Index>(c.xi.size());
        return n;
    }
    static void flatten(const State& s, Vec& x) {
        x.resize(length(s));
        Eigen::Index at = 0;
        for (const BlockState& b : s.blocks) {
            x.segment(at, b.xi.size()) = b.xi;
            at += b.xi.size();
        }
        for (const ComponentState& c : s.comps) {
            x.segment(at, c.d.size()) = c.d;
            at += c.d.size();
            for (const double xi : c.xi) x[at++] = xi;
        }
    }
    // λ is even in ξ, so |ξ| is used.
    static void unflatten(const Vec& x, State& s) {
        Eigen::Index at = 0;
        for (BlockState& b : s.blocks) {
            b.xi = x.segment(at, b.xi.size()).cwiseAbs();
            at += b.xi.size();
            update_lambda(b);
        }
        for (ComponentState& c : s.comps) {
            for (int u = 0; u < static_cast<int>(c.d.size()); ++u) set_q(c, u, x[at++]);
            for (double& xi : c.xi) xi = std::abs(x[at++]);
            update_lambda(c);
        }
    }
    // After a plain step the complete patterns' ξ, λ, log g, E[η] and E[η²] are functions of
    // q(θ_i) (update_xi_complete), so only q(θ_i), q(h) and q(τ) are saved (Squarem's reason).
    // Assignments between equal sizes reuse the saved copies' memory: no allocation after
    // the first step.
    void save(const State& s) {
        blocks_.resize(s.blocks.size());
        for (std::size_t b = 0; b < s.blocks.size(); ++b) {
            blocks_[b].save(s.blocks[b]);
        }
        comps_ = s.comps;
        scales_ = s.scales;
    }
    void restore(const Problem& p, State& s) const {
        for (std::size_t b = 0; b < s.blocks.size(); ++b) {
            blocks_[b].restore(s.blocks[b]);
            update_xi_complete(p, s, static_cast<int>(b));
        }
        s.comps = comps_;
        s.scales = scales_;
    }

    int undone_ = 0;
    Vec x0_, r_, v_;
    std::vector<SavedBlock> blocks_;
    std::vector<ComponentState> comps_;
    std::vector<ScaleQ> scales_;
};

// How one EM run steps: a plain iteration numbered `it`, the bound after a step, and, where
// SQUAREM runs, its three parts (Squarem, ShardedSquarem).
struct EmSteps {
    std::function<void(int it)> plain;
    std::function<double()> bound;
    bool accelerate = false;
    std::function<void()> start, after_first_step;
    // The extrapolated step numbered `it`, given the bound now; returns the bound after it
    // where it has computed it (HiddenSquarem), else nothing.
    std::function<std::optional<double>(int it, double bound)> extrapolated_step;
    // Where several processes step together: rank 0's decision to stop, which every process
    // follows (their bounds agree only as far as their arithmetic does).
    std::function<bool(bool stop)> decide;
};

// The bound after each step, and how EM ended.
struct EmTrace {
    double elbo = 0;
    std::vector<double> trace;
    int iterations = 0;
    bool converged = false;
};

// Steps until the bound changes by at most options.tolerance of itself after a plain
// iteration, or options.max_iterations steps: with SQUAREM two plain iterations and one
// extrapolated step in turn. Every step counts as an iteration.
EmTrace iterate(const VbOptions& options, const EmSteps& steps) {
    EmTrace t;
    t.elbo = steps.bound();
    check_finite_bound(t.elbo, 0);
    int& it = t.iterations;
    const auto end_step = [&](bool plain, std::optional<double> known = std::nullopt) {
        const double value = known ? *known : steps.bound();
        check_finite_bound(value, it);
        // Every step is an exact coordinate maximisation or kept only if it does not lower
        // the bound, so only rounding can lower it.
        assert(value >= t.elbo - 1e-12 * (1.0 + std::abs(t.elbo)));
        t.trace.push_back(value);
        t.converged = plain && std::abs(value - t.elbo) <= options.tolerance * std::abs(value);
        t.elbo = value;
        const bool stop = t.converged || it >= options.max_iterations;
        return steps.decide ? steps.decide(stop) : stop;
    };
    const auto plain = [&] {
        steps.plain(++it);
        return end_step(true);
    };
    if (!steps.accelerate) {
        while (!plain()) {
        }
        return t;
    }
    for (;;) {
        steps.start();
        if (plain()) break;
        steps.after_first_step();
        if (plain()) break;
        const std::optional<double> after = steps.extrapolated_step(++it, t.elbo);
        if (end_step(false, after)) break;
    }
    return t;
}

VbFit finish_fit(VbFit fit, EmTrace t, int restart, int undone) {
    fit.elbo = t.elbo;
    fit.elbo_trace = std::move(t.trace);
    fit.iterations = t.iterations;
    fit.converged = t.converged;
    fit.restart = restart;
    fit.steps_undone = undone;
    return fit;
}

// One EM run from one start (Variational MCMC, Fig. 2–3): q(θ) block by block, ξ, then
// q(h) and the ξ it touches; each step maximises the bound in closed form. Two such
// iterations alternate with one SQUAREM step (Squarem on a fully observed model,
// HiddenSquarem where rows have unobserved entries; above) unless options.accelerate is off;
// the convergence test compares the bounds before and after a plain EM iteration only.
VbFit run(const Problem& p, const VbOptions& options, int restart) {
    // ξ starts at 0, where λ(ξ) = 1/8 is largest: the first q(θ) is the most cautious
    // Gaussian the bound allows (Böhning's curvature bound), which takes about half the
    // iterations that starting from the prior's ξ (huge for a flat prior) does.
    State s = initial_state(p, restart, options.seed, static_cast<std::uint64_t>(restart));
    const auto check_cancel = [&] {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed))
            throw Error(ErrorKind::cancelled, "variational EM was cancelled");
    };
    Squarem sq(s);
    HiddenSquarem hq;
    const bool hidden = !p.components.empty();
    EmSteps steps;
    steps.plain = [&](int it) {
        check_cancel();
        for (int b = 0; b < static_cast<int>(s.blocks.size()); ++b) {
            update_block(p, s, b, it);
            update_xi_complete(p, s, b);
        }
        update_scales(p, s);
        for (int ci = 0; ci < static_cast<int>(s.comps.size()); ++ci) {
            update_xi_component(p, s, ci);
            for (int sweep = 0; sweep < options.mean_field_sweeps; ++sweep) sweep_component(p, s, ci);
            update_xi_component(p, s, ci);
        }
    };
    steps.bound = [&] { return elbo(p, s); };
    steps.accelerate = options.accelerate;
    steps.start = [&] { hidden ? hq.start(s) : sq.start(s); };
    steps.after_first_step = [&] { hidden ? hq.after_first_step(s) : sq.after_first_step(s); };
    steps.extrapolated_step = [&](int it, double bound) -> std::optional<double> {
        if (hidden) return hq.extrapolated_step(p, s, bound, [&] { steps.plain(it); });
        check_cancel();
        sq.extrapolated_step(p, s, it);
        update_scales(p, s);
        return std::nullopt;
    };
    EmTrace t = iterate(options, steps);
    return finish_fit(assemble(*p.graph, s), std::move(t), restart, hidden ? hq.undone() : sq.undone());
}

// Whether a restart's ELBO beats the best so far by more than the spread of fits that reached
// the same optimum (each stops within tolerance of it, so they differ in the last digits):
// among equal fits the earliest is kept, and with more restarts than needed a model whose
// every start finds the same optimum gives the same fit as with one.
bool better_fit(double elbo, double best) { return elbo > best + 1e-6 * std::max(1.0, std::abs(best)); }

void check_options(const VbOptions& o) {
    if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance))
        throw Error(ErrorKind::usage, fmt::format("the VB tolerance must be a finite number ≥ 0, not {}", o.tolerance));
    if (o.max_iterations < 1)
        throw Error(ErrorKind::usage, fmt::format("the VB iteration limit must be at least 1, not {}", o.max_iterations));
    if (o.restarts < 0)
        throw Error(ErrorKind::usage, fmt::format("the number of VB restarts must be at least 1 (or 0: automatic), not {}",
                                                  o.restarts));
    if (o.mean_field_sweeps < 1)
        throw Error(ErrorKind::usage,
                    fmt::format("the number of mean-field sweeps must be at least 1, not {}", o.mean_field_sweeps));
}

// A wave of restarts side by side: first … first + n − 1 shared out over the threads as each
// becomes free, each result or error kept in its slot (slot j for restart first + j).
struct Wave {
    std::vector<std::optional<VbFit>> fits;
    std::vector<std::exception_ptr> errors;
};

void run_wave(int first, int n, int threads, const std::function<VbFit(int)>& run_one, Wave& out) {
    std::fill(out.fits.begin(), out.fits.end(), std::nullopt);
    std::fill(out.errors.begin(), out.errors.end(), nullptr);
    inference::parallel_chunks(threads, sz(n), 1, [&](std::size_t begin, std::size_t end, std::size_t) {
        for (std::size_t j = begin; j < end; ++j) {
            try {
                out.fits[j] = run_one(first + static_cast<int>(j));
            } catch (...) {
                out.errors[j] = std::current_exception();
            }
        }
    });
}

// Every restart's fit (run_one(k) runs restart k); `unobserved`: whether any row has an
// unobserved entry, without which every start is the same. With options.threads > 1 the
// restarts run side by side in waves of 8 per thread (all of the default 8 in one), each
// wave's taken in order as the sequential loop takes them (so the result is the loop's):
// memory for one wave's fits, and on_restart told after each wave, however many restarts are
// asked for.
VbResult fit_restarts(const ir::Graph& graph, const VbOptions& options, bool unobserved,
                      const std::function<VbFit(int)>& run_one, std::chrono::steady_clock::time_point start) {
    VbResult result;
    const int restarts = restarts_for(graph, options.restarts);
    const bool side_by_side = unobserved && restarts > 1 && options.threads > 1;
    const int width = side_by_side ? static_cast<int>(std::min<long>(restarts, 8L * options.threads)) : 1;
    Wave wave{std::vector<std::optional<VbFit>>(sz(width)), std::vector<std::exception_ptr>(sz(width))};
    // Takes restart k's fit into the result; false once interrupted (the finished ones kept).
    const auto take = [&](int k) {
        try {
            if (!side_by_side) {
                result.fits.push_back(run_one(k));
            } else {
                const std::size_t j = sz(k % width);
                if (wave.errors[j]) std::rethrow_exception(wave.errors[j]);
                result.fits.push_back(std::move(*wave.fits[j]));
            }
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::cancelled || !options.keep_finished_on_cancel || result.fits.empty()) throw;
            result.interrupted = true;
            return false;
        }
        return true;
    };
    for (int k = 0; k < restarts; ++k) {
        // Without unobserved entries, restarts differ in nothing: every start is the same.
        if (k > 0 && !unobserved) {
            result.fits.push_back(result.fits.front());
            result.fits.back().restart = k;
            if (options.on_restart) options.on_restart(k);
            continue;
        }
        if (side_by_side && k % width == 0) run_wave(k, std::min(width, restarts - k), options.threads, run_one, wave);
        if (!take(k)) break;
        if (better_fit(result.fits.back().elbo, result.fits[sz(result.best)].elbo)) result.best = k;
        if (options.on_restart) options.on_restart(k);
    }
    result.seconds = inference::seconds_since(start);
    return result;
}

VbResult fit_all(const ir::Graph& graph, const Families& families, const VbOptions& options,
                 std::chrono::steady_clock::time_point start) {
    check_options(options);
    const Problem p = make_problem(graph, families);
    return fit_restarts(graph, options, !p.components.empty(), [&](int k) { return run(p, options, k); }, start);
}

// ---------------------------------------------------------------------------------------
// The same EM over rows sharded among processes (runtime/distributed/). Every process runs
// it at once on its own shards. Each iteration, each shard's share of every block's Σ^{-1}
// and Σ^{-1}μ (rows_to_block) is summed over the processes, and every process then makes
// the same q(θ) from the same sums (prior_to_block, solve_block); the ξ and q(h) of a
// shard's rows are updated where the shard is held, and the bound's share of each shard is
// summed likewise. The blocks' updates within an iteration read the rows' state only, so
// taking all the blocks' sums at once gives the iteration that run() makes; SQUAREM's steps
// likewise (ShardedSquarem).

// This process's shards: the first's state holds q(θ) and q(τ), which the others copy.
struct LocalShard {
    Problem p;
    State s;
};

// Values exchanged one slot per shard: each process writes its shards' slots, zeros
// elsewhere, and the sum over processes adds each slot to zeros only, which is exact; the
// shards' slots are then added in shard order, so the result does not depend on how many
// processes hold them. A last entry carries rank 0's request to stop.
class ShardSums {
public:
    ShardSums(const ShardedFamilies& rows, Eigen::Index per_shard)
        : rows_(rows), per_(per_shard), in_(Vec::Zero(rows.shards * per_shard + 1)), out_(in_.size()) {}
    double* local(std::size_t j) { return in_.data() + (rows_.first + static_cast<Eigen::Index>(j)) * per_; }
    const double* shard(int k) const { return out_.data() + k * per_; }
    // Sums every process's slots; throws Error(cancelled) on every process where rank 0 asks.
    void exchange(bool stop) {
        in_[in_.size() - 1] = stop ? 1.0 : 0.0;
        rows_.comm->allreduce_sum(in_.data(), out_.data(), static_cast<int>(in_.size()));
        in_.setZero();
        if (out_[out_.size() - 1] != 0) throw Error(ErrorKind::cancelled, "variational EM was cancelled");
    }

private:
    const ShardedFamilies& rows_;
    Eigen::Index per_;
    Vec in_, out_;
};

// A block's sums in a slot: the lower triangle of Σ^{-1} by columns, then Σ^{-1}μ.
Eigen::Index block_sums_size(Eigen::Index k) { return k * (k + 1) / 2 + k; }

double* pack_block(const BlockState& bs, double* at) {
    const Eigen::Index k = bs.h.size();
    for (Eigen::Index j = 0; j < k; ++j)
        for (Eigen::Index i = j; i < k; ++i) *at++ = bs.precision(i, j);
    for (Eigen::Index i = 0; i < k; ++i) *at++ = bs.h[i];
    return at;
}

const double* add_block_sums(BlockState& bs, const double* at) {
    const Eigen::Index k = bs.h.size();
    for (Eigen::Index j = 0; j < k; ++j)
        for (Eigen::Index i = j; i < k; ++i) bs.precision(i, j) += *at++;
    for (Eigen::Index i = 0; i < k; ++i) bs.h[i] += *at++;
    return at;
}

class ShardedEm {
public:
    ShardedEm(std::vector<LocalShard>& shards, const ShardedFamilies& rows, const VbOptions& options)
        : shards_(shards), rows_(rows), options_(options), sums_(rows, sums_size(shards.front().p, offsets_)),
          bounds_(rows, 1) {}

    // q(θ) of every block from all the shards' sums, then each shard's ξ of its complete
    // patterns; q(τ); then each shard's q(h) and the ξ it touches (run()'s em_iteration).
    void iteration(int it) {
        update_q(it);
        update_scales(lead().p, lead().s);
        share_q();
        for (LocalShard& sh : shards_) {
            for (int b = 0; b < blocks(); ++b) update_xi_complete(sh.p, sh.s, b);
            for (int ci = 0; ci < static_cast<int>(sh.s.comps.size()); ++ci) {
                update_xi_component(sh.p, sh.s, ci);
                for (int sweep = 0; sweep < options_.mean_field_sweeps; ++sweep) sweep_component(sh.p, sh.s, ci);
                update_xi_component(sh.p, sh.s, ci);
            }
        }
    }

    // Every block's q(θ_i) on the lead shard from the prior and every shard's sums under its
    // current ξ and q(h) (update_block over the shards); the others' copies are not touched.
    void update_q(int it) {
        for (std::size_t j = 0; j < shards_.size(); ++j) {
            double* at = sums_.local(j);
            for (int b = 0; b < blocks(); ++b) {
                BlockState& bs = shards_[j].s.blocks[sz(b)];
                bs.precision.setZero();
                bs.h.setZero();
                rows_to_block(shards_[j].p, shards_[j].s, b);
                at = pack_block(bs, at);
            }
        }
        sums_.exchange(stop_requested());
        for (int b = 0; b < blocks(); ++b) {
            prior_to_block(lead().p, lead().s, b);
            for (int k = 0; k < rows_.shards; ++k) add_block_sums(lead().s.blocks[sz(b)], sums_.shard(k) + offsets_[sz(b)]);
            solve_block(lead().p, lead().s, b, it);
        }
    }

    // The lead shard's q(θ) and q(τ) to the other shards this process holds.
    void share_q() {
        for (std::size_t j = 1; j < shards_.size(); ++j) {
            for (int b = 0; b < blocks(); ++b) {
                static_cast<BlockQ&>(shards_[j].s.blocks[sz(b)]) = static_cast<const BlockQ&>(lead().s.blocks[sz(b)]);
                shards_[j].s.blocks[sz(b)].llt = lead().s.blocks[sz(b)].llt;
            }
            shards_[j].s.scales = lead().s.scales;
        }
    }

    // The bound (elbo()): q(θ)'s and q(τ)'s share once, each shard's rows' share summed.
    double bound() {
        for (std::size_t j = 0; j < shards_.size(); ++j) {
            LocalShard& sh = shards_[j];
            double rows = sh.p.families->fixed_log_likelihood;
            for (int b = 0; b < blocks(); ++b) rows = add_patterns_bound(sh.p, sh.s.blocks[sz(b)], sz(b), rows);
            *bounds_.local(j) = add_components_bound(sh.p, sh.s, rows);
        }
        bounds_.exchange(false);
        double total = 0;
        for (int b = 0; b < blocks(); ++b) total += neg_kl(lead().p.priors[sz(b)], lead().s.blocks[sz(b)], lead().s.scales);
        for (const ScaleQ& q : lead().s.scales) total += q.bound;
        for (int k = 0; k < rows_.shards; ++k) total += *bounds_.shard(k);
        return total;
    }

    std::vector<LocalShard>& shards() { return shards_; }
    LocalShard& lead() { return shards_.front(); }
    const ShardedFamilies& rows() const { return rows_; }
    int blocks() const { return static_cast<int>(shards_.front().s.blocks.size()); }

private:
    // The size of a shard's slot, and where each block's sums start in it.
    static Eigen::Index sums_size(const Problem& p, std::vector<Eigen::Index>& offsets) {
        Eigen::Index n = 0;
        for (const PriorBlock& pr : p.priors) {
            offsets.push_back(n);
            n += block_sums_size(pr.mean.size());
        }
        return n;
    }
    bool stop_requested() const {
        return rows_.comm->rank() == 0 && options_.cancel && options_.cancel->load(std::memory_order_relaxed);
    }

    std::vector<LocalShard>& shards_;
    const ShardedFamilies& rows_;
    const VbOptions& options_;
    std::vector<Eigen::Index> offsets_;  // filled before sums_ is made (declared first)
    ShardSums sums_, bounds_;
};

// SQUAREM (class Squarem) over the shards, for a model without unobserved entries: each
// block's step length from its ξ over every shard (the squared norms summed), and each block
// keeps its step only if its whole share of the bound (−KL of q(θ_i) and every shard's
// patterns) is at least that after ξ2. The blocks do not interact, so all take their step
// at once: three exchanges a step.
class ShardedSquarem {
public:
    explicit ShardedSquarem(ShardedEm& em)
        : em_(em), xi0_(em.shards().size()), r_(xi0_), v_(xi0_), saved_(sz(em.blocks())),
          norms_(em.rows(), 3 * em.blocks()), parts_(em.rows(), em.blocks()) {}

    void start() {
        for (std::size_t j = 0; j < xi0_.size(); ++j) xi0_[j] = xis(j);
    }
    void after_first_step() {
        for (std::size_t j = 0; j < r_.size(); ++j) {
            r_[j] = xis(j);
            for (std::size_t b = 0; b < r_[j].size(); ++b) r_[j][b] -= xi0_[j][b];
        }
    }

    void extrapolated_step(int it) {
        step_lengths();
        em_.update_q(it);
        em_.share_q();
        keep_or_undo();
    }

    int undone() const { return undone_; }

private:
    static constexpr double max_step = 8;  // as Squarem's

    // Each block's α from |r|² and |v|² over every shard (each shard's summed), and its share
    // of the bound now, with q(θ_i) saved; then every shard's ξ at the extrapolated point.
    void step_lengths() {
        const int nb = em_.blocks();
        for (std::size_t j = 0; j < xi0_.size(); ++j) {
            LocalShard& sh = em_.shards()[j];
            double* at = norms_.local(j);
            v_[j].resize(sz(nb));
            for (int b = 0; b < nb; ++b) {
                const BlockState& bs = sh.s.blocks[sz(b)];
                v_[j][sz(b)] = bs.xi - xi0_[j][sz(b)] - 2.0 * r_[j][sz(b)];
                *at++ = r_[j][sz(b)].squaredNorm();
                *at++ = v_[j][sz(b)].squaredNorm();
                *at++ = add_patterns_bound(sh.p, bs, sz(b), 0.0);
            }
        }
        norms_.exchange(false);
        LocalShard& lead = em_.lead();
        alpha_.resize(sz(nb));
        before_.resize(sz(nb));
        for (int b = 0; b < nb; ++b) {
            double rr = 0, vv = 0, part = 0;
            for (int k = 0; k < em_.rows().shards; ++k) {
                const double* at = norms_.shard(k) + 3 * b;
                rr += at[0];
                vv += at[1];
                part += at[2];
            }
            // α = −1 maps ξ2 itself: a plain EM step where the steps do not shrink.
            alpha_[sz(b)] = vv > 0 ? std::clamp(-std::sqrt(rr) / std::sqrt(vv), -max_step, -1.0) : -1.0;
            BlockState& bs = lead.s.blocks[sz(b)];
            before_[sz(b)] = neg_kl(lead.p.priors[sz(b)], bs, lead.s.scales) + part;
            saved_[sz(b)].save(bs);
        }
        for (std::size_t j = 0; j < xi0_.size(); ++j)
            for (int b = 0; b < nb; ++b) {
                BlockState& bs = em_.shards()[j].s.blocks[sz(b)];
                const double a = alpha_[sz(b)];
                bs.xi = (xi0_[j][sz(b)] - 2.0 * a * r_[j][sz(b)] + a * a * v_[j][sz(b)]).cwiseAbs();
                update_lambda(bs);
            }
    }

    // After q(θ) from the extrapolated ξ: each block's share of the bound over every shard,
    // and back to ξ2 where it fell; the patterns' ξ and moments are then made again from the
    // saved q (as Squarem does).
    void keep_or_undo() {
        const int nb = em_.blocks();
        for (std::size_t j = 0; j < xi0_.size(); ++j) {
            LocalShard& sh = em_.shards()[j];
            double* at = parts_.local(j);
            for (int b = 0; b < nb; ++b) {
                update_xi_complete(sh.p, sh.s, b);
                *at++ = add_patterns_bound(sh.p, sh.s.blocks[sz(b)], sz(b), 0.0);
            }
        }
        parts_.exchange(false);
        LocalShard& lead = em_.lead();
        undone_blocks_.clear();
        for (int b = 0; b < nb; ++b) {
            BlockState& bs = lead.s.blocks[sz(b)];
            double after = neg_kl(lead.p.priors[sz(b)], bs, lead.s.scales);
            for (int k = 0; k < em_.rows().shards; ++k) after += parts_.shard(k)[b];
            if (after >= before_[sz(b)]) continue;
            saved_[sz(b)].restore(bs);
            undone_blocks_.push_back(b);
        }
        undone_ += static_cast<int>(undone_blocks_.size());
        update_scales(lead.p, lead.s);
        em_.share_q();
        for (LocalShard& sh : em_.shards())
            for (int b : undone_blocks_) update_xi_complete(sh.p, sh.s, b);
    }

    std::vector<Vec> xis(std::size_t j) const {
        std::vector<Vec> out;
        for (const BlockState& bs : em_.shards()[j].s.blocks) out.push_back(bs.xi);
        return out;
    }

    ShardedEm& em_;
    std::vector<std::vector<Vec>> xi0_, r_, v_;  // per shard held, per block
    std::vector<SavedBlock> saved_;
    std::vector<double> alpha_, before_;  // per block, for the step under way
    std::vector<int> undone_blocks_;
    ShardSums norms_, parts_;
    int undone_ = 0;
};

// One EM run from one start over every shard, as run() (SQUAREM where no shard has an
// unobserved entry). Restart k's random q(h) of shard s comes from stream k + 2^32 (s + 1)
// of the seed, so that a shard's start does not depend on which process holds it.
VbFit run_sharded(std::vector<LocalShard>& shards, const ShardedFamilies& rows, const VbOptions& options, int restart,
                  bool unobserved) {
    for (std::size_t j = 0; j < shards.size(); ++j) {
        const auto shard = static_cast<std::uint64_t>(rows.first) + j;
        shards[j].s = initial_state(shards[j].p, restart, options.seed,
                                    static_cast<std::uint64_t>(restart) + ((shard + 1) << 32));
    }
    ShardedEm em(shards, rows, options);
    EmSteps steps;
    steps.plain = [&](int it) { em.iteration(it); };
    steps.bound = [&] { return em.bound(); };
    steps.accelerate = options.accelerate && !unobserved;
    std::optional<ShardedSquarem> sq;  // its exchange buffers only where it runs
    if (steps.accelerate) sq.emplace(em);
    steps.start = [&] { sq->start(); };
    steps.after_first_step = [&] { sq->after_first_step(); };
    steps.extrapolated_step = [&](int it, double) -> std::optional<double> {
        sq->extrapolated_step(it);
        return std::nullopt;
    };
    steps.decide = [&](bool stop) {
        std::int64_t s = stop ? 1 : 0;
        rows.comm->broadcast(&s, 1);
        return s != 0;
    };
    EmTrace t = iterate(options, steps);
    return finish_fit(assemble(*shards.front().p.graph, shards.front().s), std::move(t), restart, sq ? sq->undone() : 0);
}

}  // namespace

namespace {
// The block holding θ_k (offsets ascend).
std::size_t block_of(const VbFit& f, int k) {
    const auto it = std::upper_bound(f.offsets.begin(), f.offsets.end(), k);
    assert(it != f.offsets.begin());
    return static_cast<std::size_t>(it - f.offsets.begin() - 1);
}
}  // namespace

const Eigen::MatrixXd& VbFit::block_cov(const ir::Block& b) const {
    const std::size_t i = block_of(*this, b.offset);
    assert(offsets[i] == b.offset && covs[i].rows() == b.size);
    return covs[i];
}

double VbFit::variance(int k) const {
    const std::size_t b = block_of(*this, k);
    const int i = k - offsets[b];
    return covs[b](i, i);
}

Eigen::VectorXd VbFit::variances() const {
    Eigen::VectorXd v(mean.size());
    for (std::size_t b = 0; b < covs.size(); ++b) v.segment(offsets[b], covs[b].rows()) = covs[b].diagonal();
    return v;
}

Mat VbFit::dense_cov() const {
    Mat c = Mat::Zero(mean.size(), mean.size());
    for (std::size_t b = 0; b < covs.size(); ++b) {
        const Eigen::Index n = covs[b].rows();
        c.block(offsets[b], offsets[b], n, n) = covs[b];
    }
    return c;
}

inference::GaussianProposal VbFit::proposal(double df, double inflation) const {
    inference::GaussianProposal p(mean, covs, df);
    if (inflation != 1.0) p.inflate(inflation);
    return p;
}

std::vector<std::string> idle_hidden(const ir::Graph& graph, const VbFit& fit) {
    std::vector<int> weights(graph.elements.size(), 0), moved(graph.elements.size(), 0);
    for (std::size_t e = 0; e < graph.cpds.size(); ++e) {
        const ir::Cpd& c = graph.cpds[e];
        if (c.block < 0) continue;
        const ir::Block& b = graph.blocks[sz(c.block)];
        for (const ir::Feature& f : c.features) {
            const int parent = f.element;
            if (parent < 0 || !graph.elements[sz(parent)].hidden) continue;
            const int i = b.offset + f.weight;
            ++weights[sz(parent)];
            if (std::abs(fit.mean(i)) > 1e-6 * std::sqrt(fit.variance(i))) ++moved[sz(parent)];
        }
    }
    std::vector<std::string> out;
    for (std::size_t e = 0; e < graph.elements.size(); ++e)
        if (weights[e] > 0 && moved[e] == 0) out.push_back(graph.elements[e].name);
    return out;
}

std::string idle_hidden_warning(const ir::Graph& graph, const VbFit& best, int starts) {
    const std::vector<std::string> idle = idle_hidden(graph, best);
    if (idle.empty()) return "";
    return fmt::format("in the best variational fit{} every weight on hidden node{} {} is 0: {} at the symmetric point "
                       "where {} nothing. Either the data give {} nothing to explain, or no start left that point "
                       "(run with more --restarts), or the mean-field fit cannot use {} (q factorises over each row's "
                       "hidden values); vbn fit samples the exact posterior",
                       starts > 1 ? fmt::format(" (of {} starts)", starts) : std::string(" (one start)"),
                       idle.size() == 1 ? "" : "s", fmt::format("{}", fmt::join(idle, ", ")),
                       idle.size() == 1 ? "it is" : "they are", idle.size() == 1 ? "it explains" : "they explain",
                       idle.size() == 1 ? "it" : "them", idle.size() == 1 ? "it" : "them");
}

int restarts_for(const ir::Graph& graph, int requested) {
    if (requested > 0) return requested;
    const bool hidden = graph.has_hidden();
    return hidden ? hidden_node_restarts : 1;
}

VbResult variational(const ir::Graph& graph, const ShardedFamilies& rows, const VbOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    check_options(options);
    if (!rows.comm || rows.local.empty() || rows.first < 0 || rows.first + static_cast<int>(rows.local.size()) > rows.shards)
        throw Error(ErrorKind::usage, fmt::format("a sharded variational fit needs a communicator and shards within 0 … {}",
                                                  rows.shards - 1));
    std::vector<LocalShard> shards;
    shards.reserve(rows.local.size());
    for (const Families* f : rows.local) shards.push_back({make_problem(graph, *f), {}});
    // Whether any shard's rows have unobserved entries (restarts differ only then).
    double mine = 0, all = 0;
    for (const LocalShard& sh : shards) mine += static_cast<double>(sh.p.components.size());
    rows.comm->allreduce_sum(&mine, &all, 1);
    // One restart at a time: each exchanges with every process at every iteration.
    VbOptions one_by_one = options;
    one_by_one.threads = 1;
    return fit_restarts(graph, one_by_one, all > 0,
                        [&](int k) { return run_sharded(shards, rows, one_by_one, k, all > 0); }, start);
}

VbResult variational(const ir::Graph& graph, const Families& families, const VbOptions& options) {
    return fit_all(graph, families, options, std::chrono::steady_clock::now());
}

VbResult variational(const ir::Graph& graph, const Dataset& data, const VbOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    check_options(options);
    FamilyOptions fo;
    fo.max_enumerated = std::numeric_limits<int>::max();  // nothing is summed out here:
    fo.summation = Summation::enumerate;                   // no limit, no elimination orders
    const Families families = build_families(graph, data, fo);
    return fit_all(graph, families, options, start);
}

}  // namespace vbn
