#include "lang/const_eval.hpp"

#include <cmath>

#include <fmt/format.h>

namespace vbn::lang {

namespace x3 = boost::spirit::x3;

namespace {
const ast::expression* as_expression(const ast::value& v) { return boost::get<ast::expression>(&v.get()); }
const ast::array_literal* as_list(const ast::value& v) {
    const auto* a = boost::get<x3::forward_ast<ast::array_literal>>(&v.get());
    return a ? &a->get() : nullptr;
}
}  // namespace

double logit(double p) { return std::log(p) - std::log1p(-p); }

double inv_logit(double x) {
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

std::string format_number(double x) { return fmt::format("{:g}", x); }

std::string format_literal(const Literal& lit) {
    if (lit.shape.empty()) return format_number(lit.values.at(0));
    auto row = [&](std::size_t begin, std::size_t n) {
        std::string out = "[";
        for (std::size_t k = 0; k < n; ++k) out += (k ? ", " : "") + format_number(lit.values[begin + k]);
        return out + "]";
    };
    if (lit.shape.size() == 1) return row(0, lit.values.size());
    const auto cols = static_cast<std::size_t>(lit.shape[1]);
    std::string out = "[";
    for (std::size_t r = 0; r < static_cast<std::size_t>(lit.shape[0]); ++r) out += (r ? ", " : "") + row(r * cols, cols);
    return out + "]";
}

std::string shape_text(const std::vector<int>& shape) {
    if (shape.empty()) return "scalar";
    if (shape.size() == 1) return fmt::format("vector[{}]", shape[0]);
    return fmt::format("matrix[{},{}]", shape[0], shape[1]);
}

Location ConstEval::at(const x3::position_tagged& node, Location fallback) const {
    const Location l = map_.where(node);
    return l.line > 0 ? l : fallback;
}

std::optional<double> ConstEval::finite(double x, Location where, const std::string& what) {
    if (std::isfinite(x)) return x;
    diag_.error(where, fmt::format("{} is not finite ({}); constants must be finite numbers", what, format_number(x)));
    return std::nullopt;
}

std::optional<double> ConstEval::call(const ast::call& c, Location fallback) {
    const Location where = at(c, at(c.function, fallback));
    const std::string& f = c.function.name;
    const auto x = expression(c.argument.get(), where);
    if (!x) return std::nullopt;
    const double v = *x;
    if (f == "sqrt") {
        if (v < 0) {
            diag_.error(where, fmt::format("sqrt of a negative number ({}); its argument must be >= 0", format_number(v)));
            return std::nullopt;
        }
        return std::sqrt(v);
    }
    if (f == "log") {
        if (v <= 0) {
            diag_.error(where, v == 0 ? std::string("log of 0 is -infinity; its argument must be positive")
                                      : fmt::format("log of a negative number ({}); its argument must be positive",
                                                    format_number(v)));
            return std::nullopt;
        }
        return std::log(v);
    }
    if (f == "exp") return finite(std::exp(v), where, fmt::format("exp({})", format_number(v)));
    if (f == "logit") {
        if (!(v > 0 && v < 1)) {
            diag_.error(where, fmt::format("logit needs a probability strictly between 0 and 1, found {}", format_number(v)));
            return std::nullopt;
        }
        return logit(v);
    }
    if (f == "inv_logit") return inv_logit(v);
    diag_.error(where, fmt::format("unknown function '{}'; the functions are sqrt, exp, log, logit and inv_logit", f));
    return std::nullopt;
}

std::optional<double> ConstEval::operand(const ast::operand& o, Location fallback) {
    const auto& v = o.get();
    if (const auto* n = boost::get<ast::number>(&v)) return finite(n->value, at(*n, fallback), "this number");
    if (const auto* u = boost::get<x3::forward_ast<ast::unary>>(&v)) {
        const auto x = operand(u->get().operand_, at(u->get(), fallback));
        if (!x) return std::nullopt;
        return u->get().op == '-' ? -*x : *x;
    }
    if (const auto* c = boost::get<x3::forward_ast<ast::call>>(&v)) return call(c->get(), fallback);
    const auto& e = boost::get<x3::forward_ast<ast::expression>>(v).get();
    return expression(e, fallback);
}

// The grammar already nests products inside sums, but the chain is evaluated with the usual
// precedence anyway, so a flat chain `a + b * c` means the same thing.
std::optional<double> ConstEval::expression(const ast::expression& e, Location fallback) {
    const Location start = at(e, fallback);
    auto first = operand(e.first, start);
    if (!first) return std::nullopt;
    double sum = 0;
    double product = *first;
    for (const auto& op : e.rest) {
        const Location where = at(op, start);
        const auto x = operand(op.operand_, where);
        if (!x) return std::nullopt;
        switch (op.op) {
            case '*': product *= *x; break;
            case '/':
                if (*x == 0) {
                    diag_.error(where, "division by zero; the divisor of a constant must not be 0");
                    return std::nullopt;
                }
                product /= *x;
                break;
            case '-': sum += product; product = -*x; break;
            default: sum += product; product = *x; break;
        }
        if (!finite(sum + product, where, "the value of this expression")) return std::nullopt;
    }
    return finite(sum + product, start, "the value of this expression");
}

Location ConstEval::list_at(const ast::array_literal& list, Location fallback) const {
    const Location tagged = map_.where(list);
    if (tagged.line > 0) return tagged;
    const ast::array_literal* level = &list;
    int depth = 1;
    std::size_t pos = 0;
    for (;;) {
        if (level->items.empty()) return fallback;
        const ast::value& first = level->items.front();
        if (const auto* e = as_expression(first)) {
            const auto [begin, end] = map_.span(*e);
            if (begin == 0 && end == 0) return fallback;
            pos = begin;
            break;
        }
        level = as_list(first);
        ++depth;
    }
    // Back from the first number over one '[' per level of nesting.
    const std::string& text = map_.source().text();
    for (int d = 0; d < depth; ++d) {
        while (pos > 0 && (text[pos - 1] == ' ' || text[pos - 1] == '\t' || text[pos - 1] == '\r' || text[pos - 1] == '\n')) --pos;
        if (pos == 0 || text[pos - 1] != '[') return fallback;
        --pos;
    }
    return map_.source().locate(pos);
}

std::optional<Literal> ConstEval::value(const ast::value& v, Location fallback) {
    Literal lit;
    bool ok = true;
    auto number = [&](const ast::expression& e, Location near) {
        const Location where = at(e, near);
        const auto x = expression(e, where);
        ok = ok && x.has_value();
        lit.values.push_back(x.value_or(0));
        lit.places.push_back(where);
    };
    if (const auto* e = as_expression(v)) {
        lit.loc = at(*e, fallback);
        number(*e, lit.loc);
        return ok ? std::optional<Literal>(lit) : std::nullopt;
    }
    const ast::array_literal& list = *as_list(v);
    lit.loc = list_at(list, fallback);
    if (list.items.empty()) {
        diag_.error(lit.loc, "empty list; a vector literal needs at least one number, e.g. [0, 1]");
        return std::nullopt;
    }
    if (as_expression(list.items.front())) {
        for (const auto& item : list.items) {
            if (const auto* e = as_expression(item)) number(*e, lit.loc);
            else {
                diag_.error(list_at(*as_list(item), lit.loc), "a vector literal mixes numbers and lists; write numbers only, e.g. [0, 1]");
                return std::nullopt;
            }
        }
        lit.shape = {static_cast<int>(list.items.size())};
        return ok ? std::optional<Literal>(lit) : std::nullopt;
    }
    std::size_t cols = 0;
    for (std::size_t r = 0; r < list.items.size(); ++r) {
        const ast::array_literal* row = as_list(list.items[r]);
        if (!row) {
            diag_.error(at(*as_expression(list.items[r]), lit.loc),
                        "a matrix literal mixes rows and numbers; write it as a list of rows, e.g. [[1, 0.5], [0.5, 1]]");
            return std::nullopt;
        }
        const Location row_loc = list_at(*row, lit.loc);
        if (r == 0) cols = row->items.size();
        if (row->items.empty()) {
            diag_.error(row_loc, "empty row; each row of a matrix literal needs at least one number");
            return std::nullopt;
        }
        if (row->items.size() != cols) {
            diag_.error(row_loc, fmt::format("row {} of this matrix has {} entries but row 1 has {}; all rows need the same "
                                             "number of entries",
                                             r + 1, row->items.size(), cols));
            return std::nullopt;
        }
        for (const auto& item : row->items) {
            if (const auto* e = as_expression(item)) number(*e, row_loc);
            else {
                diag_.error(list_at(*as_list(item), row_loc),
                            "lists nested more than two deep; a matrix literal is a list of rows, e.g. [[1, 0.5], [0.5, 1]]");
                return std::nullopt;
            }
        }
    }
    lit.shape = {static_cast<int>(list.items.size()), static_cast<int>(cols)};
    return ok ? std::optional<Literal>(lit) : std::nullopt;
}

}  // namespace vbn::lang
