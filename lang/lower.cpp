// lang::lower and lang::compile: runs the lowering passes (lower_state.hpp) and reports
// their diagnostics in the order of the text.
#include "lang/frontend.hpp"
#include "lang/lower_state.hpp"

#include <algorithm>
#include <cctype>
#include <climits>

#include <fmt/format.h>

namespace vbn::lang {

namespace lowering {

namespace {
bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Byte offset of `name` as a whole word inside the span of `node`, or npos.
std::size_t find_word(const SourceMap& map, const boost::spirit::x3::position_tagged& node, const std::string& name) {
    const auto [begin, end] = map.span(node);
    if (name.empty() || end <= begin) return std::string::npos;
    const std::string& text = map.source().text();
    for (std::size_t pos = text.find(name, begin); pos != std::string::npos && pos + name.size() <= end;
         pos = text.find(name, pos + 1)) {
        const bool starts = pos == 0 || !is_name_char(text[pos - 1]);
        const bool ends = pos + name.size() >= text.size() || !is_name_char(text[pos + name.size()]);
        if (starts && ends) return pos;
    }
    return std::string::npos;
}
}  // namespace

Location Lowering::name_at(const ast::identifier& id, const boost::spirit::x3::position_tagged& enclosing,
                           Location fallback) const {
    const Location tagged = map.where(id);
    if (tagged.line > 0) return tagged;
    const std::size_t pos = find_word(map, enclosing, id.name);
    return pos == std::string::npos ? fallback : map.source().locate(pos);
}

Location Lowering::bracket_after(const std::string& name, const boost::spirit::x3::position_tagged& enclosing,
                                 Location fallback) const {
    std::size_t pos = find_word(map, enclosing, name);
    if (pos == std::string::npos) return fallback;
    const std::string& text = map.source().text();
    auto skip_space = [&] {
        while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\r' || text[pos] == '\n')) ++pos;
    };
    pos += name.size();
    skip_space();
    if (pos >= text.size() || text[pos] != '[') return fallback;
    ++pos;
    skip_space();
    return map.source().locate(pos);
}

std::string name_list(const std::vector<std::string>& names, std::size_t limit) {
    std::string out;
    const std::size_t shown = std::min(names.size(), limit);
    for (std::size_t k = 0; k < shown; ++k) {
        if (k > 0) out += (k + 1 == shown && shown == names.size()) ? " and " : ", ";
        out += names[k];
    }
    if (shown < names.size()) out += fmt::format(" and {} more", names.size() - shown);
    return out;
}

namespace {

void add_variable(Lowering& s, const ast::identifier& name, const boost::spirit::x3::position_tagged& decl_node,
                  ir::VariableKind kind, bool hidden, const boost::optional<int>& size, const ast::node_decl* decl) {
    const Location loc = s.name_at(name, decl_node, s.at(decl_node));
    const auto known = s.variable_by_name.find(name.name);
    const bool duplicate = known != s.variable_by_name.end();
    if (duplicate) {
        const ir::Variable& first = s.variable(known->second);
        s.diag.error(loc, fmt::format("duplicate name '{}'; a {} '{}' is already declared on line {}, and names must be unique",
                                      name.name, first.kind == ir::VariableKind::binary ? "node" : "covariate", name.name,
                                      first.loc.line));
    }
    ir::Variable v;
    v.name = name.name;
    v.kind = kind;
    v.hidden = hidden;
    v.loc = loc;
    v.is_array = size.has_value();
    v.size = size ? *size : 1;
    if (v.size < 1) {
        s.diag.error(s.bracket_after(name.name, decl_node, loc),
                     fmt::format("array size must be at least 1, found {}; write '{}' for a single {}", v.size, name.name,
                                 kind == ir::VariableKind::binary ? "node" : "covariate"));
        v.size = 1;  // still declared, so its uses do not cascade into more errors
    } else if (static_cast<long>(s.g.elements.size()) + v.size > s.limits.elements) {
        if (v.is_array)
            s.diag.error(s.bracket_after(name.name, decl_node, loc),
                         fmt::format("array size {} is too large; a model holds at most {} node and covariate elements",
                                     v.size, s.limits.elements));
        else
            s.diag.error(loc, fmt::format("the model is too large: with '{}' it has more than {} node and covariate "
                                          "elements",
                                          name.name, s.limits.elements));
        v.size = 1;
    }
    v.first_element = static_cast<int>(s.g.elements.size());
    const int index = static_cast<int>(s.g.variables.size());
    for (int k = 0; k < v.size; ++k) {
        ir::Element e;
        e.variable = index;
        e.index = k;
        e.name = v.is_array ? fmt::format("{}[{}]", v.name, k + 1) : v.name;
        e.binary = kind == ir::VariableKind::binary;
        e.hidden = hidden;
        s.g.elements.push_back(e);
    }
    if (!duplicate) s.variable_by_name.emplace(v.name, index);
    s.g.variables.push_back(std::move(v));
    s.node_decls.push_back(decl);
    s.duplicate.push_back(duplicate);
}

void collect_parameter_names(Lowering& s, const ast::node_decl& d) {
    const auto* logistic = boost::get<ast::logistic_dist>(&d.dist.get());
    if (!logistic) return;
    for (const auto& t : logistic->linear.terms) {
        if (const auto* id = boost::get<ast::identifier>(&t.coef.get())) s.parameter_names.insert(id->name);
        // `2 * w * h`: the name between the constant and the parents is the parameter
        // unless it is a node or covariate (lower_nodes.cpp decides, names known by then).
        else if (!t.middle.name.empty() && boost::get<ast::expression>(&t.coef.get()))
            s.parameter_names.insert(t.middle.name);
    }
}

void declare(Lowering& s, const ast::program& program) {
    for (const auto& st : program.statements) {
        const auto& v = st.get();
        if (const auto* d = boost::get<ast::node_decl>(&v)) {
            add_variable(s, d->name, *d, ir::VariableKind::binary, d->hidden, d->size, d);
            collect_parameter_names(s, *d);
        } else if (const auto* c = boost::get<ast::covariate_decl>(&v)) {
            add_variable(s, c->name, *c, ir::VariableKind::covariate, false, c->size, nullptr);
        } else if (boost::get<ast::param_decl>(&v)) {
            continue;  // declare_params, once every variable's name is known
        } else {
            for (const auto& id : boost::get<ast::prior_stmt>(v).params) s.parameter_names.insert(id.name);
        }
    }
    declare_params(s, program);
    s.g.cpds.resize(s.g.elements.size());
    s.weights.resize(s.g.elements.size());
    const bool any_node = std::any_of(s.g.variables.begin(), s.g.variables.end(),
                                      [](const ir::Variable& v) { return v.kind == ir::VariableKind::binary; });
    if (!any_node)
        s.diag.error({}, "the model declares no nodes; a model needs at least one, e.g. 'node y ~ bernoulli(0.5);'");
}

// Diagnostics in the order of the text, so a long list reads top to bottom; messages about
// the file as a whole come last.
void report_in_text_order(const Diagnostics& local, Diagnostics& out) {
    std::vector<Diagnostic> items = local.items();
    auto key = [](const Diagnostic& d) {
        return std::pair(d.location.line > 0 ? d.location.line : INT_MAX, d.location.column);
    };
    std::stable_sort(items.begin(), items.end(), [&](const Diagnostic& a, const Diagnostic& b) { return key(a) < key(b); });
    for (auto& d : items) {
        if (d.severity == Severity::warning) out.warning(d.location, std::move(d.message));
        else out.error(d.location, std::move(d.message));
    }
}

}  // namespace
}  // namespace lowering

std::optional<ir::Graph> lower(const ast::program& program, const SourceMap& map, Diagnostics& diag,
                               const Limits& limits) {
    Diagnostics local{map.source()};
    lowering::Lowering s{map, local, limits};
    lowering::declare(s, program);
    lowering::lower_nodes(s);
    lowering::check_declared_used(s);
    lowering::lower_priors(s, program);
    lowering::order_graph(s);
    if (!local.has_errors()) lowering::build_blocks(s);
    lowering::report_in_text_order(local, diag);
    if (local.has_errors()) return std::nullopt;
    s.g.name = map.source().name();
    return std::move(s.g);
}

std::optional<ir::Graph> compile(const Source& source, Diagnostics& diag, const Limits& limits) {
    ast::program program;
    SourceMap map{source};
    // Lowering a tree with syntax errors would only add confusing follow-on messages.
    if (!parse(source, program, map, diag)) return std::nullopt;
    auto graph = lower(program, map, diag, limits);
    if (graph) graph->name = source.name();
    return graph;
}

}  // namespace vbn::lang
