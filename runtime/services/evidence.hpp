// The evidence job (`vbn compare`, vbn::api::evidence): log p(data) of a model by the
// variational fit and its importance correction (runtime/variational/evidence.hpp), so that
// the same settings give the numbers `vbn vb` prints.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/services/callbacks.hpp"
#include "runtime/variational/evidence.hpp"
#include "runtime/variational/vb.hpp"

namespace vbn::services {

struct EvidenceSettings {
    VbOptions vb;               // the variational fit the proposal starts from
    EvidenceOptions evidence;   // importance draws and seed
    int max_enumerated = 12;    // unobserved values summed out together, at most
};

struct EvidenceRun {
    double elbo = 0;  // the variational lower bound
    Evidence evidence;
};

// Throws vbn::Error: limit, naming the model, where the exact posterior cannot be built (too
// many unobserved values linked in a row, or too many parameters); usage, inference.
EvidenceRun evidence(const ir::Graph& graph, const Dataset& data, const EvidenceSettings& settings,
                     const Callbacks& callbacks = {});

}  // namespace vbn::services
