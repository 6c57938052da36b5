// Test helper: an ir::Graph holding only variables and their elements, which is all the
// data side (CSV loader, DatasetBuilder) reads.
#pragma once

#include "lang/ir.hpp"

#include <string>
#include <vector>

namespace vbn::test {

struct Var {
    std::string name;
    ir::VariableKind kind = ir::VariableKind::binary;
    bool hidden = false;
    int size = 0;  // 0: scalar
};

// Only what the data side reads: variables and their elements.
inline ir::Graph make_graph(const std::vector<Var>& vars) {
    ir::Graph g;
    g.name = "test.vbn";
    for (const Var& v : vars) {
        ir::Variable var;
        var.name = v.name;
        var.kind = v.kind;
        var.hidden = v.hidden;
        var.is_array = v.size > 0;
        var.size = v.size > 0 ? v.size : 1;
        var.first_element = static_cast<int>(g.elements.size());
        for (int k = 0; k < var.size; ++k) {
            ir::Element el;
            el.variable = static_cast<int>(g.variables.size());
            el.index = k;
            el.name = var.is_array ? v.name + "[" + std::to_string(k + 1) + "]" : v.name;
            el.binary = v.kind == ir::VariableKind::binary;
            el.hidden = v.hidden;
            g.elements.push_back(el);
        }
        g.variables.push_back(var);
    }
    g.cpds.resize(g.elements.size());
    return g;
}

}  // namespace vbn::test
