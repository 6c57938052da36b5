// Components summed out by variable elimination: log Σ_x Π_j g(x_j η_j(x)) one variable at a
// time along the component's elimination order (Component::order), in log space, and its
// gradient from the posterior marginals of each factor's scope.
//
// Bucket elimination: each factor goes to the bucket of its first-eliminated variable v.
// Eliminating v, the bucket's factors and the messages of earlier buckets are added (logs)
// over v's clique (v and the variables it still shares a table with), and v is summed out
// (log-sum-exp) into a message over the rest, which goes to the bucket of the first of those
// eliminated: a tree of cliques. The last message is log Z. The gradient of log Z is the
// posterior expectation of each factor's gradient x_j g(−x_j η_j) ∂η_j/∂θ; a backward pass
// down the tree gives each clique's posterior marginal as p(v | rest) p(rest), with
// p(v | rest) = e^{L − message} from the forward pass and p(rest) summed from the parent
// clique's marginal. Cost: Σ 2^|clique| terms, 2^width at most, instead of 2^m.
//
// Plans are built once (the cliques, where each message is read); scratch memory is sized
// once for the largest plan, so an evaluation allocates nothing.
#pragma once

#include "runtime/target/families.hpp"

#include <Eigen/Core>

#include <vector>

namespace vbn {

class Eliminator {
public:
    using In = Eigen::Ref<const Eigen::VectorXd>;

    struct Scratch {
        std::vector<double> logs;      // per clique configuration: L, the forward pass's sum of logs
        std::vector<double> messages;  // per bucket, over its clique without v: log Σ_v e^L
        std::vector<double> marginal;  // per clique configuration: its posterior probability
        std::vector<double> rest;      // per bucket: the posterior of its clique without v
        std::vector<double> eta0;      // per factor: the observed part of η
        std::vector<double> coef;      // per link: its coefficient at θ
        std::vector<double> resid;     // per factor: E[x_j g(−x_j η_j)]
        std::vector<double> link_acc;  // per link: E[x_j g(−x_j η_j) x_var]
    };

    Eliminator() = default;
    // Plans for the components with an elimination order; block_offsets[b]: where block b
    // starts in θ.
    Eliminator(const Families& families, std::vector<int> block_offsets);

    bool has(int c) const { return plan_index(c) >= 0; }
    int plans() const { return static_cast<int>(plans_.size()); }
    Scratch make_scratch() const;
    // weight · log Σ_x Π_j g(x_j η_j(x)) of component c (which must have a plan); with grad
    // (full-θ layout, or block only_block's), adds the gradient of its factors of block
    // only_block (of every block when only_block < 0).
    double component(int c, double weight, In theta, double* grad, int only_block, Scratch& s) const;

private:
    struct Bucket {
        int size = 0;                       // clique variables; the eliminated one is bit 0
        int first_factor = 0, end_factor = 0;  // into Plan::factors
        int first_child = 0, end_child = 0;    // into Plan::children
        int parent = -1;                    // the bucket its message goes to, -1 for a root
        int first_pos = 0;                  // into Plan::pos: where each of its clique's other
                                            // variables sits in the parent's clique
        long logs_at = 0, message_at = 0;   // offsets in Scratch::logs and Scratch::messages
    };
    struct PlannedFactor {
        int factor = 0;      // index in the component
        int self_bit = -1;   // its own variable's bit in the bucket's clique, -1 when observed
        int first_link = 0;  // its first link in the component's links, in factor order
        int first_bit = 0;   // into Plan::link_bits: each link's variables' bits in the clique, a mask
    };
    struct Plan {
        std::vector<Factor> factors_of;     // the component's factors (as Families holds them)
        std::vector<Bucket> buckets;        // in elimination order: children before parents
        std::vector<PlannedFactor> factors; // by bucket
        std::vector<int> children;          // by bucket
        std::vector<int> pos;
        std::vector<int> link_bits;
        int links = 0;                      // Σ links over the component's factors
        long logs_size = 0, messages_size = 0;
    };

    int plan_index(int c) const {
        return c >= 0 && static_cast<std::size_t>(c) < plan_of_.size() ? plan_of_[static_cast<std::size_t>(c)] : -1;
    }
    static Plan make_plan(const Component& comp);
    // The forward pass: every bucket's L and message; returns log Z.
    double forward(const Plan& p, Scratch& s) const;
    // The backward pass: every clique's marginal and the factors' expectations.
    void backward(const Plan& p, bool all_blocks, int only_block, Scratch& s) const;
    // η of a planned factor at a clique configuration, and its own value x_j there.
    static double factor_eta(const Plan& p, const PlannedFactor& pf, int config, const Scratch& s, double& x);
    // The gradient from the factors' expectations (Scratch::resid, link_acc), times weight.
    void scatter(const Plan& p, double weight, int only_block, double* grad, const Scratch& s) const;

    std::vector<int> offsets_;
    std::vector<Plan> plans_;
    std::vector<int> plan_of_;  // per component: its plan, or -1
};

}  // namespace vbn
