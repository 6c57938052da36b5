// Distinct fixed-length rows of doubles, for compressing data rows to weighted patterns
// (runtime/target/families.cpp, runtime/target/target.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_set>
#include <vector>

namespace vbn {

// Hash of a run of doubles, for grouping identical patterns.
inline std::size_t hash_doubles(const double* p, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ULL ^ n;
    for (std::size_t k = 0; k < n; ++k) {
        double v = p[k] == 0.0 ? 0.0 : p[k];  // +0 and -0 are the same pattern
        std::uint64_t bits;
        static_assert(sizeof bits == sizeof v);
        std::memcpy(&bits, &v, sizeof bits);
        h ^= bits + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    }
    return static_cast<std::size_t>(h);
}

// Distinct fixed-length rows of doubles with summed weights, numbered in order of first
// appearance. Candidates are written after the stored rows and either kept or dropped, so
// no key is ever copied. Rows equal as doubles (+0 = -0) are one row. The table points to
// itself: it is neither copied nor moved.
class RowTable {
public:
    explicit RowTable(std::size_t width)
        : width_(width), set_(16, Hash{this}, Equal{this}) {}
    RowTable(const RowTable&) = delete;
    RowTable& operator=(const RowTable&) = delete;

    double* candidate() {
        data_.resize((rows() + 1) * width_);
        return data_.data() + rows() * width_;
    }
    // Adds the candidate with weight w; returns its row.
    int commit(double w) {
        const int n = static_cast<int>(rows());
        auto [it, inserted] = set_.insert(n);
        if (inserted) {
            weight_.push_back(w);
            return n;
        }
        data_.resize(static_cast<std::size_t>(n) * width_);
        weight_[static_cast<std::size_t>(*it)] += w;
        return *it;
    }
    std::size_t rows() const { return weight_.size(); }
    const double* row(std::size_t r) const { return data_.data() + r * width_; }
    double weight(std::size_t r) const { return weight_[r]; }

private:
    struct Hash {
        const RowTable* t;
        std::size_t operator()(int r) const {
            return hash_doubles(t->data_.data() + static_cast<std::size_t>(r) * t->width_, t->width_);
        }
    };
    struct Equal {
        const RowTable* t;
        bool operator()(int a, int b) const {
            const double* pa = t->data_.data() + static_cast<std::size_t>(a) * t->width_;
            const double* pb = t->data_.data() + static_cast<std::size_t>(b) * t->width_;
            return std::equal(pa, pa + t->width_, pb);
        }
    };
    std::size_t width_;
    std::vector<double> data_;
    std::vector<double> weight_;
    std::unordered_set<int, Hash, Equal> set_;
};

}  // namespace vbn
