// Constant expressions of the model text evaluated to doubles: probabilities, prior
// arguments, fixed offsets and fixed weights (docs/design.md §2, "Constants").
//
// Every failure is reported at the place it happens (the call, the division, the literal)
// and the evaluation of that expression stops there, so one mistake gives one message.
#pragma once

#include "lang/ast.hpp"
#include "lang/diagnostics.hpp"
#include "lang/frontend.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vbn::lang {

// A scalar, a vector literal `[1, 2]` or a matrix literal `[[1, 0.5], [0.5, 1]]`.
struct Literal {
    std::vector<int> shape;        // {} scalar, {n} vector, {rows, cols} matrix
    std::vector<double> values;    // row-major
    std::vector<Location> places;  // where each value was written
    Location loc;                  // where the whole literal starts
};

class ConstEval {
public:
    ConstEval(const SourceMap& map, Diagnostics& diag) : map_(map), diag_(diag) {}

    // `fallback` is used when the parser left a node untagged.
    std::optional<double> expression(const ast::expression& e, Location fallback);
    std::optional<Literal> value(const ast::value& v, Location fallback);

    // Start of a node, or `fallback` when the node carries no position.
    Location at(const boost::spirit::x3::position_tagged& node, Location fallback) const;

private:
    // Start of a vector or matrix literal; found from its first number when the parser
    // left the literal itself untagged.
    Location list_at(const ast::array_literal& list, Location fallback) const;
    std::optional<double> operand(const ast::operand& o, Location fallback);
    std::optional<double> call(const ast::call& c, Location fallback);
    std::optional<double> finite(double x, Location where, const std::string& what);

    const SourceMap& map_;
    Diagnostics& diag_;
};

// logit p = log p - log(1 - p), for 0 < p < 1.
double logit(double p);
// 1 / (1 + exp(-x)), accurate in both tails.
double inv_logit(double x);

// Six significant digits, as messages and prior texts show numbers: 3.16228, 1e-09.
std::string format_number(double x);
// `3`, `[0, 1]` or `[[1, 0.5], [0.5, 1]]`.
std::string format_literal(const Literal& lit);
// `scalar`, `vector[3]` or `matrix[8,3]`.
std::string shape_text(const std::vector<int>& shape);

}  // namespace vbn::lang
