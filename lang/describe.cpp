#include "lang/describe.hpp"

#include "lang/const_eval.hpp"  // shape_text

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace vbn::lang {

namespace {
std::string number(double x) { return fmt::format("{:g}", x); }

const ir::Element& element(const ir::Graph& g, int e) { return g.elements[static_cast<std::size_t>(e)]; }

void append_term(std::string& out, double sign_times_coef, const std::string& body) {
    // Appended piece by piece: GCC 12 at -O3 misreports `"-" + body` as an overlapping copy.
    if (out.empty()) {
        if (sign_times_coef < 0) out.push_back('-');
    } else {
        out.append(sign_times_coef < 0 ? " - " : " + ");
    }
    out.append(body);
}

// `h` or, for a product of parents, `h*o`.
std::string factors(const ir::Graph& g, int first, const std::vector<int>& also) {
    std::string out = element(g, first).name;
    for (int e : also) out += "*" + element(g, e).name;
    return out;
}

std::string dot_id(const ir::Graph& g, int e) {
    std::string s = element(g, e).name;
    return fmt::format("\"{}\"", s);
}
}  // namespace

std::string predictor_text(const ir::Graph& g, int e) {
    const ir::Cpd& c = g.cpds[static_cast<std::size_t>(e)];
    if (!c.logistic) return fmt::format("bernoulli({})", number(1.0 / (1.0 + std::exp(-c.offset))));
    std::string out;
    if (c.offset != 0) append_term(out, c.offset, number(std::abs(c.offset)));
    for (const auto& f : c.fixed)
        append_term(out, f.coef, fmt::format("{}*{}", number(std::abs(f.coef)), factors(g, f.element, f.also)));
    if (c.block >= 0) {
        const ir::Block& b = g.blocks[static_cast<std::size_t>(c.block)];
        for (const ir::Feature& f : c.features) {
            const std::string w = g.theta_name(b.offset + f.weight);
            // A fixed scale (`2 * w * h`) shows as its number: 2*w*h.
            const double scale = std::abs(f.sign);
            const std::string ws = scale == 1 ? w : fmt::format("{}*{}", number(scale), w);
            append_term(out, f.sign, f.element < 0 ? ws : fmt::format("{}*{}", ws, factors(g, f.element, f.also)));
        }
    }
    return fmt::format("logistic({})", out.empty() ? std::string("0") : out);
}

std::string describe(const ir::Graph& g) {
    int binary = 0, hidden = 0, covariates = 0;
    for (const auto& el : g.elements) {
        if (!el.binary) ++covariates;
        else {
            ++binary;
            if (el.hidden) ++hidden;
        }
    }
    const int weights = g.dim - static_cast<int>(g.scales.size());
    const std::string scales = g.scales.empty() ? ""
                               : fmt::format(" and {} learned scale{}", g.scales.size(), g.scales.size() == 1 ? "" : "s");
    std::string out = fmt::format("model {}: {} binary node{} ({} hidden, {} observed), {} covariate{}, "
                                  "{} parameter{} in {} block{}{}\n",
                                  g.name, binary, binary == 1 ? "" : "s", hidden, binary - hidden, covariates,
                                  covariates == 1 ? "" : "s", weights, weights == 1 ? "" : "s", g.blocks.size(),
                                  g.blocks.size() == 1 ? "" : "s", scales);

    std::size_t width = 4;
    for (const auto& el : g.elements) width = std::max(width, el.name.size());

    out += "\nnodes (parents before children):\n";
    for (int e : g.topological_order) {
        const ir::Cpd& c = g.cpds[static_cast<std::size_t>(e)];
        std::string block = c.block >= 0 ? fmt::format("  [block {}]", c.block + 1) : "";
        out += fmt::format("  {:<{}}  {:<8}  ~ {}{}\n", element(g, e).name, width, element(g, e).hidden ? "hidden" : "observed",
                           predictor_text(g, e), block);
    }
    if (covariates > 0) {
        out += "\ncovariates:\n";
        for (const auto& el : g.elements)
            if (!el.binary) out += fmt::format("  {}\n", el.name);
    }
    if (!g.parameters.empty()) {
        std::size_t pw = 4;
        for (const auto& p : g.parameters) pw = std::max(pw, p.name.size());
        out += "\nparameters:\n";
        for (const auto& p : g.parameters)
            out += fmt::format("  {:<{}}  {:<14} ~ {}\n", p.name, pw, p.scale >= 0 ? "learned scale" : shape_text(p.shape),
                               p.prior);
    }
    if (!g.blocks.empty()) {
        out += "\nblocks (one per logistic node with learned weights):\n";
        for (std::size_t b = 0; b < g.blocks.size(); ++b) {
            const ir::Block& bl = g.blocks[b];
            std::string names;
            for (int k = 0; k < bl.size; ++k) names += (k ? ", " : "") + g.theta_name(bl.offset + k);
            std::string tied;
            for (std::size_t k = 1; k < bl.elements.size(); ++k)
                tied += (k == 1 ? "  tied with " : ", ") + element(g, bl.elements[k]).name;
            out += fmt::format("  {:>3}  {:<{}}  size {:<3} ({}){}{}\n", b + 1, element(g, bl.element).name, width, bl.size,
                               names, bl.prior_diagonal ? "" : "  full prior covariance", tied);
        }
    }
    return out;
}

std::string to_dot(const ir::Graph& g) {
    std::string out = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n", g.name);
    for (std::size_t e = 0; e < g.elements.size(); ++e) {
        const ir::Element& el = g.elements[e];
        const int id = static_cast<int>(e);
        if (!el.binary)
            out += fmt::format("  {} [shape=box];\n", dot_id(g, id));
        else if (el.hidden)
            out += fmt::format("  {} [shape=ellipse, style=dashed];\n", dot_id(g, id));
        else
            out += fmt::format("  {} [shape=ellipse, style=filled, fillcolor=\"#dddddd\"];\n", dot_id(g, id));
    }
    for (std::size_t e = 0; e < g.elements.size(); ++e) {
        const ir::Cpd& c = g.cpds[e];
        const int child = static_cast<int>(e);
        for (const auto& f : c.fixed) {
            out += fmt::format("  {} -> {} [label=\"{}\"];\n", dot_id(g, f.element), dot_id(g, child), number(f.coef));
            for (int e : f.also)
                out += fmt::format("  {} -> {} [label=\"{}\"];\n", dot_id(g, e), dot_id(g, child), number(f.coef));
        }
        if (c.block >= 0) {
            const ir::Block& b = g.blocks[static_cast<std::size_t>(c.block)];
            for (const ir::Feature& f : c.features) {
                if (f.element < 0) continue;
                out += fmt::format("  {} -> {} [label=\"{}{}\"];\n", dot_id(g, f.element), dot_id(g, child),
                                   f.sign < 0 ? "-" : "", g.theta_name(b.offset + f.weight));
                for (int e : f.also)
                    out += fmt::format("  {} -> {} [label=\"{}{}\"];\n", dot_id(g, e), dot_id(g, child),
                                       f.sign < 0 ? "-" : "", g.theta_name(b.offset + f.weight));
            }
        }
    }
    out += "}\n";
    return out;
}

}  // namespace vbn::lang
