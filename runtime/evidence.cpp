#include "runtime/evidence.hpp"

#include "inference/gaussian.hpp"
#include "inference/math.hpp"
#include "inference/psis.hpp"
#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/fit.hpp"
#include "runtime/target.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

namespace vbn {

Evidence estimate_evidence(const Target& target, const VbFit& q, const EvidenceOptions& options) {
    if (options.draws < 10)
        throw Error(ErrorKind::usage, fmt::format("evidence: at least 10 importance draws are needed, got {}", options.draws));
    if (!(options.inflation > 0) || !(options.df > 0))
        throw Error(ErrorKind::usage, "evidence: the proposal's inflation and degrees of freedom must be positive");
    if (q.mean.size() != target.dim())
        throw Error(ErrorKind::usage, fmt::format("evidence: the variational fit has {} parameters, the model {}",
                                                  q.mean.size(), target.dim()));
    Evidence e;
    e.draws = options.draws;
    if (target.dim() == 0) {
        // Nothing to integrate: the evidence is the likelihood itself.
        e.log_evidence = target.log_density(Eigen::VectorXd()) + target.log_constant();
        e.draws = 0;  // exact: no draws, no k̂
        e.pareto_k = std::numeric_limits<double>::quiet_NaN();
        return e;
    }
    inference::GaussianProposal proposal = [&] {
        try {
            inference::GaussianProposal p(q.mean, q.cov, options.df);
            p.inflate(options.inflation);
            return p;
        } catch (const std::invalid_argument& ex) {
            throw Error(ErrorKind::inference, fmt::format("evidence: the variational posterior is no proposal: {}", ex.what()));
        }
    }();
    inference::Rng rng(options.seed, options.stream);
    auto ws = target.make_workspace();
    Eigen::VectorXd theta(target.dim());
    Eigen::VectorXd log_ratio(options.draws);
    for (int s = 0; s < options.draws; ++s) {
        proposal.sample(rng, theta);
        const double lp = target.log_density(theta, ws);
        log_ratio[s] = std::isnan(lp) ? -std::numeric_limits<double>::infinity() : lp - proposal.log_density(theta);
    }
    const double top = log_ratio.maxCoeff();
    if (!std::isfinite(top))
        throw Error(ErrorKind::inference, "evidence: every importance ratio is zero or not finite");
    const Eigen::ArrayXd w = (log_ratio.array() - top).exp();
    const double mean = w.mean();
    const double var = (w - mean).square().sum() / (options.draws - 1);
    e.log_evidence = top + std::log(mean) + target.log_constant();
    e.se = std::sqrt(var / options.draws) / mean;
    e.pareto_k = inference::pareto_k(log_ratio);
    return e;
}

std::optional<Evidence> model_evidence(const ir::Graph& graph, const Dataset& data, const VbFit& q,
                                       const EvidenceOptions& options, int max_enumerated, std::string* why_not) {
    std::unique_ptr<Target> target;
    try {
        target = make_target(graph, data, max_enumerated);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;
        if (why_not) *why_not = e.what();
        return std::nullopt;
    }
    return estimate_evidence(*target, q, options);
}

std::string format_evidence(const Evidence& e) {
    if (e.draws == 0) return fmt::format("log evidence {:.6f} (exact: the model has no parameters)\n", e.log_evidence);
    return fmt::format("log evidence {:.6f} ± {:.6f} (importance sampling, {} draws from the widened variational "
                       "posterior)\nPareto k-hat {:.3f}: {}\n",
                       e.log_evidence, e.se, e.draws, e.pareto_k, pareto_k_reading(e.pareto_k));
}

std::string pareto_k_reading(double k) {
    if (k <= 0.5) return "good: the importance ratios have finite variance; the estimate is reliable";
    if (k <= 0.7) return "ok: the estimate is usable, but the variational posterior misses some of the posterior's tails";
    return "unreliable: the variational posterior misses much of the posterior (e.g. a mode), so the estimate and its "
           "standard error cannot be trusted";
}

}  // namespace vbn
