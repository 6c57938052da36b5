#include "lang/ir.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace vbn::ir {

namespace {
// Finds the parameter and the row-major element that θ's entry k belongs to: the first
// parameter, in order, that holds k, and its first element that does.
bool locate_theta(const Graph& g, int k, const Parameter*& param, int& element) {
    if (k >= 0 && static_cast<std::size_t>(k) < g.theta_owner.size()) {
        const auto [i, e] = g.theta_owner[static_cast<std::size_t>(k)];
        if (i >= 0 && static_cast<std::size_t>(i) < g.parameters.size()) {
            const Parameter& p = g.parameters[static_cast<std::size_t>(i)];
            if (e >= 0 && static_cast<std::size_t>(e) < p.theta_index.size() && p.theta_index[static_cast<std::size_t>(e)] == k) {
                param = &p;
                element = e;
                return true;
            }
        }
    }
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

void Graph::index_theta() {
    theta_owner.assign(static_cast<std::size_t>(std::max(dim, 0)), {-1, -1});
    for (std::size_t i = 0; i < parameters.size(); ++i)
        for (std::size_t e = 0; e < parameters[i].theta_index.size(); ++e) {
            const int k = parameters[i].theta_index[e];
            if (k < 0 || k >= dim || theta_owner[static_cast<std::size_t>(k)].first >= 0) continue;
            theta_owner[static_cast<std::size_t>(k)] = {static_cast<int>(i), static_cast<int>(e)};
        }
}

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

double Graph::constrain(int k, double value) const { return is_scale(k) ? std::exp(value) : value; }

double Graph::unconstrain(int k, double value) const { return is_scale(k) ? std::log(value) : value; }

std::vector<int> Graph::parents(int element) const {
    std::vector<int> out;
    const Cpd& c = cpds[static_cast<std::size_t>(element)];
    out.reserve(c.fixed.size() + c.features.size());
    for (const auto& t : c.fixed) {
        if (t.element >= 0) out.push_back(t.element);
        out.insert(out.end(), t.also.begin(), t.also.end());
    }
    for (const auto& f : c.features) {
        if (f.element >= 0) out.push_back(f.element);
        out.insert(out.end(), f.also.begin(), f.also.end());
    }
    // Each parent once, at its first place. A linear search per entry suits the usual
    // handful, but `0.3 * h` on an array of thousands gives an element thousands of fixed
    // terms, and quadratic work per element made such a model (within the language's limits)
    // take minutes to lower: past a few dozen entries, look them up in a sorted copy.
    std::size_t kept = 0;
    if (out.size() <= 32) {
        for (const int e : out)
            if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(kept), e) ==
                out.begin() + static_cast<std::ptrdiff_t>(kept))
                out[kept++] = e;
    } else {
        std::vector<int> sorted(out);
        std::sort(sorted.begin(), sorted.end());
        std::vector<char> seen(sorted.size(), 0);
        for (const int e : out) {
            const auto i = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), e) - sorted.begin());
            if (seen[i]) continue;
            seen[i] = 1;
            out[kept++] = e;
        }
    }
    out.resize(kept);
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
