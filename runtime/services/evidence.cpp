#include "runtime/services/evidence.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

namespace vbn::services {

EvidenceRun evidence(const ir::Graph& graph, const Dataset& data, const EvidenceSettings& settings, const Callbacks& callbacks) {
    VbOptions vo = settings.vb;
    if (callbacks.interrupt) vo.cancel = callbacks.interrupt;
    const VbFit q = vbn::variational(graph, data, vo).best_fit();
    std::string why;
    const auto e = model_evidence(graph, data, q, settings.evidence, settings.max_enumerated, &why);
    if (!e) throw Error(ErrorKind::limit, fmt::format("{}: no log evidence: {}", graph.name, why));
    return EvidenceRun{q.elbo, *e};
}

}  // namespace vbn::services
