// Prior statements into each parameter's Gaussian N(mean, cov) over its elements
// (row-major). normal(MEAN, SD) gives iid or independent elements, a diagonal covariance;
// mvnormal(MEANVEC, COV) a full one, for a vector parameter of one scalar node, whose
// elements then all sit in the one block of that node.
//
// Accepted shapes: MEAN and SD of normal are each a scalar (shared by all elements), a
// vector literal with one entry per element (row-major for a matrix parameter), or, for a
// matrix parameter, a matrix literal of its shape. mvnormal takes a vector of the
// parameter's length and a square matrix of that size (a scalar parameter also accepts a
// scalar mean and variance).
//
// student_t(NU, MEAN, SCALE) and cauchy(MEAN, SCALE) (NU = 1) give independent heavy-tailed
// elements, with arguments shaped as normal's: the IR holds MEAN, SCALE² on the diagonal of
// the covariance and NU in ir::Block::prior_df.
//
// ir::Parameter::prior is the prior with its arguments evaluated and printed with six
// significant digits, e.g. `normal(3, 3.16228)` for `normal(3, sqrt(10))`.
#include "lang/lower_state.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace vbn::lang::lowering {

namespace {

// Relative tolerance of the symmetry check: tighter than any covariance a user would
// type, looser than the rounding of entries computed from constant expressions.
constexpr double symmetry_tolerance = 1e-9;

// The checked arguments of one prior statement, shared by all the parameters it names.
struct PriorArgs {
    bool normal = true;               // normal, student_t or cauchy: independent elements
    std::optional<Literal> nu;        // student_t and cauchy: degrees of freedom
    std::optional<Literal> mean;
    std::optional<Literal> spread;  // SD of normal, covariance of mvnormal
    int scale = -1;                   // normal(MEAN, NAME): the learned scale (Lowering::scales)
    bool valid = false;
    std::string text;
};

// Each SD entry must be positive: a zero SD is a point mass, not a Gaussian prior. Its
// square, the variance the IR holds, must be a positive finite double too.
// The same for the scale of student_t and cauchy (`what` names it: "the scale of cauchy").
bool check_sd(Lowering& s, const Literal& sd, const char* what = nullptr) {
    bool ok = true;
    for (std::size_t k = 0; k < sd.values.size(); ++k) {
        const double x = sd.values[k];
        if (!(x > 0)) {
            s.diag.error(sd.places[k], what ? fmt::format("{} must be positive, found {}", what, format_number(x))
                                            : fmt::format("the standard deviation of normal must be positive, found {}",
                                                          format_number(x)));
            ok = false;
        } else if (!(x * x > 0) || !std::isfinite(x * x)) {
            s.diag.error(sd.places[k], what ? fmt::format("the scale {} is out of range: its square must be a positive "
                                                          "finite number",
                                                          format_number(x))
                                            : fmt::format("the standard deviation {} is out of range: its square, the "
                                                          "variance, must be a positive finite number",
                                                          format_number(x)));
            ok = false;
        }
    }
    return ok;
}

// Row (1-based) where the Cholesky factorisation of the n×n matrix `a` breaks down, or 0
// if it succeeds. A pivot that is not clearly positive relative to its diagonal entry means
// the matrix is singular to working precision.
int cholesky_failure(const std::vector<double>& a, int n) {
    std::vector<double> l(static_cast<std::size_t>(n * n), 0.0);
    auto A = [&](int i, int j) { return a[static_cast<std::size_t>(i * n + j)]; };
    auto L = [&](int i, int j) -> double& { return l[static_cast<std::size_t>(i * n + j)]; };
    for (int j = 0; j < n; ++j) {
        double d = A(j, j);
        for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
        if (!(d > 1e-12 * std::abs(A(j, j)))) return j + 1;
        L(j, j) = std::sqrt(d);
        for (int i = j + 1; i < n; ++i) {
            double x = A(i, j);
            for (int k = 0; k < j; ++k) x -= L(i, k) * L(j, k);
            L(i, j) = x / L(j, j);
        }
    }
    return 0;
}

// A covariance literal must be square, symmetric and positive definite. On success the
// values are made exactly symmetric, as the IR promises.
bool check_cov(Lowering& s, Literal& cov) {
    if (cov.shape.empty()) {
        if (cov.values[0] > 0) return true;
        s.diag.error(cov.loc, fmt::format("the variance of mvnormal must be positive, found {}", format_number(cov.values[0])));
        return false;
    }
    if (cov.shape.size() != 2 || cov.shape[0] != cov.shape[1]) {
        s.diag.error(cov.loc, fmt::format("the covariance of mvnormal must be a square matrix, found a {}; write it as a list "
                                          "of rows, e.g. [[1, 0.5], [0.5, 1]]",
                                          shape_text(cov.shape)));
        return false;
    }
    const int n = cov.shape[0];
    auto at = [&](int i, int j) -> double& { return cov.values[static_cast<std::size_t>(i * n + j)]; };
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            const double a = at(i, j), b = at(j, i);
            if (std::abs(a - b) > symmetry_tolerance * std::max(std::abs(a), std::abs(b))) {
                s.diag.error(cov.places[static_cast<std::size_t>(j * n + i)],
                             fmt::format("the covariance matrix is not symmetric: entry [{},{}] is {} but entry [{},{}] is {}",
                                         j + 1, i + 1, format_number(b), i + 1, j + 1, format_number(a)));
                return false;
            }
            at(i, j) = at(j, i) = 0.5 * (a + b);
        }
    if (const int row = cholesky_failure(cov.values, n)) {
        s.diag.error(cov.loc, fmt::format("the covariance matrix is not positive definite (its Cholesky factorisation fails "
                                          "at row {}); a covariance must be symmetric positive definite",
                                          row));
        return false;
    }
    return true;
}

// Degrees of freedom must be positive and finite (an infinite NU is the normal prior: write
// normal(MEAN, SCALE) instead).
bool check_nu(Lowering& s, const Literal& nu, const char* dist) {
    bool ok = true;
    for (std::size_t k = 0; k < nu.values.size(); ++k) {
        const double x = nu.values[k];
        if (!(x > 0) || !std::isfinite(x)) {
            s.diag.error(nu.places[k], fmt::format("the degrees of freedom of {} must be positive and finite, found {}", dist,
                                                   format_number(x)));
            ok = false;
        }
    }
    return ok;
}

// student_t(NU, MEAN, SCALE) or cauchy(MEAN, SCALE), which is NU = 1.
void evaluate_heavy(Lowering& s, const ast::prior_stmt& ps, Location stmt_loc, PriorArgs& args) {
    if (const auto* t = boost::get<ast::student_t_prior>(&ps.dist.get())) {
        const Location loc = s.at(*t, stmt_loc);
        args.nu = s.eval.value(t->nu, loc);
        args.mean = s.eval.value(t->mean, loc);
        args.spread = s.eval.value(t->scale, loc);
        const bool nu_ok = args.nu && check_nu(s, *args.nu, "student_t");
        const bool scale_ok = args.spread && check_sd(s, *args.spread, "the scale of student_t");
        args.valid = nu_ok && scale_ok && args.mean;
        if (args.valid)
            args.text = fmt::format("student_t({}, {}, {})", format_literal(*args.nu), format_literal(*args.mean),
                                    format_literal(*args.spread));
        return;
    }
    const auto& c = boost::get<ast::cauchy_prior>(ps.dist.get());
    const Location loc = s.at(c, stmt_loc);
    args.mean = s.eval.value(c.mean, loc);
    args.spread = s.eval.value(c.scale, loc);
    args.valid = args.mean && args.spread && check_sd(s, *args.spread, "the scale of cauchy");
    if (!args.valid) return;
    args.nu = Literal{};
    args.nu->values = {1.0};
    args.nu->places = {loc};
    args.nu->loc = loc;
    args.text = fmt::format("cauchy({}, {})", format_literal(*args.mean), format_literal(*args.spread));
}

PriorArgs evaluate(Lowering& s, const ast::prior_stmt& ps, Location stmt_loc) {
    PriorArgs args;
    if (!boost::get<ast::normal_prior>(&ps.dist.get()) && !boost::get<ast::mvnormal_prior>(&ps.dist.get())) {
        evaluate_heavy(s, ps, stmt_loc, args);
        return args;
    }
    if (const auto* n = boost::get<ast::normal_prior>(&ps.dist.get())) {
        const Location loc = s.at(*n, stmt_loc);
        args.mean = s.eval.value(n->mean, loc);
        if (const auto* name = boost::get<ast::identifier>(&n->sd)) {
            // A learned scale: the weights' prior at τ = 1 here, τ itself in θ.
            const auto found = s.scale_by_name.find(name->name);
            if (found == s.scale_by_name.end()) return args;  // refused by register_scales
            args.scale = found->second;
            args.spread = Literal{{}, {1.0}, {loc}, loc};
            args.valid = args.mean.has_value();
            if (args.valid) args.text = fmt::format("normal({}, {})", format_literal(*args.mean), name->name);
            return args;
        }
        args.spread = s.eval.value(boost::get<ast::value>(n->sd), loc);
        args.valid = args.mean && args.spread && check_sd(s, *args.spread);
        if (args.valid) args.text = fmt::format("normal({}, {})", format_literal(*args.mean), format_literal(*args.spread));
        return args;
    }
    const auto& m = boost::get<ast::mvnormal_prior>(ps.dist.get());
    const Location loc = s.at(m, stmt_loc);
    args.normal = false;
    args.mean = s.eval.value(m.mean, loc);
    args.spread = s.eval.value(m.cov, loc);
    if (args.spread && !check_cov(s, *args.spread)) args.spread.reset();
    args.valid = args.mean && args.spread;
    if (args.valid) args.text = fmt::format("mvnormal({}, {})", format_literal(*args.mean), format_literal(*args.spread));
    return args;
}

// One value per element of `p` from a normal argument, or an error naming what would fit.
std::optional<std::vector<double>> per_element(Lowering& s, const ParamInfo& p, const Literal& lit, const char* what) {
    const int n = p.size();
    if (lit.shape.empty()) return std::vector<double>(static_cast<std::size_t>(n), lit.values[0]);
    if ((lit.shape.size() == 1 && lit.shape[0] == n) || lit.shape == p.shape) return lit.values;
    std::string fits = "a scalar";
    if (p.shape.size() == 1) fits += fmt::format(" or a vector of length {}", n);
    if (p.shape.size() == 2)
        fits += fmt::format(", a {} or a vector of its {} elements in row-major order", shape_text(p.shape), n);
    s.diag.error(lit.loc, fmt::format("the {} is a {} but '{}' is a {}; give {}", what, shape_text(lit.shape), p.name,
                                      shape_text(p.shape), fits));
    return std::nullopt;
}

// A prior mean must leave the log prior finite at weight 0 and near it: its square, and its
// distance from 0 in standard deviations squared, must be finite doubles. (A mean of 1e308
// made the log density −∞ at every weight a logistic link uses, and the variational fit then
// failed with no place named.)
bool check_mean(Lowering& s, const Literal& mean_lit, double mean, double sd) {
    const double z = mean / sd;
    if (std::isfinite(mean * mean) && std::isfinite(z * z)) return true;
    // The caret at the entry written with this value (the literal's elements may be in another
    // order than the parameter's).
    const auto at = std::find(mean_lit.values.begin(), mean_lit.values.end(), mean) - mean_lit.values.begin();
    const Location where = static_cast<std::size_t>(at) < mean_lit.places.size() ? mean_lit.places[static_cast<std::size_t>(at)]
                                                                                 : mean_lit.loc;
    s.diag.error(where, fmt::format("the mean {} is out of range for a standard deviation of {}: its square and its distance "
                                    "from 0 in standard deviations, squared, must be finite numbers",
                                    format_number(mean), format_number(sd)));
    return false;
}

bool apply_normal(Lowering& s, ParamInfo& p, const PriorArgs& args) {
    const bool heavy = args.nu.has_value();
    const auto mean = per_element(s, p, *args.mean, heavy ? "location" : "mean");
    const auto sd = per_element(s, p, *args.spread, heavy ? "scale" : "standard deviation");
    const auto nu = heavy ? per_element(s, p, *args.nu, "degrees of freedom") : std::optional<std::vector<double>>();
    if (!mean || !sd || (heavy && !nu)) return false;
    const auto n = static_cast<std::size_t>(p.size());
    for (std::size_t k = 0; k < n; ++k)
        if (!check_mean(s, *args.mean, (*mean)[k], (*sd)[k])) return false;
    p.mean = *mean;
    if (heavy) p.df = *nu;
    p.var.resize(n);
    for (std::size_t k = 0; k < n; ++k) p.var[k] = (*sd)[k] * (*sd)[k];
    return true;
}

bool apply_mvnormal(Lowering& s, ParamInfo& p, const PriorArgs& args, Location use) {
    if (p.shape.size() == 2) {
        s.diag.error(use, fmt::format("mvnormal is for a vector parameter, but '{}' is a {}; use normal(MEAN, SD) for its "
                                      "elements",
                                      p.name, shape_text(p.shape)));
        return false;
    }
    const ir::Variable& node = s.variable(p.node);
    if (p.declared ? p.split : node.is_array) {
        s.diag.error(use, fmt::format("mvnormal needs a parameter of one scalar node, but '{}' holds one weight per element "
                                      "of the array node '{}', each in its own block; use normal(MEAN, SD)",
                                      p.name, node.name));
        return false;
    }
    const int n = p.size();
    const Literal& mean = *args.mean;
    const Literal& cov = *args.spread;
    bool ok = true;
    if (!((mean.shape.size() == 1 && mean.shape[0] == n) || (mean.shape.empty() && n == 1))) {
        s.diag.error(mean.loc, fmt::format("the mean of mvnormal is a {} but '{}' is a {}; give a vector of length {}",
                                           shape_text(mean.shape), p.name, shape_text(p.shape), n));
        ok = false;
    }
    if (!((cov.shape.size() == 2 && cov.shape[0] == n) || (cov.shape.empty() && n == 1))) {
        s.diag.error(cov.loc, fmt::format("the covariance of mvnormal is a {} but '{}' is a {}; give a matrix[{},{}]",
                                          shape_text(cov.shape), p.name, shape_text(p.shape), n, n));
        ok = false;
    }
    if (!ok) return false;
    for (int k = 0; k < n; ++k) {
        const double v = cov.values[static_cast<std::size_t>(k * n + k)];
        if (v > 0 && !check_mean(s, mean, mean.values[static_cast<std::size_t>(k)], std::sqrt(v))) return false;
    }
    p.mean = mean.values;
    p.cov = cov.values;
    p.var.resize(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) p.var[static_cast<std::size_t>(k)] = p.cov[static_cast<std::size_t>(k * n + k)];
    return true;
}

void prior_target(Lowering& s, const ast::identifier& id, const ast::prior_stmt& ps, const PriorArgs& args) {
    const Location loc = s.name_at(id, ps, s.at(ps));
    if (const auto v = s.variable_by_name.find(id.name); v != s.variable_by_name.end()) {
        if (s.variable(v->second).kind == ir::VariableKind::binary)
            s.diag.error(loc, fmt::format("'{}' is a node, not a parameter; a prior belongs to a parameter, a coefficient in a "
                                          "predictor, while a node gets its distribution in its declaration",
                                          id.name));
        else
            s.diag.error(loc, fmt::format("'{}' is a covariate, not a parameter; a covariate is an observed input with no "
                                          "distribution: it can be a parent but never a child",
                                          id.name));
        return;
    }
    const auto found = s.param_by_name.find(id.name);
    if (const auto d = s.declared.find(id.name); found == s.param_by_name.end() && d != s.declared.end())
        return;  // declared but unused: check_declared_used says so
    if (found == s.param_by_name.end()) {
        std::vector<std::string> names;
        for (const auto& p : s.params) names.push_back(p.name);
        const std::string guess = closest_name(id.name, names);
        s.diag.error(loc, fmt::format("prior on '{}', which no predictor uses; a prior belongs to a parameter used as a "
                                      "coefficient{}",
                                      id.name, guess.empty() ? std::string() : fmt::format("; did you mean '{}'?", guess)));
        return;
    }
    ParamInfo& p = s.params[static_cast<std::size_t>(found->second)];
    if (p.has_prior) {
        s.diag.error(loc, fmt::format("parameter '{}' already has a prior on line {}; give each parameter exactly one prior",
                                      id.name, p.prior_loc.line));
        return;
    }
    p.has_prior = true;
    p.prior_loc = loc;
    if (!args.valid || !p.shape_known) return;
    p.prior_ok = args.normal ? apply_normal(s, p, args) : apply_mvnormal(s, p, args, loc);
    if (p.prior_ok) p.prior_text = args.text;
    p.scale = args.scale;
}


// Every name in a normal prior's standard deviation becomes a learned scale, before any
// prior is applied (statements come in any order). A name that is already something else
// is refused where it stands.
void register_scales(Lowering& s, const ast::program& program) {
    for (const auto& st : program.statements) {
        const auto* ps = boost::get<ast::prior_stmt>(&st.get());
        const auto* n = ps ? boost::get<ast::normal_prior>(&ps->dist.get()) : nullptr;
        const auto* id = n ? boost::get<ast::identifier>(&n->sd) : nullptr;
        if (!id) continue;
        const Location loc = s.name_at(*id, *n, s.at(*n, s.at(*ps)));
        std::string what;
        if (const auto v = s.variable_by_name.find(id->name); v != s.variable_by_name.end())
            what = s.variable(v->second).kind == ir::VariableKind::binary ? "a node" : "a covariate";
        else if (s.param_by_name.count(id->name) || s.declared.count(id->name))
            what = "a weight in a predictor";
        if (!what.empty()) {
            s.diag.error(loc, fmt::format("'{}' is {}; the standard deviation of normal is a positive constant or the name "
                                          "of a learned scale of its own",
                                          id->name, what));
            continue;
        }
        if (s.scale_by_name.emplace(id->name, static_cast<int>(s.scales.size())).second) {
            ScaleInfo info;
            info.name = id->name;
            info.loc = loc;
            s.scales.push_back(std::move(info));
        }
    }
}

bool is_scale_prior(const ast::prior_stmt& ps) {
    return boost::get<ast::half_prior>(&ps.dist.get()) || boost::get<ast::precision_gamma_prior>(&ps.dist.get());
}

// The checked arguments of a learned scale's prior statement.
struct ScaleArgs {
    ir::ScaleKind kind = ir::ScaleKind::half_normal;
    const char* dist = "half_normal";
    bool ok = false;
    double scale = 1, shape = 1, rate = 1;
    std::string text;
};

// One positive finite number from a scale prior's argument, or an error naming it.
std::optional<double> positive_scalar(Lowering& s, const ast::value& v, Location loc, const std::string& what) {
    const std::optional<Literal> lit = s.eval.value(v, loc);
    if (!lit) return std::nullopt;
    if (!lit->shape.empty()) {
        s.diag.error(lit->loc, fmt::format("{} is a {}; give one positive number", what, shape_text(lit->shape)));
        return std::nullopt;
    }
    if (!check_sd(s, *lit, what.c_str())) return std::nullopt;
    return lit->values[0];
}

// half_normal(S), half_cauchy(S): S > 0; precision_gamma(A, B): shape A > 0, rate B > 0.
ScaleArgs evaluate_scale_prior(Lowering& s, const ast::prior_stmt& ps) {
    ScaleArgs a;
    const Location stmt_loc = s.at(ps);
    if (const auto* h = boost::get<ast::half_prior>(&ps.dist.get())) {
        a.kind = h->cauchy ? ir::ScaleKind::half_cauchy : ir::ScaleKind::half_normal;
        a.dist = h->cauchy ? "half_cauchy" : "half_normal";
        const auto scale = positive_scalar(s, h->scale, s.at(*h, stmt_loc), fmt::format("the scale of {}", a.dist));
        a.ok = scale.has_value();
        if (a.ok) {
            a.scale = *scale;
            a.text = fmt::format("{}({})", a.dist, format_number(*scale));
        }
        return a;
    }
    const auto& g = boost::get<ast::precision_gamma_prior>(ps.dist.get());
    const Location loc = s.at(g, stmt_loc);
    a.kind = ir::ScaleKind::precision_gamma;
    a.dist = "precision_gamma";
    const auto shape = positive_scalar(s, g.shape, loc, "the shape of precision_gamma");
    const auto rate = positive_scalar(s, g.rate, loc, "the rate of precision_gamma");
    a.ok = shape && rate;
    if (a.ok) {
        a.shape = *shape;
        a.rate = *rate;
        a.text = fmt::format("precision_gamma({}, {})", format_number(*shape), format_number(*rate));
    }
    return a;
}

// A prior statement on learned scales: each name must be one, with no prior yet.
void scale_priors(Lowering& s, const ast::prior_stmt& ps) {
    const Location stmt_loc = s.at(ps);
    const ScaleArgs args = evaluate_scale_prior(s, ps);
    const char* dist = args.dist;
    for (const auto& id : ps.params) {
        const Location at = s.name_at(id, ps, stmt_loc);
        const auto found = s.scale_by_name.find(id.name);
        if (found == s.scale_by_name.end()) {
            if (s.param_by_name.count(id.name) || s.declared.count(id.name))
                s.diag.error(at, fmt::format("'{}' is a weight, and {} is the prior of a learned scale, a name in a normal "
                                             "prior's standard deviation (`b ~ normal(0, tau); tau ~ half_normal(1);`); give "
                                             "the weight normal, student_t or cauchy",
                                             id.name, dist));
            else if (s.variable_by_name.count(id.name))
                s.diag.error(at, fmt::format("'{}' is a node or covariate, not a learned scale; {} is the prior of a name in "
                                             "a normal prior's standard deviation",
                                             id.name, dist));
            else {
                std::vector<std::string> names;
                for (const auto& sc : s.scales) names.push_back(sc.name);
                const std::string guess = closest_name(id.name, names);
                s.diag.error(at, fmt::format("prior on '{}', which no normal prior uses as its standard deviation{}", id.name,
                                             guess.empty() ? std::string() : fmt::format("; did you mean '{}'?", guess)));
            }
            continue;
        }
        ScaleInfo& sc = s.scales[static_cast<std::size_t>(found->second)];
        if (sc.has_prior) {
            s.diag.error(at, fmt::format("the learned scale '{}' already has a prior on line {}; give it exactly one", id.name,
                                         sc.prior_loc.line));
            continue;
        }
        sc.has_prior = true;
        sc.prior_loc = at;
        if (!args.ok) continue;
        sc.prior_ok = true;
        sc.kind = args.kind;
        sc.scale = args.scale;
        sc.shape = args.shape;
        sc.rate = args.rate;
        sc.prior_text = args.text;
    }
}

}  // namespace

void lower_priors(Lowering& s, const ast::program& program) {
    register_scales(s, program);
    for (const auto& st : program.statements) {
        const auto* ps = boost::get<ast::prior_stmt>(&st.get());
        if (!ps || is_scale_prior(*ps)) continue;
        const Location stmt_loc = s.at(*ps);
        const PriorArgs args = evaluate(s, *ps, stmt_loc);
        for (const auto& id : ps->params) {
            if (const auto sc = s.scale_by_name.find(id.name); sc != s.scale_by_name.end()) {
                s.scales[static_cast<std::size_t>(sc->second)].has_prior = true;  // a wrong one: said here, not "none"
                s.diag.error(s.name_at(id, *ps, stmt_loc),
                             fmt::format("'{}' is a learned scale (the standard deviation of a normal prior on line {}); its "
                                         "prior must be one on the positive numbers: half_normal(S), half_cauchy(S) or "
                                         "precision_gamma(A, B)",
                                         id.name, s.scales[static_cast<std::size_t>(sc->second)].loc.line));
                continue;
            }
            prior_target(s, id, *ps, args);
        }
    }
    for (const auto& st : program.statements)
        if (const auto* ps = boost::get<ast::prior_stmt>(&st.get()); ps && is_scale_prior(*ps)) scale_priors(s, *ps);
    for (const auto& p : s.params)
        if (!p.has_prior)
            s.diag.error(p.loc, fmt::format("parameter '{}' has no prior; every parameter needs one, e.g. '{} ~ normal(0, 1);'",
                                            p.name, p.name));
    for (const auto& sc : s.scales)
        if (!sc.has_prior)
            s.diag.error(sc.loc, fmt::format("the learned scale '{}' has no prior; give it one on the positive numbers, e.g. "
                                             "'{} ~ half_normal(1);'",
                                             sc.name, sc.name));
}

}  // namespace vbn::lang::lowering
