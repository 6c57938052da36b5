// Fusion adaptations of the AST structs, so X3 can fill them field by field.
// Kept apart from ast.hpp: only the parser needs them.
#pragma once

#include "lang/ast.hpp"

#include <boost/fusion/include/adapt_struct.hpp>

BOOST_FUSION_ADAPT_STRUCT(vbn::ast::unary, op, operand_)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::call, function, argument)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::operation, op, operand_)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::expression, first, rest)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::parent_ref, name, index)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::parent_list, bracketed, items)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::term, sign, coef, middle, parents)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::node_decl, name, size, hidden, dist)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::covariate_decl, name, size)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::normal_prior, mean, sd)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::mvnormal_prior, mean, cov)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::student_t_prior, nu, mean, scale)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::cauchy_prior, mean, scale)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::half_prior, cauchy, scale)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::precision_gamma_prior, shape, rate)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::prior_stmt, params, dist)
BOOST_FUSION_ADAPT_STRUCT(vbn::ast::param_decl, name, shape)
