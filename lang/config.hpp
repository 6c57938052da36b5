// The types the grammar is instantiated with: iterator, skipper and context.
// The one translation unit that instantiates the grammar (parser.cpp) and every caller of
// it must agree on these.
#pragma once

#include <boost/spirit/home/x3.hpp>
#include <boost/spirit/home/x3/support/utility/error_reporting.hpp>

#include <functional>
#include <string>

namespace vbn::lang::parser {

namespace x3 = boost::spirit::x3;

using iterator_type = std::string::const_iterator;

// Whitespace and comments. Written by hand rather than with X3 character classes: the
// classes assert on bytes above 0x7F, and model files may hold any bytes.
// An unterminated block comment is not skipped: the front end reports it before parsing
// and never hands the parser text beyond it.
template <typename Iterator>
Iterator skip_blanks(Iterator first, Iterator last) {
    while (first != last) {
        const char c = *first;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ++first;
            continue;
        }
        if (c != '/' || std::next(first) == last) break;
        const char d = *std::next(first);
        if (d == '/') {
            while (first != last && *first != '\n') ++first;
        } else if (d == '*') {
            Iterator i = std::next(first, 2);
            bool closed = false;
            for (; i != last; ++i) {
                if (*i == '*' && std::next(i) != last && *std::next(i) == '/') {
                    closed = true;
                    break;
                }
            }
            if (!closed) break;
            first = std::next(i, 2);
        } else {
            break;
        }
    }
    return first;
}

struct skipper_type : x3::parser<skipper_type> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;

    template <typename Iterator, typename Context, typename RContext, typename Attribute>
    bool parse(Iterator& first, Iterator const& last, Context const&, RContext&, Attribute&) const {
        const Iterator next = skip_blanks(first, last);
        if (next == first) return false;
        first = next;
        return true;
    }
};

inline constexpr skipper_type skipper{};

class error_handler;  // error_handler.hpp: the parse state reached through the context

using phrase_context_type = x3::phrase_parse_context<skipper_type>::type;
using context_type =
    x3::context<x3::error_handler_tag, std::reference_wrapper<error_handler>, phrase_context_type>;

}  // namespace vbn::lang::parser
