// The abstract target every sampler works on: a log density over R^d known up to a
// constant, its gradient, and a partition of the coordinates into blocks.
//
// A Density is used by one chain at a time (it may own scratch space), so kernels never
// share one across threads; a DensityFactory (below) makes one per chain.
#pragma once

#include <Eigen/Core>

#include <memory>
#include <stdexcept>
#include <vector>

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

    // True when block_log_density(b, x) depends on x only through block b (no term ties b to
    // another block), so a kernel may keep its value while other blocks move
    // (BlockValueCache). The default, false, is always safe.
    virtual bool block_separable(int b) const {
        (void)b;
        return false;
    }

    // How many values of block b a kernel should evaluate together (block_log_densities);
    // 1, the default: one at a time. Only a block whose terms involve its own entries alone
    // may return more.
    virtual int block_batch(int b) const {
        (void)b;
        return 1;
    }

    // The terms of block b at each column of `values` (block b's entries only, at most
    // block_batch(b) columns) into out: block_log_density's, to rounding, whatever the other
    // blocks hold. A kernel that uses them uses them for its current state too, so that every
    // ratio it forms is of values computed alike.
    virtual void block_log_densities(int b, const Eigen::Ref<const Eigen::MatrixXd>& values,
                                     Eigen::Ref<Eigen::VectorXd> out) {
        (void)b;
        (void)values;
        (void)out;
        throw std::logic_error("this density evaluates no block's values together");
    }
};

// The current state's block_log_density per block, remembered between moves so that a block
// kernel pays for the proposal's terms only: a block's value is reused while the state is
// unchanged since it was computed, or (for a separable block) while the block itself is.
// The values are the density's own, so reusing one changes no result. Memory is O(dim +
// blocks): a separable block keeps its own values, the others a version of the one state
// remembered for all of them (not a copy of the state per block, which at 10^4 blocks of a
// 2·10^4-dimensional state would be 3.2 GB).
class BlockValueCache {
public:
    // Forgets everything (call when the density or its size changes).
    void reset(int blocks) {
        entries_.assign(static_cast<std::size_t>(blocks), Entry{});
        state_.resize(0);
        version_ = 0;
    }

    // block_log_density(b, x), evaluated only when not known for this x.
    double current(Density& target, int b, BlockRange r, const Eigen::VectorXd& x) {
        Entry& e = entries_[static_cast<std::size_t>(b)];
        const bool separable = target.block_separable(b);
        if (e.valid && e.separable == separable &&
            (separable ? e.block.size() == r.size && e.block == x.segment(r.offset, r.size) : e.version == sync(x)))
            return e.value;
        const double v = target.block_log_density(b, x);
        store(target, b, x, v);
        return v;
    }

    // Records that block b's terms are `value` at x (e.g. an accepted proposal's).
    void store(const Density& target, int b, const Eigen::VectorXd& x, double value) {
        Entry& e = entries_[static_cast<std::size_t>(b)];
        e.value = value;
        e.separable = target.block_separable(b);
        e.valid = true;
        if (e.separable) {
            const BlockRange r = target.block(b);
            e.block = x.segment(r.offset, r.size);  // allocates only the first time
        } else {
            e.version = sync(x);
        }
    }

private:
    // The version of x: unchanged while x equals the state last seen, else a new one.
    long sync(const Eigen::VectorXd& x) {
        if (state_.size() != x.size() || state_ != x) {
            state_ = x;  // allocates only the first time
            ++version_;
        }
        return version_;
    }

    struct Entry {
        Eigen::VectorXd block;  // separable: the block's values when `value` was computed
        long version = 0;       // otherwise: the state's version then
        double value = 0;
        bool separable = false;
        bool valid = false;
    };
    std::vector<Entry> entries_;
    Eigen::VectorXd state_;  // the last state seen by a non-separable block
    long version_ = 0;
};

// Makes independent Density objects, one per chain (so chains can run in parallel).
class DensityFactory {
public:
    virtual ~DensityFactory() = default;
    virtual std::unique_ptr<Density> make() const = 0;
};

}  // namespace vbn::inference
