// The grammar's entry point: one statement of a .vbn model (docs/design.md section 2).
// The front end parses a model statement by statement so that, after a syntax error, it
// can skip to the next ';' and go on reporting. Defined in grammar_def.hpp, instantiated
// once, in parser.cpp.
#pragma once

#include "lang/ast.hpp"
#include "lang/config.hpp"

namespace vbn::lang::parser {

struct statement_class;
using statement_type = x3::rule<statement_class, ast::statement>;
BOOST_SPIRIT_DECLARE(statement_type)

// The statement rule; parse it with a context of type context_type.
const statement_type& statement();

}  // namespace vbn::lang::parser
