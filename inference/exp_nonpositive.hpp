// exp(x) for x <= 0, written so that a plain loop over an array of arguments vectorises
// (no branch, no division, no table, no call): the logistic terms of a log density need
// e = exp(-|η|) once per data pattern, and this is most of their cost.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace vbn::inference {

// Every function here is always inlined: their callers are loops that the compiler vectorises
// only with the whole body in them, and GCC's growth limits stopped inlining them into
// FactorTables' fill once a translation unit held more of those loops (a call per entry, 12%
// of an occupancy fit).

// a·b + c, fused (one rounding) where the target has the instruction; else a product and a sum
// (std::fma would then be a library call in the loop, which would stop it vectorising).
[[gnu::always_inline]] inline double mul_add(double a, double b, double c) {
#ifdef FP_FAST_FMA
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

// exp(x) for x <= 0 (or -0), within 1 ulp of the exact value where the target has fused
// multiply-adds (-march=native on x86-64 with FMA; 1.5 ulp without), subnormal results included,
// counting the ulp there as 2^-1074: tests/inference/test_exp_nonpositive.cpp sweeps 3.7 million
// arguments over [-746, 0], -0 and tiny ones included, against long double std::exp, and finds
// at most 0.94 ulp (1.19 without FMA). The error budget: r's last rounding (up to 0.18 ulp of
// the result), the polynomial's (0.14), Horner's last two steps (0.17 and 0.5). x below -746
// gives 0, as exp does after rounding; NaN gives NaN. Arguments above 0 are outside its
// contract (they are not checked: the result would be wrong above about 709).
//
// x = n ln 2 + r with n = round(x / ln 2) and |r| <= ln 2 / 2 (Cody–Waite: n ln2_hi is exact,
// so x - n ln2_hi is exact, and only r's last rounding is an error); exp(r) = 1 + r + r² q(r)
// with q a degree-9 polynomial (Chebyshev fit of (e^r - 1 - r) / r² on [-ln 2 / 2, ln 2 / 2],
// approximation error below 2e-17 relative) evaluated by Horner's rule; then times 2^n1 · 2^n2 with n1 = round(n / 2) and n2 = n - n1, both in
// [-538, 0], so both powers are normal (built from their exponent bits) and the first product
// is exact: a subnormal result is rounded once. (max(n, -1022) would do as n1, but GCC then
// leaves a branch in the loop and does not vectorise it.)
namespace exp_detail {

constexpr double round_shift = 0x1.8p52;  // adding it rounds a double below 2^51 to an integer

// exp(r) · 2^-n for x = n ln 2 + r, and n.
[[gnu::always_inline]] inline double reduced(double x, double& n) {
    constexpr double log2e = 0x1.71547652b82fep0;
    constexpr double ln2_hi = 0x1.62e42fee00000p-1;  // 32 significant bits: n ln2_hi is exact for |n| < 2^20
    constexpr double ln2_lo = 0x1.a39ef35793c76p-33;
    n = mul_add(x, log2e, round_shift) - round_shift;
    double r = mul_add(n, -ln2_hi, x);
    r = mul_add(n, -ln2_lo, r);
    double q = 0x1.af389ecfc4b9cp-26;
    q = mul_add(q, r, 0x1.28917c89a43a7p-22);
    q = mul_add(q, r, 0x1.71de0db2f6b19p-19);
    q = mul_add(q, r, 0x1.a019b9149a41cp-16);
    q = mul_add(q, r, 0x1.a01a01a7c2efep-13);
    q = mul_add(q, r, 0x1.6c16c17889ef1p-10);
    q = mul_add(q, r, 0x1.11111111109b5p-7);
    q = mul_add(q, r, 0x1.5555555553d68p-5);
    q = mul_add(q, r, 0x1.5555555555556p-3);
    q = mul_add(q, r, 0x1.0000000000001p-1);
    return mul_add(mul_add(q, r, 1.0), r, 1.0);
}

// 2^m for an integer m in [-1022, 0]: m + round_shift holds m in its low bits, and the low
// 11 bits of that plus the exponent bias, shifted into the exponent field, are 2^m.
[[gnu::always_inline]] inline double power_of_two(double m) {
    return std::bit_cast<double>((std::bit_cast<std::uint64_t>(m + round_shift) + 1023) << 52);
}

}  // namespace exp_detail

[[gnu::always_inline]] inline double exp_nonpositive(double x) {
    x = std::max(x, -746.0);  // keeps NaN (std::max returns its first argument unless it is less)
    double n = 0;
    const double p = exp_detail::reduced(x, n);
    const double n1 = mul_add(n, 0.5, exp_detail::round_shift) - exp_detail::round_shift, n2 = n - n1;
    return p * exp_detail::power_of_two(n1) * exp_detail::power_of_two(n2);
}

// exp_nonpositive for x in [-708, 0], where exp(x) is a normal double: the same value, with
// one power of two and no clamp (about a quarter fewer operations), and the same bound (the
// test's sweep over [-708, 0] finds the same largest error). Outside that range its result is
// wrong, except that NaN still gives NaN.
[[gnu::always_inline]] inline double exp_nonpositive_normal(double x) {
    double n = 0;
    const double p = exp_detail::reduced(x, n);
    return p * exp_detail::power_of_two(n);
}

}  // namespace vbn::inference
