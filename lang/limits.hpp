// Sizes beyond which a model is refused with an error instead of exhausting memory or time.
// The IR stores each block's prior covariance densely, so block sizes are what costs; fixed
// weights cost about 50 bytes and 65 ns each to lower. The defaults are the language's
// (docs/language.md); the fuzzers lower them, so that one input costs milliseconds and the
// limits' own checks are left to the golden tests.
#pragma once

namespace vbn::lang {

struct Limits {
    long elements = 1'000'000;             // nodes and covariates, all elements
    long block_size = 2048;                // learned weights of one node element
    long covariance_entries = 20'000'000;  // Σ over blocks of size²
    long fixed_terms = 20'000'000;         // `CONST * PARENTS` terms, all elements
};

}  // namespace vbn::lang
