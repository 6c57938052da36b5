// The abstract target every sampler works on: a log density over R^d known up to a
// constant, its gradient, and a partition of the coordinates into blocks.
//
// A Density is used by one chain at a time (it may own scratch space), so kernels never
// share one across threads; a DensityFactory (below) makes one per chain.
#pragma once

#include <Eigen/Core>

#include <memory>

namespace vbn::inference {

struct BlockRange {
    int offset = 0;
    int size = 0;
};

class Density {
public:
    virtual ~Density() = default;

    virtual int dim() const = 0;

    // log p(x) + const.
    virtual double log_density(const Eigen::VectorXd& x) = 0;

    // log p(x) + const, and its gradient in `grad` (resized by the caller to dim()).
    virtual double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) = 0;

    // Blocks: a partition of 0..dim()-1 into contiguous ranges. The default is one block.
    virtual int block_count() const { return 1; }
    virtual BlockRange block(int b) const { return {0, b == 0 ? dim() : 0}; }

    // The terms of log p(x) that involve block b, so that for x, y differing only in
    // block b: block_log_density(b, y) - block_log_density(b, x) == log_density(y) - log_density(x).
    // Block kernels pay only for these terms. The default evaluates the whole density.
    virtual double block_log_density(int b, const Eigen::VectorXd& x) {
        (void)b;
        return log_density(x);
    }
};

// Makes independent Density objects, one per chain (so chains can run in parallel).
class DensityFactory {
public:
    virtual ~DensityFactory() = default;
    virtual std::unique_ptr<Density> make() const = 0;
};

}  // namespace vbn::inference
