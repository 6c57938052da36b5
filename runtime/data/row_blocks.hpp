// Rows of a fixed width stored in blocks that never move, for tables that grow a row at a
// time without knowing their final size (runtime/data/dataset_builder.hpp, runtime/target/row_table.hpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace vbn {

// Blocks of 16, 32, 64, … up to 65,536 rows: memory follows the rows stored, within one
// block, and nothing is copied as they grow. (One growing array, when it grows, holds its
// old and its new copy at once, up to three times the rows; at 10^6 distinct rows of 11
// doubles that was 88 MB of data costing up to 270 MB.)
template <class T>
class RowBlocks {
public:
    explicit RowBlocks(std::size_t width) : width_(width) {}

    std::size_t width() const { return width_; }
    // Row r, allocating its block if it is the first row of a new block (rows are added in order).
    T* slot(std::size_t r) {
        const auto [block, offset] = locate(r);
        if (block == blocks_.size()) blocks_.push_back(std::make_unique<T[]>(std::max<std::size_t>(1, block_rows(block) * width_)));
        return blocks_[block].get() + offset * width_;
    }
    const T* row(std::size_t r) const {
        const auto [block, offset] = locate(r);
        return blocks_[block].get() + offset * width_;
    }
    void clear() { blocks_.clear(); }
    // Frees the blocks that hold only rows before r, for a reader that goes through the rows
    // in order and does not come back (rows there may no longer be read or added).
    void release_before(std::size_t r) {
        const std::size_t upto = std::min(locate(r).first, blocks_.size());
        for (std::size_t b = 0; b < upto; ++b) blocks_[b].reset();
    }

private:
    static constexpr std::size_t first_rows = 16, max_doublings = 12;
    static std::size_t block_rows(std::size_t block) { return first_rows << std::min(block, max_doublings); }
    // Blocks 0 … max_doublings hold 16 (2^b - 1) rows before block b; the rest 65,536 each.
    static std::pair<std::size_t, std::size_t> locate(std::size_t r) {
        constexpr std::size_t geometric = first_rows * ((std::size_t{2} << max_doublings) - 1);
        if (r < geometric) {
            const auto b = static_cast<std::size_t>(std::bit_width(r / first_rows + 1)) - 1;
            return {b, r - first_rows * ((std::size_t{1} << b) - 1)};
        }
        constexpr std::size_t big = first_rows << max_doublings;
        return {max_doublings + 1 + (r - geometric) / big, (r - geometric) % big};
    }

    std::size_t width_;
    std::vector<std::unique_ptr<T[]>> blocks_;
};

// The index the two tables keep beside their rows: open addressing with linear probing, each
// slot (row + 1) << 32 | the row's low 32 hash bits, 0 when empty, a power of two in size.
// Doubles it; each slot keeps its hash bits, so no row is read.
inline void double_row_index(std::vector<std::uint64_t>& slots) {
    std::vector<std::uint64_t> wider(slots.size() * 2, 0);
    const std::size_t mask = wider.size() - 1;
    for (const std::uint64_t s : slots) {
        if (!s) continue;
        std::size_t i = static_cast<std::uint32_t>(s) & mask;
        while (wider[i]) i = (i + 1) & mask;
        wider[i] = s;
    }
    slots = std::move(wider);
}

}  // namespace vbn
