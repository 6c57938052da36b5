// The parser: every construct of the language (docs/design.md section 2) gives the expected tree,
// nodes know where they came from, and bad input of any kind gives located errors, never a
// crash or a hang.
#include "lang/frontend.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

using namespace vbn;

namespace {

// ---------------------------------------------------------------------------------------
// A compact printout of the tree, so a test can state its whole shape in one string.
// Expressions print as [a op b ...], unary as (op x), array literals as {a, b}.

std::string show(const ast::expression& e);

std::string show_number(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

std::string show(const ast::operand& o) {
    struct visitor {
        std::string operator()(const ast::number& n) const { return show_number(n.value); }
        std::string operator()(const ast::x3::forward_ast<ast::unary>& u) const {
            return std::string("(") + u.get().op + show(u.get().operand_) + ")";
        }
        std::string operator()(const ast::x3::forward_ast<ast::call>& c) const {
            return c.get().function.name + "(" + show(c.get().argument.get()) + ")";
        }
        std::string operator()(const ast::x3::forward_ast<ast::expression>& e) const { return show(e.get()); }
    };
    return boost::apply_visitor(visitor{}, o.get());
}

std::string show(const ast::expression& e) {
    if (e.rest.empty()) return show(e.first);
    std::string out = "[" + show(e.first);
    for (const auto& op : e.rest) out += std::string(" ") + op.op + " " + show(op.operand_);
    return out + "]";
}

std::string show(const ast::value& v) {
    struct visitor {
        std::string operator()(const ast::expression& e) const { return show(e); }
        std::string operator()(const ast::x3::forward_ast<ast::array_literal>& a) const {
            std::string out = "{";
            for (std::size_t i = 0; i < a.get().items.size(); ++i) out += (i ? ", " : "") + show(a.get().items[i]);
            return out + "}";
        }
    };
    return boost::apply_visitor(visitor{}, v.get());
}

std::string show(const ast::parent_list& p) {
    std::string out = p.bracketed ? "[" : "";
    for (std::size_t i = 0; i < p.items.size(); ++i) {
        out += i ? ", " : "";
        for (std::size_t f = 0; f < p.items[i].factors.size(); ++f) {
            const auto& r = p.items[i].factors[f];
            out += (f ? " * " : "") + r.name.name;
            if (r.index) out += "[" + std::to_string(*r.index) + "]";
        }
    }
    return out + (p.bracketed ? "]" : "");
}

std::string show(const ast::term& t) {
    struct visitor {
        std::string operator()(const ast::identifier& i) const { return "param " + i.name; }
        std::string operator()(const ast::expression& e) const { return "const " + show(e); }
        std::string operator()(const ast::x3::forward_ast<ast::array_literal>& a) const {
            return "consts " + show(ast::value(a));
        }
    };
    std::string out = std::string("(") + t.sign + " " + boost::apply_visitor(visitor{}, t.coef.get());
    if (!t.middle.name.empty()) out += " * middle " + t.middle.name;
    if (t.parents) out += " * " + show(*t.parents);
    return out + ")";
}

// The SD of normal: a constant, or `scale NAME` for a learned scale.
std::string show(const ast::sd_arg& sd) {
    if (const auto* name = boost::get<ast::identifier>(&sd.get())) return "scale " + name->name;
    return show(boost::get<ast::value>(sd.get()));
}

std::string show(const ast::statement& s) {
    struct dist_visitor {
        std::string operator()(const ast::bernoulli_dist& b) const { return "bernoulli " + show(b.p); }
        std::string operator()(const ast::logistic_dist& l) const {
            std::string out = "logistic";
            for (const auto& t : l.linear.terms) out += " " + show(t);
            return out;
        }
        std::string operator()(const ast::normal_prior& n) const {
            return "normal(" + show(n.mean) + ", " + show(n.sd) + ")";
        }
        std::string operator()(const ast::mvnormal_prior& n) const {
            return "mvnormal(" + show(n.mean) + ", " + show(n.cov) + ")";
        }
        std::string operator()(const ast::student_t_prior& t) const {
            return "student_t(" + show(t.nu) + ", " + show(t.mean) + ", " + show(t.scale) + ")";
        }
        std::string operator()(const ast::cauchy_prior& c) const {
            return "cauchy(" + show(c.mean) + ", " + show(c.scale) + ")";
        }
        std::string operator()(const ast::half_prior& h) const {
            return std::string(h.cauchy ? "half_cauchy(" : "half_normal(") + show(h.scale) + ")";
        }
        std::string operator()(const ast::precision_gamma_prior& g) const {
            return "precision_gamma(" + show(g.shape) + ", " + show(g.rate) + ")";
        }
    };
    struct visitor {
        std::string operator()(const ast::node_decl& n) const {
            std::string out = "node " + n.name.name;
            if (n.size) out += "[" + std::to_string(*n.size) + "]";
            if (n.hidden) out += " hidden";
            return out + " ~ " + boost::apply_visitor(dist_visitor{}, n.dist.get());
        }
        std::string operator()(const ast::covariate_decl& c) const {
            return "covariate " + c.name.name + (c.size ? "[" + std::to_string(*c.size) + "]" : "");
        }
        std::string operator()(const ast::param_decl& d) const {
            std::string out = "param " + d.name.name;
            for (std::size_t k = 0; k < d.shape.size(); ++k) out += (k ? "," : "[") + std::to_string(d.shape[k]);
            return out + (d.shape.empty() ? "" : "]");
        }
        std::string operator()(const ast::prior_stmt& p) const {
            std::string out = "prior";
            for (const auto& n : p.params) out += " " + n.name;
            return out + " ~ " + boost::apply_visitor(dist_visitor{}, p.dist.get());
        }
    };
    return boost::apply_visitor(visitor{}, s.get());
}

// ---------------------------------------------------------------------------------------
// An evaluator of constant expressions, independent of the lowering's, to check that the
// tree the grammar builds has the usual precedence.

double eval(const ast::expression& e);

double eval(const ast::operand& o) {
    struct visitor {
        double operator()(const ast::number& n) const { return n.value; }
        double operator()(const ast::x3::forward_ast<ast::unary>& u) const {
            const double x = eval(u.get().operand_);
            return u.get().op == '-' ? -x : x;
        }
        double operator()(const ast::x3::forward_ast<ast::call>& c) const {
            const double x = eval(c.get().argument.get());
            const std::string& f = c.get().function.name;
            if (f == "sqrt") return std::sqrt(x);
            if (f == "exp") return std::exp(x);
            if (f == "log") return std::log(x);
            if (f == "logit") return std::log(x / (1 - x));
            if (f == "inv_logit") return 1 / (1 + std::exp(-x));
            return NAN;
        }
        double operator()(const ast::x3::forward_ast<ast::expression>& e) const { return eval(e.get()); }
    };
    return boost::apply_visitor(visitor{}, o.get());
}

double eval(const ast::expression& e) {
    double value = eval(e.first);
    for (const auto& op : e.rest) {
        const double x = eval(op.operand_);
        switch (op.op) {
            case '+': value += x; break;
            case '-': value -= x; break;
            case '*': value *= x; break;
            case '/': value /= x; break;
            default: return NAN;
        }
    }
    return value;
}

// ---------------------------------------------------------------------------------------

struct parsed {
    lang::Source source;
    lang::Diagnostics diag{source};
    lang::SourceMap map{source};
    ast::program program;
    bool ok = false;

    explicit parsed(std::string text) : source("t.vbn", std::move(text)) {
        ok = lang::parse(source, program, map, diag);
    }
    parsed(const parsed&) = delete;
    parsed& operator=(const parsed&) = delete;

    std::vector<std::string> statements() const {
        std::vector<std::string> out;
        for (const auto& s : program.statements) out.push_back(show(s));
        return out;
    }
    std::string errors() const { return diag.format(); }
};

// The statements of a model that must parse without errors.
std::vector<std::string> statements_of(const std::string& text) {
    const parsed p(text);
    INFO(p.errors());
    CHECK(p.ok);
    CHECK(p.diag.error_count() == 0);
    return p.statements();
}

// The one statement of a model that must parse.
std::string statement_of(const std::string& text) {
    const auto s = statements_of(text);
    REQUIRE(s.size() == 1);
    return s.front();
}

// The probability of `node a ~ bernoulli(EXPR);`, evaluated.
double value_of(const std::string& expr) {
    const parsed p("node a ~ bernoulli(" + expr + ");");
    INFO(expr, "\n", p.errors());
    REQUIRE(p.ok);
    REQUIRE(p.program.statements.size() == 1);
    const auto& n = boost::get<ast::node_decl>(p.program.statements[0].get());
    return eval(boost::get<ast::bernoulli_dist>(n.dist.get()).p);
}

const ast::node_decl& node(const parsed& p, std::size_t i) {
    REQUIRE(i < p.program.statements.size());
    return boost::get<ast::node_decl>(p.program.statements[i].get());
}

const std::vector<ast::term>& terms(const parsed& p, std::size_t i) {
    return boost::get<ast::logistic_dist>(node(p, i).dist.get()).linear.terms;
}

std::string at(lang::Location l) { return std::to_string(l.line) + ":" + std::to_string(l.column); }

// Every diagnostic has a place in the file and a message in words.
void check_well_formed(const lang::Diagnostics& diag) {
    for (const auto& d : diag.items()) {
        CHECK(d.message != "syntax error");  // the fallback of a grammar point without words
        CHECK(d.message.find("boost") == std::string::npos);
        if (d.message.rfind("too many syntax errors", 0) != 0) {
            CHECK(d.location.line >= 1);
            CHECK(d.location.column >= 1);
        }
    }
}

// Parses anything; must report errors (or none) without crashing, and quickly.
lang::Diagnostics errors_of(const std::string& text) {
    const lang::Source source("t.vbn", text);
    lang::Diagnostics diag(source);
    lang::SourceMap map(source);
    ast::program program;
    const bool ok = lang::parse(source, program, map, diag);
    CHECK(ok == (diag.error_count() == 0));
    check_well_formed(diag);
    return diag;
}

std::vector<std::string> messages_of(const std::string& text) {
    const lang::Source source("t.vbn", text);
    lang::Diagnostics diag(source);
    lang::SourceMap map(source);
    ast::program program;
    CHECK(!lang::parse(source, program, map, diag));
    check_well_formed(diag);
    std::vector<std::string> out;
    for (const auto& d : diag.items())
        out.push_back(std::to_string(d.location.line) + ":" + std::to_string(d.location.column) + " " + d.message);
    return out;
}

// The first error of a model that must have one.
std::string first_message(const std::string& text) {
    const auto m = messages_of(text);
    REQUIRE(!m.empty());
    return m.front();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Statements

TEST_CASE("node declarations: scalar, array, hidden, each distribution") {
    CHECK(statement_of("node o ~ bernoulli(0.5);") == "node o ~ bernoulli 0.5");
    CHECK(statement_of("node h hidden ~ bernoulli(0.6);") == "node h hidden ~ bernoulli 0.6");
    CHECK(statement_of("node h[3] hidden ~ bernoulli(0.5);") == "node h[3] hidden ~ bernoulli 0.5");
    CHECK(statement_of("node v[8] ~ logistic(b + W * h);") == "node v[8] ~ logistic (+ param b) (+ param W * h)");
    CHECK(statement_of("node\ty\n~\nlogistic ( w*h ) ;") == "node y ~ logistic (+ param w * h)");
}

TEST_CASE("covariate declarations, scalar and array") {
    CHECK(statements_of("covariate dist; covariate x[4];") ==
          std::vector<std::string>{"covariate dist", "covariate x[4]"});
}

TEST_CASE("priors: normal, several parameters, mvnormal with vector and matrix literals") {
    CHECK(statement_of("w ~ normal(3, sqrt(10));") == "prior w ~ normal(3, sqrt(10))");
    CHECK(statement_of("a, b , c ~ normal(0, 1);") == "prior a b c ~ normal(0, 1)");
    CHECK(statement_of("w ~ normal([0, 1], [1, 2 * 2]);") == "prior w ~ normal({0, 1}, {1, [2 * 2]})");
    CHECK(statement_of("w ~ mvnormal([0, 0], [[1, 0.5], [0.5, 1]]);") ==
          "prior w ~ mvnormal({0, 0}, {{1, 0.5}, {0.5, 1}})");
    CHECK(statement_of("w ~ mvnormal([-1, +1], [[1, 0], [0, sqrt(4)]]);") ==
          "prior w ~ mvnormal({(-1), (+1)}, {{1, 0}, {0, sqrt(4)}})");
}

TEST_CASE("priors: a learned scale in normal's standard deviation, and its half_normal or half_cauchy prior") {
    CHECK(statement_of("b ~ normal(0, tau);") == "prior b ~ normal(0, scale tau)");
    CHECK(statement_of("b, c ~ normal([0, 1], sigma );") == "prior b c ~ normal({0, 1}, scale sigma)");
    CHECK(statement_of("tau ~ half_normal(2.5);") == "prior tau ~ half_normal(2.5)");
    CHECK(statement_of("tau, s ~ half_cauchy(sqrt(4));") == "prior tau s ~ half_cauchy(sqrt(4))");
    CHECK(statement_of("tau ~ precision_gamma(1, 0.5);") == "prior tau ~ precision_gamma(1, 0.5)");
    CHECK(messages_of("tau ~ precision_gamma(1);") ==
          std::vector<std::string>{"1:24 expected ',' and the Gamma's rate after its shape"});
    // Only a name alone is a scale: `2 * tau` is not, and a name before '(' is a function.
    CHECK(messages_of("b ~ normal(0, 2 * tau);") ==
          std::vector<std::string>{"1:19 expected a number, '(' or a function like sqrt(...) after '*'"});
    CHECK(messages_of("tau ~ half_normal();") ==
          std::vector<std::string>{"1:19 expected the scale of the prior, a positive constant expression"});
    CHECK(messages_of("tau ~ half_cauchy(1;") ==
          std::vector<std::string>{"1:20 expected ')' to close the scale's prior"});
}

TEST_CASE("the multimodal model of docs/design.md parses statement by statement") {
    CHECK(statements_of("// examples/paper/multimodal.vbn\n"
                        "node h hidden ~ bernoulli(0.6);          // latent cause\n"
                        "node o        ~ bernoulli(0.5);\n"
                        "node y        ~ logistic(2 + w * [h, o]);\n"
                        "\n"
                        "w ~ normal(3, sqrt(10));\n") ==
          std::vector<std::string>{"node h hidden ~ bernoulli 0.6", "node o ~ bernoulli 0.5",
                                   "node y ~ logistic (+ const 2) (+ param w * [h, o])",
                                   "prior w ~ normal(3, sqrt(10))"});
}

TEST_CASE("an empty model, or only comments and blanks, is not a syntax error") {
    CHECK(statements_of("").empty());
    CHECK(statements_of(" \t\r\n\f\v").empty());
    CHECK(statements_of("// nothing\n/* at\nall */").empty());
}

TEST_CASE("comments of both kinds go anywhere blanks go") {
    CHECK(statement_of("/*a*/node/**/y/*b*/~ // c\n logistic(/* x */ 2 /* y */ + w * /* z */ h // ;\n);") ==
          "node y ~ logistic (+ const 2) (+ param w * h)");
    CHECK(statement_of("node y ~ bernoulli(0.5); /* ; */ // ;") == "node y ~ bernoulli 0.5");
    // `/*/` does not close the comment it opens
    CHECK(statement_of("/*/ node x ~ bernoulli(0.1); */ node y ~ bernoulli(0.5);") == "node y ~ bernoulli 0.5");
    // Windows line ends
    CHECK(statements_of("node a ~ bernoulli(0.5); // x\r\nnode b ~ bernoulli(0.5);\r\n").size() == 2);
}

TEST_CASE("reserved words are matched whole, so names may start with them") {
    CHECK(statement_of("node nodes ~ bernoulli(0.5);") == "node nodes ~ bernoulli 0.5");
    CHECK(statement_of("node hiddenness ~ logistic(logits + normal_w * covariates);") ==
          "node hiddenness ~ logistic (+ param logits) (+ param normal_w * covariates)");
    CHECK(statement_of("_x1, exp2, login ~ normal(0, 1);") == "prior _x1 exp2 login ~ normal(0, 1)");
}

// ---------------------------------------------------------------------------------------
// Constant expressions

TEST_CASE("numeric literals: integers, decimals, leading and trailing point, exponents") {
    CHECK(value_of("12") == 12);
    CHECK(value_of("0.25") == 0.25);
    CHECK(value_of(".5") == 0.5);
    CHECK(value_of("2.") == 2);
    CHECK(value_of("1e-3") == 1e-3);
    CHECK(value_of("2.5E+2") == 250);
    CHECK(value_of("1e308") == 1e308);
    CHECK(value_of("4.9e-324") > 0);  // the smallest subnormal is still a number
}

TEST_CASE("operators have the usual precedence and associate to the left") {
    CHECK(value_of("1 + 2 * 3") == 7);
    CHECK(value_of("(1 + 2) * 3") == 9);
    CHECK(value_of("2 - 3 - 4") == -5);
    CHECK(value_of("8 / 4 / 2") == 1);
    CHECK(value_of("2 * 3 / 4 * 2") == 3);
    CHECK(value_of("1 - 2 * 3 + 8 / 4") == -3);
    CHECK(value_of("-2 * -3") == 6);
    CHECK(value_of("- - 2") == 2);
    CHECK(value_of("+2 - +1") == 1);
    CHECK(value_of("-(1 + 2) * 2") == -6);
    CHECK(value_of("((((1))))") == 1);
}

namespace {

// Random constant expressions written by the grammar of section 2, with their values
// computed along the way in the order the grammar prescribes (left to right within a sum
// or a product); blanks and comments are sprinkled between tokens.
struct expression_writer {
    std::uint64_t state;
    std::string text;

    std::uint64_t next() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    }
    int pick(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
    void token(const std::string& t) {
        static const char* blanks[] = {"", "", " ", "  ", "\n", "\t", "/* c */", "// c\n"};
        // after '/' a comment would read as "//" or "/*", as in C
        text += blanks[pick(!text.empty() && text.back() == '/' ? 6 : 8)];
        text += t;
    }

    double number() {
        static const std::pair<const char*, double> literals[] = {
            {"1", 1}, {"2", 2}, {"3", 3}, {"0.5", 0.5}, {".25", 0.25}, {"4.", 4}, {"1e-1", 1e-1}, {"2.5E+1", 25}};
        const auto& [t, v] = literals[pick(8)];
        token(t);
        return v;
    }
    double factor(int depth) {
        switch (depth > 0 ? pick(6) : 0) {
            case 1: token("-"); return -factor(depth - 1);
            case 2: token("+"); return +factor(depth - 1);
            case 3: {
                token("(");
                const double v = sum(depth - 1);
                token(")");
                return v;
            }
            case 4: {
                static const char* functions[] = {"sqrt", "exp", "log", "logit", "inv_logit"};
                const int f = pick(5);
                token(functions[f]);
                token("(");
                const double x = sum(depth - 1);
                token(")");
                switch (f) {
                    case 0: return std::sqrt(x);
                    case 1: return std::exp(x);
                    case 2: return std::log(x);
                    case 3: return std::log(x / (1 - x));
                    default: return 1 / (1 + std::exp(-x));
                }
            }
            default: return number();
        }
    }
    double product(int depth) {
        double v = factor(depth);
        for (int n = pick(3); n > 0; --n) {
            const bool times = pick(2) == 0;
            token(times ? "*" : "/");
            const double x = factor(depth);
            v = times ? v * x : v / x;
        }
        return v;
    }
    double sum(int depth) {
        double v = product(depth);
        for (int n = pick(3); n > 0; --n) {
            const bool plus = pick(2) == 0;
            token(plus ? "+" : "-");
            const double x = product(depth);
            v = plus ? v + x : v - x;
        }
        return v;
    }
};

}  // namespace

TEST_CASE("random expressions evaluate, through the tree, to the value their grammar gives") {
    expression_writer writer{0x2545F4914F6CDD1Dull, {}};
    for (int i = 0; i < 500; ++i) {
        writer.text.clear();
        const double expected = writer.sum(4);
        const double actual = value_of(writer.text);
        INFO(writer.text);
        CHECK((actual == expected || (std::isnan(actual) && std::isnan(expected))));
    }
}

TEST_CASE("the tree of a constant expression: sums over products, one-factor products unwrapped") {
    CHECK(statement_of("node a ~ bernoulli(1 + 2 * 3);") == "node a ~ bernoulli [1 + [2 * 3]]");
    CHECK(statement_of("node a ~ bernoulli(2 * 3);") == "node a ~ bernoulli [2 * 3]");
    CHECK(statement_of("node a ~ bernoulli((1 + 2));") == "node a ~ bernoulli [1 + 2]");
    CHECK(statement_of("node a ~ bernoulli(-0.5);") == "node a ~ bernoulli (-0.5)");
}

TEST_CASE("the functions sqrt exp log logit inv_logit") {
    CHECK(value_of("sqrt(16)") == 4);
    CHECK(value_of("exp(0)") == 1);
    CHECK(value_of("log(1)") == 0);
    CHECK(value_of("logit(0.5)") == 0);
    CHECK(value_of("inv_logit(0)") == 0.5);
    CHECK(value_of("inv_logit(logit(0.25))") == doctest::Approx(0.25));
    CHECK(value_of("2 * sqrt(exp(log(4))) + 1") == doctest::Approx(5));
    CHECK(value_of("sqrt (9)") == 3);
}

// ---------------------------------------------------------------------------------------
// Predictors

TEST_CASE("in a predictor '+' separates terms: 2 + 3 * h is an offset and a fixed weight") {
    const parsed p("node y ~ logistic(2 + 3 * h);");
    REQUIRE(p.ok);
    const auto& t = terms(p, 0);
    REQUIRE(t.size() == 2);
    CHECK(show(t[0]) == "(+ const 2)");
    CHECK(!t[0].parents);
    CHECK(show(t[1]) == "(+ const 3 * h)");
}

TEST_CASE("a product of constants before '*' is the weight: 2 * 3 * h is the weight 6 on h") {
    const parsed p("node y ~ logistic(2 * 3 * h);");
    REQUIRE(p.ok);
    const auto& t = terms(p, 0);
    REQUIRE(t.size() == 1);
    REQUIRE(t[0].parents.has_value());
    CHECK(show(*t[0].parents) == "h");
    CHECK(eval(boost::get<ast::expression>(t[0].coef.get())) == 6);
    // and a product that is not followed by parents is a constant offset
    CHECK(statement_of("node y ~ logistic(2 * 3 / 4);") == "node y ~ logistic (+ const [2 * 3 / 4])");
}

TEST_CASE("every kind of term and sign") {
    CHECK(statement_of("node y ~ logistic(b0 + b1 * dist - 2 * h + 0.5 / 2 * v[2] - w * [h, o, v[3]] + -1.5);") ==
          "node y ~ logistic (+ param b0) (+ param b1 * dist) (- const 2 * h) (+ const [0.5 / 2] * v[2]) "
          "(- param w * [h, o, v[3]]) (+ const (-1.5))");
    CHECK(statement_of("node y ~ logistic(-w * h);") == "node y ~ logistic (- param w * h)");
    CHECK(statement_of("node y ~ logistic(+b);") == "node y ~ logistic (+ param b)");
    CHECK(statement_of("node y ~ logistic((1 + 2) * h + sqrt(2) * [a] + exp(1));") ==
          "node y ~ logistic (+ const [1 + 2] * h) (+ const sqrt(2) * [a]) (+ const exp(1))");
}

TEST_CASE("parents: a name, an element, a bracketed list of both") {
    const parsed p("node y ~ logistic(w * h + u * v[2] + z * [h, v[1], o]);");
    REQUIRE(p.ok);
    const auto& t = terms(p, 0);
    REQUIRE(t.size() == 3);
    CHECK_FALSE(t[0].parents->bracketed);
    CHECK(t[0].parents->items.size() == 1);
    CHECK_FALSE(t[0].parents->items[0].factors[0].index.has_value());
    REQUIRE(t[1].parents->items[0].factors[0].index.has_value());
    CHECK(*t[1].parents->items[0].factors[0].index == 2);
    CHECK(t[2].parents->bracketed);
    CHECK(show(*t[2].parents) == "[h, v[1], o]");
}

TEST_CASE("products of parents, scaled terms and vectors of fixed weights") {
    CHECK(statement_of("node y ~ logistic(w * [h, o, h * o]);") == "node y ~ logistic (+ param w * [h, o, h * o])");
    CHECK(statement_of("node y ~ logistic(w * h * v[2] * x);") ==
          "node y ~ logistic (+ param w * middle h * v[2] * x)");
    CHECK(statement_of("node y ~ logistic(w * v[2] * o);") == "node y ~ logistic (+ param w * v[2] * o)");
    CHECK(statement_of("node y ~ logistic(2 * w * h - 0.5 * w2 * [a, b]);") ==
          "node y ~ logistic (+ const 2 * middle w * h) (- const 0.5 * middle w2 * [a, b])");
    CHECK(statement_of("node y ~ logistic([1, 2] * [h, o]);") == "node y ~ logistic (+ consts {1, 2} * [h, o])");
    CHECK(statement_of("node y ~ logistic(0.5 * h * o + b);") ==
          "node y ~ logistic (+ const 0.5 * middle h * o) (+ param b)");
    // A name followed by no further '*' is the parents, not a middle name.
    CHECK(statement_of("node y ~ logistic(w * h);") == "node y ~ logistic (+ param w * h)");
    CHECK(statement_of("node y ~ logistic(w * v * h + u * o - 2 * z);") ==
          "node y ~ logistic (+ param w * middle v * h) (+ param u * o) (- const 2 * z)");
}

// ---------------------------------------------------------------------------------------
// Source positions

TEST_CASE("nodes of the tree map back to their line and column") {
    const parsed p("node h hidden ~ bernoulli(0.6);\n"
                   "  node y ~ logistic(2 + w * [h, o]);\n"
                   "w, u ~ normal(3, sqrt(10));\n");
    REQUIRE(p.ok);
    REQUIRE(p.program.statements.size() == 3);

    const auto& h = node(p, 0);
    CHECK(p.map.where(h).line == 1);
    CHECK(p.map.where(h).column == 1);
    CHECK(p.map.where(h.name).column == 6);
    const auto& b = boost::get<ast::bernoulli_dist>(h.dist.get());
    CHECK(p.map.where(b).column == 17);
    CHECK(p.map.where(b.p).column == 27);

    const auto& y = node(p, 1);
    CHECK(p.map.where(y).line == 2);
    CHECK(p.map.where(y).column == 3);
    CHECK(p.map.where(y.name).column == 8);
    const auto& t = terms(p, 1);
    CHECK(p.map.where(t[0]).column == 21);
    CHECK(p.map.where(t[1]).column == 23);  // a term with its sign starts at the sign
    const auto& w = boost::get<ast::identifier>(t[1].coef.get());
    CHECK(at(p.map.where(w)) == "2:25");
    CHECK(p.map.where(*t[1].parents).column == 29);
    CHECK(p.map.where(t[1].parents->items[1]).column == 33);
    CHECK(p.map.where(t[1].parents->items[1].factors[0].name).column == 33);

    const auto& prior = boost::get<ast::prior_stmt>(p.program.statements[2].get());
    CHECK(at(p.map.where(prior.params[1])) == "3:4");
    const auto& sd = boost::get<ast::expression>(
        boost::get<ast::value>(boost::get<ast::normal_prior>(prior.dist.get()).sd.get()).get());
    CHECK(at(p.map.where(sd)) == "3:18");
}

TEST_CASE("spans are byte ranges of the text: a statement runs to its ';', a name over its letters") {
    const std::string text = "/* c */ node alpha[12] ~ bernoulli(0.5) ;";
    const parsed p(text);
    REQUIRE(p.ok);
    const auto& a = node(p, 0);
    const auto [begin, end] = p.map.span(a);
    CHECK(text.substr(begin, end - begin) == "node alpha[12] ~ bernoulli(0.5) ;");
    const auto [nb, ne] = p.map.span(a.name);
    CHECK(text.substr(nb, ne - nb) == "alpha");
}

TEST_CASE("a node that was never parsed has no place") {
    const lang::Source source("t.vbn", "");
    const lang::SourceMap map(source);
    const ast::identifier untagged;
    CHECK(at(map.where(untagged)) == "0:0");
    CHECK(map.span(untagged) == std::pair<std::size_t, std::size_t>{0, 0});
}

// ---------------------------------------------------------------------------------------
// Syntax errors

TEST_CASE("syntax errors say what was expected, where") {
    CHECK(messages_of("node a ~ bernoulli(0.5)\n") ==
          std::vector<std::string>{"1:24 expected ';' at the end of the statement"});
    CHECK(messages_of("node y ~ logistic(2 + w * );") ==
          std::vector<std::string>{
              "1:27 expected a parent (a node or covariate name, or a list like [a, b]) after '*'"});
    CHECK(messages_of("node y ~ poisson(3);") ==
          std::vector<std::string>{"1:10 unknown distribution 'poisson'; expected bernoulli(p) or logistic(...)"});
    CHECK(messages_of("node y ~ 3;") ==
          std::vector<std::string>{"1:10 expected a distribution: bernoulli(p) or logistic(...)"});
    CHECK(messages_of("w ~ gamma(2, 1);") ==
          std::vector<std::string>{"1:5 unknown prior 'gamma'; expected normal(mean, sd), mvnormal(mean, cov), "
                                   "student_t(nu, mu, s), cauchy(mu, s), or for a learned scale half_normal(s), "
                                   "half_cauchy(s) or precision_gamma(a, b)"});
    CHECK(messages_of("@ node y ~ bernoulli(0.5);") ==
          std::vector<std::string>{
              "1:1 expected a statement: node, covariate or a prior `name ~ normal(...)`"});
    CHECK(messages_of("node logit ~ bernoulli(0.5);") ==
          std::vector<std::string>{"1:6 'logit' is a reserved word and cannot be used as a name"});
    CHECK(messages_of("normal ~ normal(0, 1);") ==
          std::vector<std::string>{"1:1 'normal' is a reserved word and cannot be used as a name"});
    CHECK(messages_of("node a ~ bernoulli(foo(1));") ==
          std::vector<std::string>{
              "1:20 unknown function 'foo'; the functions are sqrt, exp, log, logit and inv_logit"});
    CHECK(messages_of("node a[2.5] ~ bernoulli(0.5);") ==
          std::vector<std::string>{"1:8 expected the array size as a whole number, e.g. [3]"});
    CHECK(messages_of("covariate x ~ normal(0, 1);") ==
          std::vector<std::string>{
              "1:13 a covariate has no distribution: declare it as `covariate x;` and use it as a parent"});
}

TEST_CASE("an error at the end of the file points just after the last token") {
    CHECK(messages_of("node a ~ bernoulli(0.5\n\n") ==
          std::vector<std::string>{"1:23 expected ')' to close bernoulli(...)"});
}

TEST_CASE("every syntax error is reported, and the statements between them still parse") {
    const parsed p("node a ~ bernoulli(;\n"
                   "node b ~ bernoulli(0.5);\n"
                   "node c ~ logistic(w * );\n"
                   "w ~ normal(0, 1);\n"
                   "oops\n");
    CHECK_FALSE(p.ok);
    REQUIRE(p.diag.error_count() == 3);
    CHECK(at(p.diag.items()[0].location) == "1:20");
    CHECK(at(p.diag.items()[1].location) == "3:23");
    CHECK(at(p.diag.items()[2].location) == "5:1");
    CHECK(p.statements() == std::vector<std::string>{"node b ~ bernoulli 0.5", "prior w ~ normal(0, 1)"});
}

TEST_CASE("recovery skips to the next ';' outside comments") {
    const parsed p("node a ~ bernoulli(( /* ; */ // ;\n ;\nnode b ~ bernoulli(0.5);");
    CHECK(p.diag.error_count() == 1);
    CHECK(p.statements() == std::vector<std::string>{"node b ~ bernoulli 0.5"});
}

TEST_CASE("an unterminated block comment is an error at its start, after the errors before it") {
    CHECK(messages_of("node a ~ bernoulli(0.5)\n/* node b ~ bernoulli(0.5);\n") ==
          std::vector<std::string>{"1:24 expected ';' at the end of the statement",
                                   "2:1 unterminated comment: '/*' has no closing '*/'"});
    // a '/*' inside a line comment opens nothing
    CHECK(statements_of("// /*\nnode a ~ bernoulli(0.5);").size() == 1);
}

TEST_CASE("numbers a double cannot hold and sizes an int cannot hold are errors, not inf or overflow") {
    CHECK(messages_of("node a ~ bernoulli(1e999);") ==
          std::vector<std::string>{
              "1:20 number out of range: '1e999' is too large for a double (the largest is about 1.8e308)"});
    for (const char* tiny : {"1e-400", "0.00001e-320", "1000e-330"})
        CHECK(first_message(std::string("node a ~ bernoulli(") + tiny + ");").find("too close to zero") !=
              std::string::npos);
    CHECK(first_message("node a ~ bernoulli(0." + std::string(400, '0') + "1);").find("too close to zero") !=
          std::string::npos);
    CHECK(first_message("node a ~ bernoulli(1" + std::string(400, '0') + ");").find("too large") !=
          std::string::npos);
    CHECK(first_message("node a ~ bernoulli(0.1e310);").find("too large") != std::string::npos);
    CHECK(messages_of("node a[2147483648] ~ bernoulli(0.5);") ==
          std::vector<std::string>{"1:8 number out of range: '2147483648' is too large (at most 2147483647)"});
    CHECK(statement_of("node a[2147483647] ~ bernoulli(0.5);") == "node a[2147483647] ~ bernoulli 0.5");
    CHECK(messages_of("node y ~ logistic(w * v[99999999999999999999]);").size() == 1);
}

TEST_CASE("nesting deeper than the limit is an error, not a stack overflow") {
    const int deep = 100000;
    const std::string parens = std::string(deep, '(') + "0.5" + std::string(deep, ')');
    for (const std::string& text :
         {"node a ~ bernoulli(" + parens + ");", "node a ~ bernoulli(" + std::string(deep, '-') + "1);",
          "w ~ normal(" + std::string(deep, '[') + "1" + std::string(deep, ']') + ", 1);",
          "node y ~ logistic(2 * " + parens + " * h);"}) {
        const auto m = messages_of(text + "\nnode ok ~ bernoulli(0.5);");
        REQUIRE(m.size() == 1);
        CHECK(m[0].find("nested too deeply") != std::string::npos);
    }
    std::string calls = "node a ~ bernoulli(";
    for (int i = 0; i < deep; ++i) calls += "sqrt(";
    calls += "1" + std::string(deep, ')') + ");";
    CHECK(messages_of(calls).size() == 1);
    // while fifty levels are fine
    CHECK(value_of(std::string(50, '(') + "0.5" + std::string(50, ')')) == 0.5);
}

TEST_CASE("garbage gives located errors and never a crash") {
    // binary noise from a fixed generator, with NUL bytes and every byte value
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    std::string noise;
    for (int i = 0; i < 20000; ++i) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        noise += static_cast<char>(state & 0xFF);
    }
    CHECK(errors_of(noise).error_count() >= 1);
    std::string all_bytes;
    for (int c = 0; c < 256; ++c) all_bytes += static_cast<char>(c);
    CHECK(errors_of(all_bytes).error_count() >= 1);
    CHECK(errors_of(std::string("node a\0 ~ bernoulli(0.5);", 25)).error_count() == 1);
    CHECK(errors_of(std::string(1000, '\0')).error_count() == 1);
    // truncations of a valid model at every byte: errors or success, each well formed
    const std::string model = "node h[3] hidden ~ bernoulli(0.5);\nnode v ~ logistic(b + W * [h, x[2]] - 2 * 3);\n"
                              "covariate x[2];\nb, W ~ mvnormal([0, 1e-3], [[1, .5], [.5, 1]]); /* end */";
    for (std::size_t n = 0; n <= model.size(); ++n) errors_of(model.substr(0, n));
    // and the same with one byte replaced by each troublesome character
    for (std::size_t n = 0; n < model.size(); ++n)
        for (const char c : std::string("(;[*/~\0\xff", 8)) {
            std::string bad = model;
            bad[n] = c;
            errors_of(bad);
        }
}

TEST_CASE("megabyte inputs parse in one pass") {
    std::string sum = "node a ~ bernoulli(1";
    for (int i = 0; i < 200000; ++i) sum += "+1";
    CHECK(value_of(sum.substr(19)) == 200001);
    CHECK(errors_of("node " + std::string(1 << 20, 'a') + " ~ bernoulli(0.5);").error_count() == 0);
    CHECK(errors_of("node a ~" + std::string(1 << 20, ' ') + "bernoulli(0.5);").error_count() == 0);
    CHECK(errors_of("node a ~ bernoulli(" + std::string(1 << 20, '(')).error_count() == 1);
    CHECK(errors_of(std::string(1 << 20, ';')).error_count() == 51);  // 50, then "too many"
}

TEST_CASE("a file that is not a model stops after a bounded number of errors") {
    std::string text;
    for (int i = 0; i < 200; ++i) text += "x;\n";
    const auto diag = errors_of(text);
    REQUIRE(diag.error_count() == 51);
    CHECK(diag.items().back().message == "too many syntax errors; stopped after 50");
    CHECK(diag.items().back().location.line == 0);
}
