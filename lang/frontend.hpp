// The language front end: model text -> AST -> checked IR graph.
//
//   lang::Source src{"m.vbn", text};
//   lang::Diagnostics diag{src};
//   std::optional<ir::Graph> g = lang::compile(src, diag);
//   if (!g) std::cerr << diag.format();
#pragma once

#include "lang/ast.hpp"
#include "lang/diagnostics.hpp"
#include "lang/ir.hpp"
#include "lang/limits.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace vbn::lang {

// Where each position-tagged AST node came from (filled by the parser).
class SourceMap {
public:
    explicit SourceMap(const Source& source) : source_(&source) {}

    // Start of a node in the source; {0, 0} if the node was never tagged.
    Location where(const boost::spirit::x3::position_tagged& node) const;
    // Byte offsets [begin, end) of a node; {0, 0} if never tagged.
    std::pair<std::size_t, std::size_t> span(const boost::spirit::x3::position_tagged& node) const;

    void record(int id, std::size_t begin, std::size_t end);  // used by the parser
    const Source& source() const { return *source_; }

private:
    const Source* source_;
    std::vector<std::pair<std::size_t, std::size_t>> spans_;
};

// Syntax: parses the whole text into `out`, reporting every syntax error it can find
// (after an error it skips to the next ';' and goes on). Returns true if there were none.
bool parse(const Source& source, ast::program& out, SourceMap& map, Diagnostics& diag);

// Semantics: resolves names, evaluates constants, infers shapes, checks the graph and
// builds the IR. Reports every error it can find; returns nullopt if there was any.
std::optional<ir::Graph> lower(const ast::program& program, const SourceMap& map, Diagnostics& diag,
                               const Limits& limits = {});

// parse + lower. The graph's name is the source's name.
std::optional<ir::Graph> compile(const Source& source, Diagnostics& diag, const Limits& limits = {});

}  // namespace vbn::lang
