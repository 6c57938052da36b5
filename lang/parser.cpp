// The parser of .vbn models: instantiates the grammar once, drives it statement by
// statement with error recovery, and words its syntax errors.
#include "lang/config.hpp"
#include "lang/error_handler.hpp"
#include "lang/frontend.hpp"
#include "lang/grammar.hpp"
#include "lang/grammar_def.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace vbn::lang {

namespace parser {

BOOST_SPIRIT_INSTANTIATE(statement_type, iterator_type, context_type)

namespace {

bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_reserved(std::string_view word) {
    return std::find(reserved_word_list.begin(), reserved_word_list.end(), word) != reserved_word_list.end();
}

// The word (identifier or reserved word) starting at `at`, or empty.
std::string_view word_at(iterator_type at, iterator_type end) {
    if (at == end || !is_ident_start(*at)) return {};
    iterator_type i = at;
    while (i != end && is_ident_char(*i)) ++i;
    return {&*at, static_cast<std::size_t>(i - at)};
}

// The numeric literal starting at `at` (digits, '.', an exponent), or empty.
std::string_view number_at(iterator_type at, iterator_type end) {
    iterator_type i = at;
    while (i != end && (is_digit(*i) || *i == '.')) ++i;
    if (i != at && i != end && (*i == 'e' || *i == 'E')) {
        iterator_type j = std::next(i);
        if (j != end && (*j == '+' || *j == '-')) ++j;
        if (j != end && is_digit(*j)) {
            i = j;
            while (i != end && is_digit(*i)) ++i;
        }
    }
    return {&*at, static_cast<std::size_t>(i - at)};
}

// A token quoted in a message; a megabyte-long name is cut short.
std::string quoted(std::string_view token) {
    constexpr std::size_t max = 40;
    if (token.size() <= max) return fmt::format("'{}'", token);
    return fmt::format("'{}...'", token.substr(0, max));
}

// What each expectation point of the grammar wants, in words. Keys are the names given
// with expect_named in grammar_def.hpp.
struct phrase {
    std::string_view which;
    std::string_view words;
};

constexpr std::array phrases{
    phrase{"semicolon", "expected ';' at the end of the statement"},
    phrase{"node_name", "expected the node's name after 'node'"},
    phrase{"covariate_name", "expected the covariate's name after 'covariate'"},
    phrase{"param_name", "expected a parameter name after ','"},
    phrase{"size", "expected the array size as a whole number, e.g. [3]"},
    phrase{"size_close", "expected ']' after the array size"},
    phrase{"declared_param_name", "expected the parameter's name after 'param'"},
    phrase{"shape", "expected the parameter's shape as whole numbers, e.g. [3] or [3, 2]"},
    phrase{"shape_close", "expected ',' or ']' in the parameter's shape"},
    phrase{"node_tilde", "expected '~' and the node's distribution, e.g. `node y ~ bernoulli(0.5);`"},
    phrase{"distribution", "expected a distribution: bernoulli(p) or logistic(...)"},
    phrase{"bernoulli_open", "expected '(' after 'bernoulli'"},
    phrase{"probability", "expected the probability, a constant expression like 0.5"},
    phrase{"bernoulli_close", "expected ')' to close bernoulli(...)"},
    phrase{"logistic_open", "expected '(' after 'logistic'"},
    phrase{"predictor", "expected a predictor, a sum of terms like b + w * x"},
    phrase{"logistic_close", "expected ')' to close logistic(...)"},
    phrase{"parents", "expected a parent (a node or covariate name, or a list like [a, b]) after '*'"},
    phrase{"listed_parent", "expected a node or covariate name in the list of parents"},
    phrase{"parents_close", "expected ',' or ']' in the list of parents"},
    phrase{"index", "expected the element number as a whole number, e.g. v[2]"},
    phrase{"index_close", "expected ']' after the element number"},
    phrase{"call_open", "expected '(' after the function name"},
    phrase{"argument", "expected the function's argument, a constant expression"},
    phrase{"call_close", "expected ')' to close the function call"},
    phrase{"inner_expression", "expected an expression after '('"},
    phrase{"paren_close", "expected ')' to close '('"},
    phrase{"exponent_digits", "expected the digits of the exponent, e.g. 1e-3"},
    phrase{"prior", "expected a prior: normal(mean, sd), mvnormal(mean, cov), student_t(nu, mu, s), cauchy(mu, s), or for a scale half_normal(s), half_cauchy(s) or precision_gamma(a, b)"},
    phrase{"normal_open", "expected '(' after 'normal'"},
    phrase{"mean", "expected the mean, a constant expression or a vector like [0, 1]"},
    phrase{"normal_comma", "expected ',' and the standard deviation after the mean"},
    phrase{"sd", "expected the standard deviation, a constant expression or a vector like [1, 2]"},
    phrase{"normal_close", "expected ')' to close normal(...)"},
    phrase{"mvnormal_open", "expected '(' after 'mvnormal'"},
    phrase{"mean_vector", "expected the mean vector, e.g. [0, 0]"},
    phrase{"mvnormal_comma", "expected ',' and the covariance matrix after the mean"},
    phrase{"covariance", "expected the covariance matrix, e.g. [[1, 0.5], [0.5, 1]]"},
    phrase{"mvnormal_close", "expected ')' to close mvnormal(...)"},
    phrase{"student_t_open", "expected '(' after 'student_t'"},
    phrase{"nu", "expected the degrees of freedom, a constant expression or a vector like [3, 3]"},
    phrase{"student_t_comma", "expected ',' and the location after the degrees of freedom"},
    phrase{"location", "expected the location, a constant expression or a vector like [0, 1]"},
    phrase{"location_comma", "expected ',' and the scale after the location"},
    phrase{"scale", "expected the scale, a constant expression or a vector like [1, 2.5]"},
    phrase{"student_t_close", "expected ')' to close student_t(...)"},
    phrase{"cauchy_open", "expected '(' after 'cauchy'"},
    phrase{"cauchy_close", "expected ')' to close cauchy(...)"},
    phrase{"half_open", "expected '(' after the scale's prior"},
    phrase{"half_scale", "expected the scale of the prior, a positive constant expression"},
    phrase{"half_close", "expected ')' to close the scale's prior"},
    phrase{"precision_gamma_open", "expected '(' after 'precision_gamma'"},
    phrase{"gamma_shape", "expected the Gamma's shape, a positive constant expression"},
    phrase{"gamma_comma", "expected ',' and the Gamma's rate after its shape"},
    phrase{"gamma_rate", "expected the Gamma's rate, a positive constant expression"},
    phrase{"precision_gamma_close", "expected ')' to close precision_gamma(...)"},
    phrase{"array_item", "expected a value (a constant expression or an array like [1, 2])"},
    phrase{"array_close", "expected ',' or ']' in the array"},
};

std::string words_for(std::string_view which) {
    for (const phrase& p : phrases)
        if (p.which == which) return std::string(p.words);
    return "syntax error";  // unreachable: every expectation point of the grammar has a phrase
}

constexpr std::string_view no_statement_words =
    "expected a statement: node, covariate or a prior `name ~ normal(...)`";

// What the offending token is, when it is not something the language has at all: the
// printed line shows such bytes as '?', so the message names them.
std::string stray_byte(iterator_type token, iterator_type end) {
    if (token == end) return {};
    const auto c = static_cast<unsigned char>(*token);
    if (c < 0x20 || c == 0x7F) return fmt::format("unexpected byte 0x{:02X}; ", c);
    if (c >= 0x80) return "unexpected non-ASCII character (names use A-Z, a-z, 0-9 and _); ";
    return {};
}

// Whether the '*' just before `where` follows `* NAME` or `* NAME[k]`: `w * h * 2`, where the
// grammar has read h as the name between two '*' and expects the parents after it.
bool after_middle_name(iterator_type begin, iterator_type where) {
    auto i = std::prev(where);  // the '*'
    const auto back_over_blanks = [&] {
        while (i != begin && std::isspace(static_cast<unsigned char>(*std::prev(i)))) --i;
    };
    back_over_blanks();
    if (i != begin && *std::prev(i) == ']') {  // v[2]: back over the index
        while (i != begin && *std::prev(i) != '[') --i;
        if (i != begin) --i;
    }
    const auto name_end = i;
    while (i != begin && is_ident_char(*std::prev(i))) --i;
    if (i == name_end || !is_ident_start(*i)) return false;
    back_over_blanks();
    return i != begin && *std::prev(i) == '*';
}

// After the '*' of a term or of a product of parents, a constant or a '(' where a parent
// belongs: `w * 2 * h`, `w * h * 2`, `w * (h * o)`. A fixed scale goes before the parameter
// and a product needs no parentheses, so say that. A lone `w * 2` keeps the plain message
// (the weight was put after '*', not a scale). Empty when neither applies.
std::string misplaced_in_parents(std::string_view which, iterator_type begin, iterator_type where, iterator_type token,
                                 iterator_type end) {
    const bool in_product =
        (which == "listed_parent" && *std::prev(where) == '*') || (which == "parents" && after_middle_name(begin, where));
    if (token == end || (which != "parents" && !in_product)) return {};
    if (*token == '(')
        return "parentheses do not group parents; a product of parents is written without them, as in 'w * h * o' or "
               "'w * [h, o, h * o]'";
    const std::string_view number = number_at(token, end);
    if (number.empty() || number == ".") return {};
    const iterator_type next = skip_blanks(std::next(token, static_cast<std::ptrdiff_t>(number.size())), end);
    if (!in_product && (next == end || *next != '*')) return {};
    return fmt::format("the constant {} stands where a parent belongs; a fixed scale goes first in a term, as in "
                       "'2 * w * h' (the weight w on the feature 2*h)",
                       quoted(number));
}

// Messages that depend on the offending token: a misspelt distribution, a reserved word
// used as a name, a number out of range. Empty when the fixed phrase is the right one.
std::string token_words(std::string_view which, iterator_type begin, iterator_type where, iterator_type token,
                        iterator_type end) {
    const std::string_view word = word_at(token, end);
    const bool reserved_word = !word.empty() && is_reserved(word);
    if (which == "number_too_large")
        return fmt::format("number out of range: {} is too large for a double (the largest is about 1.8e308)",
                           quoted(number_at(token, end)));
    if (which == "number_too_small")
        return fmt::format("number out of range: {} is too close to zero for a double (the smallest is about "
                           "4.9e-324)",
                           quoted(number_at(token, end)));
    if (which == "integer_in_range")
        return fmt::format("number out of range: {} is too large (at most 2147483647)", quoted(number_at(token, end)));
    if (which == "shallow_nesting")
        return fmt::format("expression nested too deeply (more than {} levels)", max_nesting);
    if (which == "known_function")
        return fmt::format("unknown function {}; the functions are sqrt, exp, log, logit and inv_logit",
                           quoted(word));
    if (which == "covariate_semicolon")
        return token != end && *token == '~'
                   ? "a covariate has no distribution: declare it as `covariate x;` and use it as a parent"
                   : words_for("semicolon");
    if (which == "distribution" && (word == "normal" || word == "mvnormal" || word == "student_t" || word == "cauchy"))
        return fmt::format("{} is a prior for parameters, not a distribution of a node; expected bernoulli(p) or "
                           "logistic(...)",
                           quoted(word));
    if (which == "distribution" && !word.empty())
        return fmt::format("unknown distribution {}; expected bernoulli(p) or logistic(...)", quoted(word));
    if (which == "prior" && (word == "bernoulli" || word == "logistic"))
        return fmt::format("{} is a distribution of nodes, not a prior; expected normal(mean, sd), "
                           "mvnormal(mean, cov), student_t(nu, mu, s), cauchy(mu, s), or for a learned scale "
                           "half_normal(s), half_cauchy(s) or precision_gamma(a, b)",
                           quoted(word));
    if (which == "prior" && !word.empty())
        return fmt::format("unknown prior {}; expected normal(mean, sd), mvnormal(mean, cov), student_t(nu, mu, s), "
                           "cauchy(mu, s), or for a learned scale half_normal(s), half_cauchy(s) or "
                           "precision_gamma(a, b)",
                           quoted(word));
    if (which == "node_tilde" && (word == "bernoulli" || word == "logistic"))
        return "expected '~' before the node's distribution";
    if (which == "node_tilde" && !word.empty() && !reserved_word)
        return fmt::format("unexpected {} after the node's name; expected 'hidden' or '~' and the distribution",
                           quoted(word));
    if (which == "probability" && !word.empty() && !reserved_word)
        return fmt::format("the probability must be a constant, and {} is a name; a learned probability is "
                           "logistic(b) with a prior on b",
                           quoted(word));
    if (std::string misplaced = misplaced_in_parents(which, begin, where, token, end); !misplaced.empty())
        return misplaced;
    if (reserved_word && (which == "node_name" || which == "covariate_name" || which == "param_name" ||
                          which == "declared_param_name" ||
                          which == "parents" || which == "listed_parent" || which == "term"))
        return fmt::format("{} is a reserved word and cannot be used as a name", quoted(word));
    // The grammar puts these right after their operator, so the operator is the byte before.
    if (which == "operand")
        return fmt::format("expected a number, '(' or a function like sqrt(...) after '{}'", *std::prev(where));
    if (which == "term")
        return fmt::format("expected a term after '{}': a constant, a parameter, or weights times parents",
                           *std::prev(where));
    return {};
}

}  // namespace

void error_handler::expected(std::string_view which, iterator_type where) {
    last_error_ = where;
    const iterator_type token = skip_blanks(where, end_);
    // A missing ';' is shown right after the statement; so is anything missing at the end of
    // the file, rather than on an empty last line.
    const bool missing_semicolon =
        which == "semicolon" || (which == "covariate_semicolon" && (token == end_ || *token != '~'));
    const iterator_type at = missing_semicolon || token == end_ ? where : token;
    std::string message = token_words(which, begin_, where, token, end_);
    if (message.empty()) message = words_for(which);
    if (!missing_semicolon) message = stray_byte(token, end_) + message;
    diag_.error(map_.source().locate(offset(at)), std::move(message));
}

void error_handler::no_statement(iterator_type where) {
    last_error_ = where;
    const std::string_view word = word_at(where, end_);
    std::string message(no_statement_words);
    if (!word.empty() && is_reserved(word)) {
        // `hidden ~ normal(0, 1);` and the like: a prior on a reserved word.
        const iterator_type next = skip_blanks(std::next(where, static_cast<std::ptrdiff_t>(word.size())), end_);
        if (next != end_ && (*next == '~' || *next == ','))
            message = fmt::format("{} is a reserved word and cannot be used as a name", quoted(word));
    }
    diag_.error(map_.source().locate(offset(where)), stray_byte(where, end_) + message);
}

namespace {

// Offset of the first block comment that is never closed, if any.
std::optional<std::size_t> unterminated_comment(const std::string& text) {
    std::size_t i = 0;
    while (i + 1 < text.size()) {
        if (text[i] == '/' && text[i + 1] == '/') {
            const std::size_t eol = text.find('\n', i);
            if (eol == std::string::npos) return std::nullopt;
            i = eol + 1;
        } else if (text[i] == '/' && text[i + 1] == '*') {
            const std::size_t close = text.find("*/", i + 2);
            if (close == std::string::npos) return i;
            i = close + 2;
        } else {
            ++i;
        }
    }
    return std::nullopt;
}

// Just after the next ';' that is not inside a comment, or the end.
iterator_type past_next_semicolon(iterator_type from, iterator_type end) {
    for (iterator_type i = skip_blanks(from, end); i != end; i = skip_blanks(i, end)) {
        if (*i == ';') return std::next(i);
        ++i;
    }
    return end;
}

// Beyond this many, more syntax errors are noise (typically a file that is not a model).
constexpr std::size_t max_syntax_errors = 50;

}  // namespace

}  // namespace parser

bool parse(const Source& source, ast::program& out, SourceMap& map, Diagnostics& diag) {
    using parser::iterator_type;
    namespace x3 = boost::spirit::x3;

    const std::string& text = source.text();
    const std::optional<std::size_t> open_comment = parser::unterminated_comment(text);
    // Everything after an unterminated '/*' is comment: the parser never sees it.
    const iterator_type begin = text.begin();
    const iterator_type end = begin + static_cast<std::ptrdiff_t>(open_comment.value_or(text.size()));

    parser::error_handler handler(begin, end, map, diag);
    auto handler_ref = std::ref(handler);
    // X3 contexts hold references to each other: each level must be a named object.
    const auto skipper_context = x3::make_context<x3::skipper_tag>(parser::skipper);
    const auto context = x3::make_context<x3::error_handler_tag>(handler_ref, skipper_context);
    static_assert(std::is_same_v<std::decay_t<decltype(context)>, parser::context_type>,
                  "the context must be the one the grammar is instantiated with");

    const std::size_t errors_before = diag.error_count();
    std::size_t syntax_errors = 0;
    iterator_type it = begin;
    while ((it = parser::skip_blanks(it, end)) != end) {
        if (syntax_errors == parser::max_syntax_errors) {
            diag.error({}, fmt::format("too many syntax errors; stopped after {}", parser::max_syntax_errors));
            break;
        }
        ast::statement statement;
        iterator_type next = it;
        const std::size_t before = diag.error_count();
        if (parser::statement().parse(next, end, context, x3::unused, statement)) {
            out.statements.push_back(std::move(statement));
            it = next;
            continue;
        }
        if (diag.error_count() == before) handler.no_statement(it);
        ++syntax_errors;
        it = parser::past_next_semicolon(std::max(it, handler.last_error()), end);
    }
    if (open_comment)
        diag.error(source.locate(*open_comment), "unterminated comment: '/*' has no closing '*/'");
    return diag.error_count() == errors_before;
}

// ---------------------------------------------------------------------------------------
// SourceMap

void SourceMap::record(int id, std::size_t begin, std::size_t end) {
    if (id < 0) return;
    const auto index = static_cast<std::size_t>(id);
    if (index >= spans_.size()) spans_.resize(index + 1, {0, 0});
    spans_[index] = {begin, end};
}

std::pair<std::size_t, std::size_t> SourceMap::span(const boost::spirit::x3::position_tagged& node) const {
    if (node.id_first < 0 || node.id_last < 0) return {0, 0};
    const auto first = static_cast<std::size_t>(node.id_first);
    const auto last = static_cast<std::size_t>(node.id_last);
    if (first >= spans_.size() || last >= spans_.size()) return {0, 0};
    return {spans_[first].first, spans_[last].second};
}

Location SourceMap::where(const boost::spirit::x3::position_tagged& node) const {
    if (node.id_first < 0 || static_cast<std::size_t>(node.id_first) >= spans_.size()) return {0, 0};
    return source_->locate(spans_[static_cast<std::size_t>(node.id_first)].first);
}

}  // namespace vbn::lang
