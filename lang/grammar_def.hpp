// The grammar of .vbn models (docs/design.md section 2), in Boost.Spirit X3.
//
// Included by exactly one translation unit (parser.cpp), which instantiates it.
//
// Conventions:
// - Every place where the parse cannot go back is an expectation point (`>`), and what
//   follows it is a named rule; error_handler turns the rule's name into words.
// - Character tests use explicit sets and ranges, never X3's character classes, which
//   assert on bytes above 0x7F.
// - Everything that recurses (parentheses, signs, calls, array literals) goes through the
//   `nested` guard, which bounds the depth of the descent.
#pragma once

#include "lang/ast.hpp"
#include "lang/ast_adapted.hpp"
#include "lang/error_handler.hpp"
#include "lang/grammar.hpp"

#include <boost/spirit/home/x3.hpp>
#include <boost/spirit/home/x3/support/utility/annotate_on_success.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>
#include <system_error>

namespace vbn::lang::parser {

using x3::attr;
using x3::lexeme;
using x3::lit;
using x3::raw;
using x3::standard::char_;

// The reserved words of the language: no name may be one of them.
inline constexpr std::array<const char*, 13> reserved_word_list{
    "node", "covariate", "param", "hidden", "bernoulli", "logistic", "normal", "mvnormal",
    "sqrt", "exp",       "log",   "logit",  "inv_logit"};
inline constexpr std::array<const char*, 5> function_word_list{"sqrt", "exp", "log", "logit", "inv_logit"};

// ---------------------------------------------------------------------------------------
// Primitives of our own

// Fails the enclosing statement: an expectation failure of `which` at the next token.
// Used where the input is recognisably wrong in a way worth naming (an unknown function).
struct raise_parser : x3::parser<raise_parser> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;

    constexpr explicit raise_parser(const char* which) : which(which) {}

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext&, Attribute&) const {
        x3::skip_over(first, last, context);
        boost::throw_exception(x3::expectation_failure<Iterator>(first, which));
    }

    const char* which;
};

constexpr raise_parser fail_with(const char* which) { return raise_parser(which); }

// Bounds the recursion depth: deeper than max_nesting is an error, not a stack overflow.
template <typename Subject>
struct nesting_directive : x3::unary_parser<Subject, nesting_directive<Subject>> {
    using base_type = x3::unary_parser<Subject, nesting_directive<Subject>>;
    static bool const is_pass_through_unary = true;

    constexpr explicit nesting_directive(Subject const& subject) : base_type(subject) {}

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext& rcontext,
               Attribute& attribute) const {
        int& depth = x3::get<x3::error_handler_tag>(context).get().depth();
        if (depth >= max_nesting) {
            x3::skip_over(first, last, context);
            boost::throw_exception(x3::expectation_failure<Iterator>(first, "shallow_nesting"));
        }
        struct level {
            int& depth;
            explicit level(int& d) : depth(d) { ++depth; }
            ~level() { --depth; }
            level(const level&) = delete;
            level& operator=(const level&) = delete;
        } guard(depth);
        return this->subject.parse(first, last, context, rcontext, attribute);
    }
};

struct nesting_gen {
    template <typename Subject>
    constexpr nesting_directive<typename x3::extension::as_parser<Subject>::value_type> operator[](
        Subject const& subject) const {
        return nesting_directive<typename x3::extension::as_parser<Subject>::value_type>(x3::as_parser(subject));
    }
};

constexpr nesting_gen nested{};

// Names what the parser wants at an expectation point: X3 reports the name of the subject
// that failed, and error_handler (parser.cpp) turns the name into words. On failure the
// iterator is put back, so the error points just after the last token, whatever the
// subject (X3 primitives would leave it after skipped blanks).
template <typename Subject>
struct named_directive : x3::unary_parser<Subject, named_directive<Subject>> {
    using base_type = x3::unary_parser<Subject, named_directive<Subject>>;
    static bool const is_pass_through_unary = true;
    static bool const handles_container = Subject::handles_container;

    constexpr named_directive(Subject const& subject, const char* which) : base_type(subject), which(which) {}

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const& context, RContext& rcontext,
               Attribute& attribute) const {
        const Iterator save = first;
        if (this->subject.parse(first, last, context, rcontext, attribute)) return true;
        first = save;
        return false;
    }

    const char* which;
};

template <typename Subject>
constexpr auto expect_named(const char* which, Subject const& subject) {
    using parser = typename x3::extension::as_parser<Subject>::value_type;
    return named_directive<parser>(x3::as_parser(subject), which);
}

}  // namespace vbn::lang::parser

namespace boost::spirit::x3 {
template <typename Subject>
struct get_info<vbn::lang::parser::named_directive<Subject>> {
    using result_type = std::string;
    std::string operator()(vbn::lang::parser::named_directive<Subject> const& p) const { return p.which; }
};
}  // namespace boost::spirit::x3

namespace vbn::lang::parser {

// ---------------------------------------------------------------------------------------
// Semantic actions

// The text of an identifier.
struct set_name {
    template <typename Context>
    void operator()(Context const& context) const {
        auto const& text = x3::_attr(context);
        x3::_val(context).name.assign(text.begin(), text.end());
    }
};

// Whether a numeric literal (as matched by the grammar) is below 1 in magnitude: the power
// of ten of its leading nonzero digit, plus its exponent, is negative. Tells an underflow
// from an overflow without computing the value.
inline bool below_one(std::string_view literal) {
    const std::size_t e = literal.find_first_of("eE");
    const std::string_view mantissa = literal.substr(0, e);
    long exponent = 0;
    if (e != std::string_view::npos) {
        std::size_t i = e + 1;
        const bool negative = i < literal.size() && literal[i] == '-';
        if (i < literal.size() && (literal[i] == '-' || literal[i] == '+')) ++i;
        for (; i < literal.size() && exponent < 1000000; ++i) exponent = 10 * exponent + (literal[i] - '0');
        if (negative) exponent = -exponent;
    }
    const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
    const std::size_t lead = mantissa.find_first_not_of("0.");
    if (lead == std::string_view::npos) return true;  // zero
    const long power = lead < point ? static_cast<long>(point - lead) - 1 : -static_cast<long>(lead - point);
    return power + exponent < 0;
}

// A numeric literal, converted with from_chars (locale-independent, correctly rounded). A
// literal a double cannot hold is a syntax error rather than a silent inf or 0.
struct set_number {
    template <typename Context>
    void operator()(Context const& context) const {
        auto const& text = x3::_attr(context);
        const char* first = &*text.begin();
        const char* last = first + text.size();
        double value = 0;
        const auto [end, ec] = std::from_chars(first, last, value);
        if (ec != std::errc{} || end != last) {
            const bool tiny = below_one(std::string_view(first, text.size()));
            boost::throw_exception(x3::expectation_failure<iterator_type>(
                text.begin(), tiny ? "number_too_small" : "number_too_large"));
        }
        x3::_val(context).value = value;
    }
};

// A whole number (array size or element index) that must fit in an int.
struct set_integer {
    template <typename Context>
    void operator()(Context const& context) const {
        auto const& text = x3::_attr(context);
        const char* first = &*text.begin();
        const char* last = first + text.size();
        int value = 0;
        const auto [end, ec] = std::from_chars(first, last, value);
        if (ec != std::errc{} || end != last)
            boost::throw_exception(x3::expectation_failure<iterator_type>(text.begin(), "integer_in_range"));
        x3::_val(context) = value;
    }
};

// A product of one factor is that factor; a longer one is a nested expression.
struct product_to_operand {
    template <typename Context>
    void operator()(Context const& context) const {
        ast::expression& product = x3::_attr(context);
        if (product.rest.empty())
            x3::_val(context) = std::move(product.first);
        else
            x3::_val(context) = x3::forward_ast<ast::expression>(std::move(product));
    }
};

// A sum of one operand that is itself an expression is that expression: `2 * 3` is the
// product, not a sum wrapping it.
struct flatten_sum {
    template <typename Context>
    void operator()(Context const& context) const {
        ast::expression& sum = x3::_attr(context);
        if (sum.rest.empty()) {
            if (auto* inner = boost::get<x3::forward_ast<ast::expression>>(&sum.first.get())) {
                ast::expression e = std::move(inner->get());
                x3::_val(context) = std::move(e);
                return;
            }
        }
        x3::_val(context) = std::move(sum);
    }
};

struct set_items {
    template <typename Context>
    void operator()(Context const& context) const {
        x3::_val(context).items = std::move(x3::_attr(context));
    }
};

struct set_factors {
    template <typename Context>
    void operator()(Context const& context) const {
        x3::_val(context).factors = std::move(x3::_attr(context));
    }
};

struct set_terms {
    template <typename Context>
    void operator()(Context const& context) const {
        x3::_val(context).terms = std::move(x3::_attr(context));
    }
};

struct set_probability {
    template <typename Context>
    void operator()(Context const& context) const {
        x3::_val(context).p = std::move(x3::_attr(context));
    }
};

struct set_linear {
    template <typename Context>
    void operator()(Context const& context) const {
        x3::_val(context).linear = std::move(x3::_attr(context));
    }
};

// ---------------------------------------------------------------------------------------
// Rule IDs (defined at the end: which rules tag their node, which recover from errors)

struct name_class;
struct node_name_class;
struct covariate_name_class;
struct param_name_class;
struct declared_param_name_class;
struct function_name_class;
struct number_class;
struct integer_class;
struct factor_class;
struct unary_class;
struct call_class;
struct paren_class;
struct mul_op_class;
struct coef_mul_op_class;
struct add_op_class;
struct product_class;
struct coef_product_class;
struct product_operand_class;
struct sum_class;
struct expression_class;
struct value_class;
struct array_literal_class;
struct array_items_class;
struct parent_ref_class;
struct parent_items_class;
struct parent_product_class;
struct parent_factors_class;
struct middle_name_class;
struct parent_product_built_class;
struct bracketed_parents_class;
struct single_parent_class;
struct parents_class;
struct coefficient_class;
struct term_lead_class;
struct term_next_class;
struct terms_class;
struct predictor_class;
struct bernoulli_class;
struct logistic_class;
struct node_distribution_class;
struct node_decl_class;
struct covariate_decl_class;
struct param_decl_class;
struct normal_class;
struct mvnormal_class;
struct student_t_class;
struct cauchy_class;
struct half_prior_class;
struct precision_gamma_class;
struct sd_arg_class;
struct prior_distribution_class;
struct param_list_class;
struct prior_stmt_class;
struct name_built_class;
struct function_name_built_class;
struct number_built_class;
struct expression_built_class;
struct array_literal_built_class;
struct predictor_built_class;
struct bernoulli_built_class;
struct logistic_built_class;

// ---------------------------------------------------------------------------------------
// Rules. The name string of a rule is the key error_handler translates into words.

x3::rule<name_class, ast::identifier> const name = "name";
x3::rule<node_name_class, ast::identifier> const node_name = "node_name";
x3::rule<covariate_name_class, ast::identifier> const covariate_name = "covariate_name";
x3::rule<param_name_class, ast::identifier> const param_name = "param_name";
x3::rule<declared_param_name_class, ast::identifier> const declared_param_name = "declared_param_name";
x3::rule<function_name_class, ast::identifier> const function_name = "function_name";
x3::rule<number_class, ast::number> const number = "number";
x3::rule<integer_class, int> const integer = "integer";

x3::rule<factor_class, ast::operand> const factor = "factor";
x3::rule<unary_class, ast::unary> const unary = "unary";
x3::rule<call_class, ast::call> const call = "call";
x3::rule<paren_class, ast::expression> const paren = "paren";
x3::rule<mul_op_class, ast::operation> const mul_op = "mul_op";
x3::rule<coef_mul_op_class, ast::operation> const coef_mul_op = "coef_mul_op";
x3::rule<add_op_class, ast::operation> const add_op = "add_op";
x3::rule<product_class, ast::expression> const product = "product";
x3::rule<coef_product_class, ast::expression> const coef_product = "coef_product";
x3::rule<product_operand_class, ast::operand> const product_operand = "product_operand";
x3::rule<sum_class, ast::expression> const sum = "sum";
x3::rule<expression_class, ast::expression> const expression = "expression";

x3::rule<value_class, ast::value> const value = "value";
x3::rule<array_literal_class, ast::array_literal> const array_literal = "array_literal";
x3::rule<array_items_class, std::vector<ast::value>> const array_items = "array_items";

x3::rule<parent_ref_class, ast::parent_ref> const parent_ref = "parent_ref";
x3::rule<parent_product_class, ast::parent_product> const parent_product = "parent_product";
x3::rule<parent_factors_class, std::vector<ast::parent_ref>> const parent_factors = "parent_factors";
x3::rule<middle_name_class, ast::identifier> const middle_name = "middle_name";
x3::rule<parent_product_built_class, ast::parent_product> const parent_product_built = "parent_product_built";
x3::rule<parent_items_class, std::vector<ast::parent_product>> const parent_items = "parent_items";
x3::rule<bracketed_parents_class, ast::parent_list> const bracketed_parents = "bracketed_parents";
x3::rule<single_parent_class, ast::parent_list> const single_parent = "single_parent";
x3::rule<parents_class, ast::parent_list> const parents = "parents";
x3::rule<coefficient_class, ast::coefficient> const coefficient = "coefficient";
x3::rule<term_lead_class, ast::term> const term_lead = "term_lead";
x3::rule<term_next_class, ast::term> const term_next = "term_next";
x3::rule<terms_class, std::vector<ast::term>> const terms = "terms";
x3::rule<predictor_class, ast::predictor> const predictor = "predictor";

x3::rule<bernoulli_class, ast::bernoulli_dist> const bernoulli = "bernoulli";
x3::rule<logistic_class, ast::logistic_dist> const logistic = "logistic";
x3::rule<node_distribution_class, ast::node_distribution> const node_distribution = "node_distribution";
x3::rule<node_decl_class, ast::node_decl> const node_decl = "node_decl";
x3::rule<covariate_decl_class, ast::covariate_decl> const covariate_decl = "covariate_decl";
x3::rule<param_decl_class, ast::param_decl> const param_decl = "param_decl";
x3::rule<normal_class, ast::normal_prior> const normal = "normal";
x3::rule<mvnormal_class, ast::mvnormal_prior> const mvnormal = "mvnormal";
x3::rule<student_t_class, ast::student_t_prior> const student_t = "student_t";
x3::rule<cauchy_class, ast::cauchy_prior> const cauchy = "cauchy";
x3::rule<half_prior_class, ast::half_prior> const half_prior = "half_prior";
x3::rule<precision_gamma_class, ast::precision_gamma_prior> const precision_gamma = "precision_gamma";
x3::rule<sd_arg_class, ast::sd_arg> const sd_arg = "sd_arg";
x3::rule<prior_distribution_class, ast::prior_distribution> const prior_distribution = "prior_distribution";
x3::rule<param_list_class, std::vector<ast::identifier>> const param_list = "param_list";
x3::rule<prior_stmt_class, ast::prior_stmt> const prior_stmt = "prior_stmt";

// Rules whose value a semantic action builds. X3 does not hand such a rule's value to
// on_success, so each is wrapped in a rule of the same name (without "_built") that tags it.
x3::rule<name_built_class, ast::identifier> const name_built = "name_built";
x3::rule<function_name_built_class, ast::identifier> const function_name_built = "function_name_built";
x3::rule<number_built_class, ast::number> const number_built = "number_built";
x3::rule<expression_built_class, ast::expression> const expression_built = "expression_built";
x3::rule<array_literal_built_class, ast::array_literal> const array_literal_built = "array_literal_built";
x3::rule<predictor_built_class, ast::predictor> const predictor_built = "predictor_built";
x3::rule<bernoulli_built_class, ast::bernoulli_dist> const bernoulli_built = "bernoulli_built";
x3::rule<logistic_built_class, ast::logistic_dist> const logistic_built = "logistic_built";

statement_type const statement_rule = "statement";

// ---------------------------------------------------------------------------------------
// Lexical level

auto const ident_char = char_("A-Za-z0-9_");
auto const digit = char_('0', '9');

template <std::size_t N>
x3::symbols<int> symbols_of(const std::array<const char*, N>& words) {
    x3::symbols<int> out;
    for (const char* w : words) out.add(w, 0);
    return out;
}

x3::symbols<int> const reserved_words = symbols_of(reserved_word_list);
x3::symbols<int> const function_words = symbols_of(function_word_list);

// A reserved word, matched whole: `nodes` is a name, not `node` then `s`.
auto const reserved = lexeme[reserved_words >> !ident_char];
auto keyword(const char* word) { return lexeme[lit(word) >> !ident_char]; }

auto const name_built_def = lexeme[!reserved >> raw[char_("A-Za-z_") >> *ident_char]][set_name{}];
auto const name_def = name_built;
auto const node_name_def = name;
auto const covariate_name_def = name;
auto const param_name_def = name;
auto const declared_param_name_def = name;
auto const function_name_built_def = lexeme[raw[function_words] >> !ident_char][set_name{}];
auto const function_name_def = function_name_built;

// 12, 0.5, .5, 2., 1e-3, 2.5E+10
auto const mantissa = (+digit >> -(lit('.') >> *digit)) | (lit('.') >> +digit);
auto const exponent = char_("eE") >> -char_("+-") > expect_named("exponent_digits", +digit);
auto const number_built_def = lexeme[raw[mantissa >> -exponent]][set_number{}];
auto const number_def = number_built;

// A whole number; `2.5` or `3x` is not one (rather than `2` followed by junk).
auto const integer_def = lexeme[raw[+digit] >> !char_("A-Za-z0-9_.")][set_integer{}];

// ---------------------------------------------------------------------------------------
// Constant expressions: the usual precedence, a sum of products of factors.

auto const unknown_call = &(name >> lit('(')) >> fail_with("known_function");

auto const factor_def = nested[number | unary | call | paren | unknown_call];
auto const unary_def = char_("+-") >> factor;
auto const call_def = function_name > expect_named("call_open", lit('(')) > expect_named("argument", expression) >
                      expect_named("call_close", lit(')'));
auto const paren_def =
    lit('(') > expect_named("inner_expression", expression) > expect_named("paren_close", lit(')'));

auto const mul_op_def = char_("*/") > expect_named("operand", factor);
// In a predictor `2 * 3 * h` is the weight 2*3 on h: a '*' followed by something that is
// not a factor is left for the term's `* PARENTS`.
auto const coef_mul_op_def = (char_('*') >> factor) | (char_('/') > expect_named("operand", factor));
auto const product_def = factor >> *mul_op;
auto const coef_product_def = factor >> *coef_mul_op;
auto const product_operand_def = product[product_to_operand{}];
auto const add_op_def = char_("+-") > expect_named("operand", product_operand);
auto const sum_def = product_operand >> *add_op;
auto const expression_built_def = sum[flatten_sum{}];
auto const expression_def = expression_built;

// Prior arguments: an expression or an array literal, [1, 2] or [[1, 0.5], [0.5, 1]].
auto const value_def = nested[array_literal | expression];
auto const array_item = expect_named("array_item", value);
auto const array_items_def = array_item >> *(lit(',') > array_item);
auto const array_literal_built_def =
    (lit('[') > expect_named("array_item", array_items) > expect_named("array_close", lit(']')))[set_items{}];
auto const array_literal_def = array_literal_built;

// ---------------------------------------------------------------------------------------
// Predictors: [sign] term (('+' | '-') term)*, term = coefficient ['*' parents].

auto const element = lit('[') > expect_named("index", integer) > expect_named("index_close", lit(']'));
auto const parent_ref_def = name >> -element;
// A product of parents: `h * o * v[2]`, one entry of a parent list.
auto const parent_factors_def = parent_ref >> *(lit('*') > expect_named("listed_parent", parent_ref));
auto const parent_product_built_def = parent_factors[set_factors{}];
auto const parent_product_def = parent_product_built;
auto const listed_parent = expect_named("listed_parent", parent_product);
auto const parent_items_def = listed_parent >> *(lit(',') > listed_parent);
auto const bracketed_parents_def =
    lit('[') >> attr(true) > expect_named("listed_parent", parent_items) > expect_named("parents_close", lit(']'));
auto const single_parent_def = attr(false) >> x3::repeat(1)[parent_product];
auto const parents_def = bracketed_parents | single_parent;

// A name followed by '(' is a call of an unknown function, not a parameter.
auto const coefficient_def = (name >> !lit('(')) | coef_product | array_literal;
// `2 * w * h` or `w * h * o`: a name between two '*' (ast::term says who decides what it is).
// An empty identifier when there is none: the second alternative overwrites whatever a
// failed first attempt left behind.
auto const middle_name_def = lit('*') >> name >> &lit('*');
auto const middle = middle_name | attr(ast::identifier{});
auto const weights = -(lit('*') > expect_named("parents", parents));
auto const term_lead_def = (char_("+-") | attr('+')) >> coefficient >> middle >> weights;
auto const term_next_def = (char_("+-") > expect_named("term", coefficient)) >> middle >> weights;
auto const terms_def = term_lead >> *term_next;
auto const predictor_built_def = terms[set_terms{}];
auto const predictor_def = predictor_built;

// ---------------------------------------------------------------------------------------
// Statements

auto const semicolon = expect_named("semicolon", lit(';'));

auto const bernoulli_built_def = (keyword("bernoulli") > expect_named("bernoulli_open", lit('(')) >
                                  expect_named("probability", expression) >
                                  expect_named("bernoulli_close", lit(')')))[set_probability{}];
auto const bernoulli_def = bernoulli_built;
auto const logistic_built_def = (keyword("logistic") > expect_named("logistic_open", lit('(')) >
                                 expect_named("predictor", predictor) >
                                 expect_named("logistic_close", lit(')')))[set_linear{}];
auto const logistic_def = logistic_built;
auto const node_distribution_def = bernoulli | logistic;

auto const size_suffix = lit('[') > expect_named("size", integer) > expect_named("size_close", lit(']'));

auto const node_decl_def = (keyword("node") > node_name) >> -size_suffix >> x3::matches[keyword("hidden")] >
                           expect_named("node_tilde", lit('~')) > expect_named("distribution", node_distribution) >
                           semicolon;
auto const covariate_decl_def =
    (keyword("covariate") > covariate_name) >> -size_suffix > expect_named("covariate_semicolon", lit(';'));

auto const shape_suffix = lit('[') > expect_named("shape", integer % ',') > expect_named("shape_close", lit(']'));
auto const param_decl_def = (keyword("param") > declared_param_name) >> -shape_suffix > semicolon;

// A name alone before ')' is a learned scale; anything else a constant.
auto const sd_arg_def = (name >> &lit(')')) | value;
auto const normal_def = keyword("normal") > expect_named("normal_open", lit('(')) > expect_named("mean", value) >
                        expect_named("normal_comma", lit(',')) > expect_named("sd", sd_arg) >
                        expect_named("normal_close", lit(')'));
auto const mvnormal_def = keyword("mvnormal") > expect_named("mvnormal_open", lit('(')) >
                          expect_named("mean_vector", value) > expect_named("mvnormal_comma", lit(',')) >
                          expect_named("covariance", value) > expect_named("mvnormal_close", lit(')'));
auto const student_t_def = keyword("student_t") > expect_named("student_t_open", lit('(')) > expect_named("nu", value) >
                           expect_named("student_t_comma", lit(',')) > expect_named("location", value) >
                           expect_named("location_comma", lit(',')) > expect_named("scale", value) >
                           expect_named("student_t_close", lit(')'));
auto const cauchy_def = keyword("cauchy") > expect_named("cauchy_open", lit('(')) > expect_named("location", value) >
                        expect_named("location_comma", lit(',')) > expect_named("scale", value) >
                        expect_named("cauchy_close", lit(')'));
auto const half_prior_def = ((keyword("half_normal") >> attr(false)) | (keyword("half_cauchy") >> attr(true))) >
                            expect_named("half_open", lit('(')) > expect_named("half_scale", value) >
                            expect_named("half_close", lit(')'));
auto const precision_gamma_def = keyword("precision_gamma") > expect_named("precision_gamma_open", lit('(')) >
                                 expect_named("gamma_shape", value) > expect_named("gamma_comma", lit(',')) >
                                 expect_named("gamma_rate", value) > expect_named("precision_gamma_close", lit(')'));
auto const prior_distribution_def = normal | mvnormal | student_t | cauchy | half_prior | precision_gamma;
auto const param_list_def = name >> *(lit(',') > param_name);
// No expectation before '~': a line that is not a prior is reported as "not a statement".
auto const prior_stmt_def = param_list >> lit('~') > expect_named("prior", prior_distribution) > semicolon;

auto const statement_rule_def = node_decl | covariate_decl | param_decl | prior_stmt;

BOOST_SPIRIT_DEFINE(name_built, function_name_built, number_built, expression_built, array_literal_built,
                    predictor_built, bernoulli_built, logistic_built)
BOOST_SPIRIT_DEFINE(name, node_name, covariate_name, param_name, declared_param_name, function_name, number, integer, factor, unary, call,
                    paren, mul_op, coef_mul_op, add_op, product, coef_product, product_operand, sum, expression)
BOOST_SPIRIT_DEFINE(value, array_literal, array_items, parent_ref, parent_product, parent_factors, parent_product_built, middle_name,
                    parent_items, bracketed_parents, single_parent,
                    parents, coefficient, term_lead, term_next, terms, predictor)
BOOST_SPIRIT_DEFINE(bernoulli, logistic, node_distribution, node_decl, covariate_decl, param_decl, sd_arg, normal, mvnormal, student_t, cauchy, half_prior, precision_gamma,
                    prior_distribution, param_list, prior_stmt, statement_rule)

// ---------------------------------------------------------------------------------------
// Annotation and error recovery: every rule that builds a position-tagged node records its
// span; a statement is the unit of recovery.

struct name_class : x3::annotate_on_success {};
struct node_name_class : x3::annotate_on_success {};
struct covariate_name_class : x3::annotate_on_success {};
struct param_name_class : x3::annotate_on_success {};
struct declared_param_name_class : x3::annotate_on_success {};
struct function_name_class : x3::annotate_on_success {};
struct number_class : x3::annotate_on_success {};
struct integer_class {};
struct factor_class {};
struct unary_class : x3::annotate_on_success {};
struct call_class : x3::annotate_on_success {};
struct paren_class {};
struct mul_op_class : x3::annotate_on_success {};
struct coef_mul_op_class : x3::annotate_on_success {};
struct add_op_class : x3::annotate_on_success {};
struct product_class : x3::annotate_on_success {};
struct coef_product_class : x3::annotate_on_success {};
struct product_operand_class {};
struct sum_class : x3::annotate_on_success {};
struct expression_class : x3::annotate_on_success {};
struct value_class {};
struct array_literal_class : x3::annotate_on_success {};
struct array_items_class {};
struct parent_ref_class : x3::annotate_on_success {};
struct parent_items_class {};
struct parent_product_class : x3::annotate_on_success {};
struct parent_product_built_class {};
struct parent_factors_class {};
struct middle_name_class {};
struct bracketed_parents_class : x3::annotate_on_success {};
struct single_parent_class : x3::annotate_on_success {};
struct parents_class : x3::annotate_on_success {};
struct coefficient_class {};
struct term_lead_class : x3::annotate_on_success {};
struct term_next_class : x3::annotate_on_success {};
struct terms_class {};
struct predictor_class : x3::annotate_on_success {};
struct bernoulli_class : x3::annotate_on_success {};
struct logistic_class : x3::annotate_on_success {};
struct node_distribution_class {};
struct node_decl_class : x3::annotate_on_success {};
struct covariate_decl_class : x3::annotate_on_success {};
struct param_decl_class : x3::annotate_on_success {};
struct normal_class : x3::annotate_on_success {};
struct mvnormal_class : x3::annotate_on_success {};
struct student_t_class : x3::annotate_on_success {};
struct cauchy_class : x3::annotate_on_success {};
struct half_prior_class : x3::annotate_on_success {};
struct precision_gamma_class : x3::annotate_on_success {};
struct sd_arg_class {};
struct prior_distribution_class {};
struct param_list_class {};
struct prior_stmt_class : x3::annotate_on_success {};
struct name_built_class {};
struct function_name_built_class {};
struct number_built_class {};
struct expression_built_class {};
struct array_literal_built_class {};
struct predictor_built_class {};
struct bernoulli_built_class {};
struct logistic_built_class {};
struct statement_class : error_handler_base {};

const statement_type& statement() { return statement_rule; }

}  // namespace vbn::lang::parser
