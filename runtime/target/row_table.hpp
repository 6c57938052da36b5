// Distinct fixed-length rows of doubles, for compressing data rows to weighted patterns
// (runtime/target/families.cpp, runtime/target/target.cpp).
#pragma once

#include "runtime/data/row_blocks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace vbn {

// Hash of a run of doubles, for grouping identical patterns. Each value's bits enter by a
// multiply and a right shift, so that every bit reaches the low bits the tables index by:
// ±1 values differ only in the sign bit, which an update by left shifts and adds (as this
// hash once was) carries out of the word, so that rows of ±1 parents collided into a few
// probe chains (at 10^6 rows × 50 binary columns, `vbn vb` spent minutes in RowTable::commit).
// A final avalanche (SplitMix64's) mixes the last values in.
inline std::size_t hash_doubles(const double* p, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ULL ^ n;
    for (std::size_t k = 0; k < n; ++k) {
        double v = p[k] == 0.0 ? 0.0 : p[k];  // +0 and -0 are the same pattern
        std::uint64_t bits;
        static_assert(sizeof bits == sizeof v);
        std::memcpy(&bits, &v, sizeof bits);
        h = (h ^ bits) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 31;
    return static_cast<std::size_t>(h);
}

// Distinct fixed-length rows of doubles with summed weights, numbered in order of first
// appearance. Candidates are written after the stored rows and either kept or dropped, so
// no key is ever copied. Rows equal as doubles (+0 = -0) are one row.
//
// Memory follows the rows kept: they live in blocks that never move (RowBlocks), and the
// index is an open-addressing table of one word per slot, at most half full (a node-based
// hash set took about 40 bytes a row).
class RowTable {
public:
    explicit RowTable(std::size_t width) : width_(width), rows_(width), slots_(16, 0) {}
    RowTable(const RowTable&) = delete;
    RowTable& operator=(const RowTable&) = delete;

    double* candidate() { return rows_.slot(rows()); }
    // Adds the candidate with weight w; returns its row.
    int commit(double w) {
        const std::size_t n = rows();
        const double* key = row(n);
        if (2 * (n + 1) > slots_.size()) grow();
        const auto h = static_cast<std::uint32_t>(hash_doubles(key, width_));
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            const std::uint64_t s = slots_[i];
            if (s == 0) {
                slots_[i] = (static_cast<std::uint64_t>(n) + 1) << 32 | h;
                weight_.push_back(w);
                return static_cast<int>(n);
            }
            if (static_cast<std::uint32_t>(s) != h) continue;
            const std::size_t r = (s >> 32) - 1;
            const double* other = row(r);
            if (std::equal(key, key + width_, other)) {
                weight_[r] += w;
                return static_cast<int>(r);
            }
        }
    }
    // Adds w to row r's weight, as a commit of a candidate equal to row r would.
    void add_weight(int r, double w) { weight_[static_cast<std::size_t>(r)] += w; }
    std::size_t rows() const { return weight_.size(); }
    const double* row(std::size_t r) const { return rows_.row(r); }
    double weight(std::size_t r) const { return weight_[r]; }

    // For a reader that copies the rows out in order, freeing as it goes: first the index
    // (nothing may be added after it), then the blocks of rows before r.
    void drop_index() { std::vector<std::uint64_t>().swap(slots_); }
    void release_before(std::size_t r) { rows_.release_before(r); }

private:
    void grow() { double_row_index(slots_); }

    std::size_t width_;
    RowBlocks<double> rows_;
    std::vector<double> weight_;
    std::vector<std::uint64_t> slots_;  // (row + 1) << 32 | low hash bits; 0 empty; a power of two
};

}  // namespace vbn
