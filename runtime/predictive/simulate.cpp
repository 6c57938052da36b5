#include "runtime/predictive/simulate.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace vbn {

namespace {
std::string shape_text(const std::vector<int>& shape) {
    if (shape.empty()) return "a scalar";
    if (shape.size() == 1) return fmt::format("a vector of {}", shape[0]);
    return fmt::format("a {}x{} matrix (an array of {} rows of {})", shape[0], shape[1], shape[0], shape[1]);
}
}  // namespace

void theta_from_json(const ir::Graph& graph, const nlohmann::json& params, Eigen::VectorXd& theta,
                     std::vector<std::string>* given) {
    if (!params.is_object())
        throw Error(ErrorKind::usage, R"(parameters must be a JSON object such as {"w": [2, -1]})");
    if (theta.size() != graph.dim) theta = Eigen::VectorXd::Zero(graph.dim);
    for (const auto& item : params.items()) {
        // Named copies rather than a structured binding: lambdas below use them, which
        // Clang before 16 does not allow for bindings.
        const std::string& name = item.key();
        const nlohmann::json& value = item.value();
        auto it = std::find_if(graph.parameters.begin(), graph.parameters.end(),
                               [&](const ir::Parameter& p) { return p.name == name; });
        if (it == graph.parameters.end()) {
            std::string known;
            for (const auto& p : graph.parameters) known += (known.empty() ? "" : ", ") + p.name;
            throw Error(ErrorKind::usage, fmt::format("parameter '{}' is not in the model; its parameters are: {}", name,
                                                      known.empty() ? "(none)" : known));
        }
        const ir::Parameter& p = *it;
        std::vector<double> flat;
        auto number = [&](const nlohmann::json& v) {
            if (!v.is_number())
                throw Error(ErrorKind::usage, fmt::format("parameter '{}': expected {}", name, shape_text(p.shape)));
            const double x = v.get<double>();
            if (!std::isfinite(x)) throw Error(ErrorKind::usage, fmt::format("parameter '{}': values must be finite", name));
            flat.push_back(x);
        };
        bool ok = true;
        if (p.shape.empty()) {
            if (value.is_array() && value.size() == 1) number(value[0]);
            else number(value);
        } else if (p.shape.size() == 1) {
            ok = value.is_array() && static_cast<int>(value.size()) == p.shape[0];
            if (ok) for (const auto& v : value) number(v);
        } else {
            ok = value.is_array() && static_cast<int>(value.size()) == p.shape[0];
            for (std::size_t r = 0; ok && r < value.size(); ++r) {
                ok = value[r].is_array() && static_cast<int>(value[r].size()) == p.shape[1];
                if (ok) for (const auto& v : value[r]) number(v);
            }
        }
        if (!ok) throw Error(ErrorKind::usage, fmt::format("parameter '{}': expected {}", name, shape_text(p.shape)));
        if (p.scale >= 0 && !(flat[0] > 0))
            throw Error(ErrorKind::usage, fmt::format("parameter '{}': a learned scale must be positive", name));
        // θ holds a learned scale's log (ir::Graph::constrain).
        for (std::size_t e = 0; e < flat.size(); ++e) theta[p.theta_index[e]] = graph.unconstrain(p.theta_index[e], flat[e]);
        if (given) given->push_back(name);
    }
}

nlohmann::ordered_json theta_to_json(const ir::Graph& graph, const Eigen::VectorXd& theta) {
    using json = nlohmann::ordered_json;
    json out = json::object();
    for (const auto& p : graph.parameters) {
        if (p.shape.empty()) {
            out[p.name] = graph.constrain(p.theta_index[0], theta[p.theta_index[0]]);
        } else if (p.shape.size() == 1) {
            auto& a = out[p.name] = json::array();
            for (int k : p.theta_index) a.push_back(theta[k]);
        } else {
            auto& a = out[p.name] = json::array();
            for (int r = 0; r < p.shape[0]; ++r) {
                json row = json::array();
                for (int c = 0; c < p.shape[1]; ++c) row.push_back(theta[p.theta_index[static_cast<std::size_t>(r * p.shape[1] + c)]]);
                a.push_back(row);
            }
        }
    }
    return out;
}

double linear_predictor(const ir::Graph& g, int e, const Eigen::Ref<const Eigen::VectorXd>& theta,
                        const std::vector<double>& x) {
    const ir::Cpd& c = g.cpds[static_cast<std::size_t>(e)];
    double eta = c.offset;
    for (const auto& t : c.fixed) {
        double term = t.coef * x[static_cast<std::size_t>(t.element)];
        for (int e : t.also) term *= x[static_cast<std::size_t>(e)];  // a product of parents
        eta += term;
    }
    if (c.block >= 0) {
        const ir::Block& b = g.blocks[static_cast<std::size_t>(c.block)];
        for (const ir::Feature& f : c.features) {
            double v = f.element < 0 ? 1.0 : x[static_cast<std::size_t>(f.element)];
            for (int e : f.also) v *= x[static_cast<std::size_t>(e)];  // a product of parents
            eta += theta[b.offset + static_cast<Eigen::Index>(f.weight)] * f.sign * v;
        }
    }
    return eta;
}

void simulate_csv(const ir::Graph& graph, const Eigen::VectorXd& theta, const SimulateOptions& options,
                  inference::Rng& rng, std::ostream& out) {
    const auto n = graph.elements.size();
    std::vector<int> columns;
    for (std::size_t e = 0; e < n; ++e)
        if (!graph.elements[e].hidden || options.include_hidden) columns.push_back(static_cast<int>(e));

    std::string line;
    for (std::size_t c = 0; c < columns.size(); ++c) {
        if (c) line += ',';
        line += graph.elements[static_cast<std::size_t>(columns[c])].name;
    }
    out << line << '\n';

    std::vector<double> x(n, 0.0);
    fmt::memory_buffer buf;
    for (long t = 0; t < options.rows; ++t) {
        for (std::size_t e = 0; e < n; ++e)
            if (!graph.elements[e].binary) x[e] = rng.normal();
        for (int e : graph.topological_order)
            x[static_cast<std::size_t>(e)] = rng.uniform() < inference::inv_logit(linear_predictor(graph, e, theta, x)) ? 1.0 : -1.0;
        buf.clear();
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const auto e = static_cast<std::size_t>(columns[c]);
            if (c) buf.push_back(',');
            if (graph.elements[e].binary) fmt::format_to(std::back_inserter(buf), "{}", x[e] > 0 ? "1" : "-1");
            else fmt::format_to(std::back_inserter(buf), "{:.17g}", x[e]);
        }
        buf.push_back('\n');
        out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    }
}

}  // namespace vbn
