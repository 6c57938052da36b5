// The abstract syntax tree of a .vbn model, as the parser builds it.
//
// Every node that a diagnostic may point at derives from x3::position_tagged, so the
// error handler can map it back to its place in the source (line and column).
// The tree is a faithful picture of the text: names are not resolved, constants are not
// evaluated, shapes are not inferred. That is the job of lowering (lower.hpp).
#pragma once

#include <boost/optional.hpp>
#include <boost/spirit/home/x3/support/ast/position_tagged.hpp>
#include <boost/spirit/home/x3/support/ast/variant.hpp>

#include <string>
#include <vector>

namespace vbn::ast {

namespace x3 = boost::spirit::x3;

struct identifier : x3::position_tagged {
    std::string name;
};

// ---------------------------------------------------------------------------------------
// Constant expressions: numbers, unary minus, + - * /, parentheses and the functions
// sqrt exp log logit inv_logit. They appear as probabilities, prior arguments, fixed
// offsets and fixed weights.

struct number : x3::position_tagged {
    double value = 0;
};

struct unary;
struct call;
struct expression;

struct operand : x3::variant<number, x3::forward_ast<unary>, x3::forward_ast<call>,
                             x3::forward_ast<expression>> {
    using base_type::base_type;
    using base_type::operator=;
};

// '-' operand (also '+' operand, kept for symmetry)
struct unary : x3::position_tagged {
    char op = '-';
    operand operand_;
};

// name '(' expression ')', name one of sqrt exp log logit inv_logit
struct call : x3::position_tagged {
    identifier function;
    x3::forward_ast<expression> argument;
};

// one binary operation applied to the running value: op is one of + - * /
struct operation : x3::position_tagged {
    char op = '+';
    operand operand_;
};

// first (op operand)* with the usual precedence already resolved by the grammar:
// an expression is a chain of '+'/'-' over products, a product a chain of '*'/'/'.
struct expression : x3::position_tagged {
    operand first;
    std::vector<operation> rest;
};

// ---------------------------------------------------------------------------------------
// Vector and matrix literals for priors: [1, 2] and [[1, 0.5], [0.5, 1]].

struct array_literal;

struct value : x3::variant<expression, x3::forward_ast<array_literal>> {
    using base_type::base_type;
    using base_type::operator=;
};

struct array_literal : x3::position_tagged {
    std::vector<value> items;
};

// ---------------------------------------------------------------------------------------
// Predictors of logistic nodes.

// A parent reference: a node or covariate, whole (`h`) or one element (`v[2]`, 1-based).
struct parent_ref : x3::position_tagged {
    identifier name;
    boost::optional<int> index;
};

// One entry of a parent list: a parent, or a product of parents `h * o * v[2]` whose value
// is the product of the factors' values (an interaction).
struct parent_product : x3::position_tagged {
    std::vector<parent_ref> factors;
};

// `h`, `v[2]`, `h * o` or a bracketed list `[h, o, h * o]`.
struct parent_list : x3::position_tagged {
    bool bracketed = false;
    std::vector<parent_product> items;
};

// The coefficient of a term: a parameter name (learned), a constant expression (fixed) or
// a vector literal of fixed weights, one per listed parent (`[1, 2] * [h, o]`).
struct coefficient : x3::variant<identifier, expression, x3::forward_ast<array_literal>> {
    using base_type::base_type;
    using base_type::operator=;
};

// One term of a predictor sum: sign coefficient ['*' middle] ['*' parents].
//   `2`              constant offset        (coef = expression, no parents)
//   `b`              learned bias           (coef = identifier, no parents)
//   `w * [h, o]`     learned weights        (coef = identifier, parents)
//   `0.5 * h`        fixed weight           (coef = expression, parents)
//   `[1, 2] * [h, o]` fixed weights         (coef = array literal, parents)
//   `2 * w * h`      scaled learned weight  (coef = expression, middle = w, parents)
//   `w * h * o`      learned weight on h*o  (coef = identifier, middle = h, parents = o)
// The parser cannot tell `2 * w * h` from `2 * h * o` (names are not resolved yet), so a
// name between two '*' is kept as `middle`; lowering decides whether it is the parameter
// of a scaled term or the first factor of a product.
struct term : x3::position_tagged {
    char sign = '+';
    coefficient coef;
    identifier middle;  // empty name: none (not an optional, which a failed attempt could leave set)
    boost::optional<parent_list> parents;
};

struct predictor : x3::position_tagged {
    std::vector<term> terms;
};

// ---------------------------------------------------------------------------------------
// Distributions and statements.

struct bernoulli_dist : x3::position_tagged {
    expression p;
};

struct logistic_dist : x3::position_tagged {
    predictor linear;
};

struct node_distribution : x3::variant<bernoulli_dist, logistic_dist> {
    using base_type::base_type;
    using base_type::operator=;
};

// node NAME ['[' N ']'] ['hidden'] '~' DIST ';'
struct node_decl : x3::position_tagged {
    identifier name;
    boost::optional<int> size;
    bool hidden = false;
    node_distribution dist;
};

// covariate NAME ['[' N ']'] ';'
struct covariate_decl : x3::position_tagged {
    identifier name;
    boost::optional<int> size;
};

// The SD of normal: a constant (a scalar expression or a vector literal) or the name of a
// learned scale (`normal(0, tau)`), which has a prior of its own (half_prior).
struct sd_arg : x3::variant<identifier, value> {
    using base_type::base_type;
    using base_type::operator=;
};

// normal(MEAN, SD): MEAN a scalar expression or a vector literal, SD as sd_arg says
struct normal_prior : x3::position_tagged {
    value mean;
    sd_arg sd;
};

// mvnormal(MEANVEC, COVMATRIX)
struct mvnormal_prior : x3::position_tagged {
    value mean;
    value cov;
};

// student_t(NU, MEAN, SCALE): independent Student-t weights, each argument a scalar
// expression or a vector literal like normal's
struct student_t_prior : x3::position_tagged {
    value nu;
    value mean;
    value scale;
};

// cauchy(MEAN, SCALE): student_t with NU = 1
struct cauchy_prior : x3::position_tagged {
    value mean;
    value scale;
};

// half_normal(S) or half_cauchy(S): the prior of a learned scale (a name in normal's SD),
// on the positive reals with scale S, a scalar expression
struct half_prior : x3::position_tagged {
    bool cauchy = false;
    value scale;
};

// precision_gamma(A, B): the prior of a learned scale τ as a Gamma(shape A, rate B) on its
// precision 1/τ², each a scalar expression
struct precision_gamma_prior : x3::position_tagged {
    value shape;
    value rate;
};

struct prior_distribution
    : x3::variant<normal_prior, mvnormal_prior, student_t_prior, cauchy_prior, half_prior, precision_gamma_prior> {
    using base_type::base_type;
    using base_type::operator=;
};

// PARAM [, PARAM]* '~' normal(...) | student_t(...) | cauchy(...) ';'   or   PARAM '~' mvnormal(...) ';'
// or SCALE [, SCALE]* '~' half_normal(...) | half_cauchy(...) | precision_gamma(...) ';'
struct prior_stmt : x3::position_tagged {
    std::vector<identifier> params;
    prior_distribution dist;
};

// param NAME ['[' N [',' N]* ']'] ';' — a declared parameter: its shape is the declared one,
// and it may be used in several terms and nodes (the same weight in each).
struct param_decl : x3::position_tagged {
    identifier name;
    std::vector<int> shape;
};

struct statement : x3::variant<node_decl, covariate_decl, prior_stmt, param_decl> {
    using base_type::base_type;
    using base_type::operator=;
};

struct program {
    std::vector<statement> statements;
};

}  // namespace vbn::ast
