// The parser's side of diagnostics: tagging AST nodes with their place in the source, and
// turning X3 expectation failures into messages that say what was expected, in words.
//
// One error_handler lives for one parse. The grammar reaches it through the X3 context
// (x3::error_handler_tag), which is how x3::annotate_on_success finds it, and it also keeps
// the nesting depth, so deeply nested input gives an error instead of a stack overflow.
#pragma once

#include "lang/config.hpp"
#include "lang/diagnostics.hpp"
#include "lang/frontend.hpp"

#include <boost/spirit/home/x3/support/ast/position_tagged.hpp>
#include <boost/spirit/home/x3/support/utility/error_reporting.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace vbn::lang::parser {

// Deepest nesting of parentheses, unary signs, function calls and array literals. Far
// beyond any real model; low enough that the recursive descent fits on a small thread stack
// (measured: about 0.7 KB of stack per level in an optimised build, 5 KB unoptimised).
inline constexpr int max_nesting = 100;

class error_handler {
public:
    // [begin, end) is the text being parsed; `map` receives node spans, `diag` the errors.
    error_handler(iterator_type begin, iterator_type end, SourceMap& map, Diagnostics& diag)
        : begin_(begin), end_(end), map_(map), diag_(diag) {}

    // x3::annotate_on_success calls this for every node a tagged rule produced.
    template <typename Node>
    void tag(Node& node, iterator_type first, iterator_type last) {
        if constexpr (std::is_base_of_v<x3::position_tagged, Node>) {
            const int id = next_id_++;
            map_.record(id, offset(first), offset(last));
            node.id_first = id;
            node.id_last = id;
        } else if constexpr (is_forward_ast<Node>::value) {
            tag(node.get(), first, last);
        }
    }

    // Reports that `which` (a rule name of the grammar) was expected at `where`.
    void expected(std::string_view which, iterator_type where);
    // Reports that no statement starts at `where`.
    void no_statement(iterator_type where);
    // Where the last reported error was, so the caller can resume after it.
    iterator_type last_error() const { return last_error_; }

    // Nesting depth, kept by the grammar's nesting guard.
    int& depth() { return depth_; }

    std::size_t offset(iterator_type it) const { return static_cast<std::size_t>(it - begin_); }

private:
    template <typename T>
    struct is_forward_ast : std::false_type {};
    template <typename T>
    struct is_forward_ast<x3::forward_ast<T>> : std::true_type {};

    iterator_type begin_;
    iterator_type end_;
    SourceMap& map_;
    Diagnostics& diag_;
    iterator_type last_error_{};
    int next_id_ = 0;
    int depth_ = 0;
};

// Rule tag classes that end a unit of error recovery (a statement) derive from this: an
// expectation failure anywhere inside becomes one diagnostic, and the rule fails quietly.
struct error_handler_base {
    template <typename Iterator, typename Exception, typename Context>
    x3::error_handler_result on_error(Iterator&, Iterator const&, Exception const& x, Context const& context) {
        x3::get<x3::error_handler_tag>(context).get().expected(x.which(), x.where());
        return x3::error_handler_result::fail;
    }
};

}  // namespace vbn::lang::parser
