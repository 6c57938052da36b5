#include "lang/ir.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace vbn::ir {

namespace {
// Finds the parameter and the row-major element that θ's entry k belongs to.
bool locate_theta(const Graph& g, int k, const Parameter*& param, int& element) {
    for (const auto& p : g.parameters) {
        auto it = std::find(p.theta_index.begin(), p.theta_index.end(), k);
        if (it != p.theta_index.end()) {
            param = &p;
            element = static_cast<int>(it - p.theta_index.begin());
            return true;
        }
    }
    return false;
}

std::string element_name(const Parameter& p, int e, const char* open, const char* sep, const char* close) {
    if (p.shape.empty()) return p.name;
    if (p.shape.size() == 1) return fmt::format("{}{}{}{}", p.name, open, e + 1, close);
    const int cols = p.shape[1];
    return fmt::format("{}{}{}{}{}{}", p.name, open, e / cols + 1, sep, e % cols + 1, close);
}
}  // namespace

std::string Graph::theta_name(int k) const {
    const Parameter* p = nullptr;
    int e = 0;
    if (!locate_theta(*this, k, p, e)) return fmt::format("theta[{}]", k + 1);
    return element_name(*p, e, "[", ",", "]");
}

std::string Graph::theta_csv_name(int k) const {
    const Parameter* p = nullptr;
    int e = 0;
    if (!locate_theta(*this, k, p, e)) return fmt::format("theta.{}", k + 1);
    return element_name(*p, e, ".", ".", "");
}

std::vector<int> Graph::parents(int element) const {
    std::vector<int> out;
    const Cpd& c = cpds[static_cast<std::size_t>(element)];
    auto add = [&](int e) {
        if (e >= 0 && std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    };
    for (const auto& t : c.fixed) add(t.element);
    for (const auto& f : c.features) add(f.element);
    return out;
}

std::vector<int> Graph::children(int element) const {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(elements.size()); ++i) {
        const auto ps = parents(i);
        if (std::find(ps.begin(), ps.end(), element) != ps.end()) out.push_back(i);
    }
    return out;
}

int Graph::find_variable(const std::string& name) const {
    for (int i = 0; i < static_cast<int>(variables.size()); ++i)
        if (variables[static_cast<std::size_t>(i)].name == name) return i;
    return -1;
}

bool Graph::has_hidden() const {
    return std::any_of(elements.begin(), elements.end(), [](const Element& e) { return e.hidden; });
}

}  // namespace vbn::ir
