#include "runtime/variational/evidence.hpp"

#include "runtime/error.hpp"
#include "runtime/target/target.hpp"

#include <fmt/format.h>

#include <limits>
#include <memory>

namespace vbn {

Evidence estimate_evidence(const Target& target, const VbFit& q, const EvidenceOptions& options) {
    Evidence e;
    if (target.dim() == 0) {
        // Nothing to integrate: the evidence is the likelihood itself.
        e.log_evidence = target.log_density(Eigen::VectorXd()) + target.log_constant();
        e.pareto_k = std::numeric_limits<double>::quiet_NaN();
        return e;
    }
    // The proposal is built from the exact posterior's mode and dense Hessian (vb_refine).
    if (target.dim() > max_dense_dim)
        throw Error(ErrorKind::limit,
                    fmt::format("the log evidence's importance sampling needs a dense {0} x {0} Hessian at the posterior "
                                "mode, too large for {0} parameters (at most {1}); the ELBO (vbn vb) is a lower bound "
                                "on the log evidence",
                                target.dim(), max_dense_dim));
    const RefinedPosterior r = refine(target, q, options);
    e.log_evidence = r.log_evidence;
    e.se = r.log_evidence_se;
    e.pareto_k = r.pareto_k;
    e.draws = r.draws;
    e.from_mode = r.from_mode;
    e.tempered = r.tempered;
    e.runs_rhat = r.runs_rhat;
    return e;
}

std::optional<Evidence> model_evidence(const ir::Graph& graph, const Dataset& data, const VbFit& q,
                                       const EvidenceOptions& options, int max_enumerated, std::string* why_not) {
    try {
        const std::unique_ptr<Target> target = make_target(graph, data, max_enumerated);
        return estimate_evidence(*target, q, options);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;
        if (why_not) *why_not = e.what();
        return std::nullopt;
    }
}

std::string pareto_k_reading(double k) {
    if (k <= 0.5) return "good: the importance ratios have finite variance; the estimate is reliable";
    if (k <= 0.7) return "ok: the estimate is usable, but the proposal misses some of the posterior's tails";
    return "unreliable: the proposal misses much of the posterior (e.g. a mode), so the estimate and its "
           "standard error cannot be trusted";
}

}  // namespace vbn
