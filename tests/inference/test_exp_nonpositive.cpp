// exp_nonpositive (inference/exp_nonpositive.hpp) against long double std::exp, error in ulps of
// the exact value (2^-1074 where that value is subnormal), over the whole range it is used on.
#include "inference/exp_nonpositive.hpp"

#include "inference/rng.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using vbn::inference::exp_nonpositive;
using vbn::inference::exp_nonpositive_normal;

namespace {

// The spacing of doubles at the exact value v >= 0: 2^(e-53) for v in [2^(e-1), 2^e), and
// 2^-1074 below the smallest normal double.
long double ulp_at(long double v) {
    if (v < static_cast<long double>(std::numeric_limits<double>::min())) return std::ldexp(1.0L, -1074);
    int e = 0;
    std::frexp(v, &e);
    return std::ldexp(1.0L, e - 53);
}

struct Sweep {
    double (*f)(double) = exp_nonpositive;
    long double worst = 0;
    double at = 0;
    long count = 0;
    void add(double x) {
        const long double exact = std::exp(static_cast<long double>(x));
        const long double err = std::abs(static_cast<long double>(f(x)) - exact) / ulp_at(exact);
        if (err > worst) {
            worst = err;
            at = x;
        }
        ++count;
    }
};

}  // namespace

TEST_CASE("exp_nonpositive is within 1 ulp of exp over [-746, 0] (1.5 without FMA), subnormal results included") {
    Sweep s;
    // A uniform grid over the whole range, and random arguments in it.
    const long grid = 2'000'000;
    for (long i = 0; i <= grid; ++i) s.add(-746.0 * static_cast<double>(i) / grid);
    vbn::inference::Rng rng(20261123);
    for (int i = 0; i < 1'000'000; ++i) s.add(-746.0 * rng.uniform());
    // Where the results are subnormal or vanishing, finely.
    for (int i = 0; i < 500'000; ++i) s.add(-708.0 - 38.0 * rng.uniform());
    // Near 0, over every binade down to the smallest subnormal argument, and -0.
    for (int e = -1074; e <= 0; ++e)
        for (int i = 0; i < 200; ++i) s.add(-std::ldexp(1.0 + rng.uniform(), e));
    s.add(-0.0);
    s.add(-std::numeric_limits<double>::denorm_min());
    // Either side of every switch of n (x = (m + ½) ln 2), where |r| is largest.
    for (int m = 0; m <= 1076; ++m) {
        const double x = -(m + 0.5) * 0.6931471805599453;
        for (double step = -8; step <= 8; ++step) s.add(x + step * std::abs(x) * 0x1p-52);
    }
    CAPTURE(s.at);
    CAPTURE(static_cast<double>(s.worst));
    CHECK(s.count > 3'700'000);
    // With fused multiply-adds (-march=native on x86-64 with FMA; the sweep's largest: 0.94 ulp);
    // without them every step of Horner's rule rounds twice (the largest: 1.19 ulp).
#ifdef FP_FAST_FMA
    CHECK(s.worst <= 1.0L);
#else
    CHECK(s.worst <= 1.5L);
#endif
    MESSAGE("largest error " << static_cast<double>(s.worst) << " ulp at x = " << s.at << " over " << s.count
                             << " arguments");
}

TEST_CASE("exp_nonpositive_normal is within 1 ulp of exp over [-708, 0] (1.5 without FMA)") {
    Sweep s;
    s.f = exp_nonpositive_normal;
    const long grid = 1'000'000;
    for (long i = 0; i <= grid; ++i) s.add(-708.0 * static_cast<double>(i) / grid);
    vbn::inference::Rng rng(1123);
    for (int i = 0; i < 500'000; ++i) s.add(-708.0 * rng.uniform());
    for (int i = 0; i < 100'000; ++i) s.add(-700.0 - 8.0 * rng.uniform());
    for (int e = -1074; e <= 0; ++e)
        for (int i = 0; i < 100; ++i) s.add(-std::ldexp(1.0 + rng.uniform(), e));
    s.add(-0.0);
    s.add(-708.0);
    for (int m = 0; m <= 1020; ++m) {
        const double x = -(m + 0.5) * 0.6931471805599453;
        for (double step = -8; step <= 8; ++step) s.add(x + step * std::abs(x) * 0x1p-52);
    }
    CAPTURE(s.at);
    CAPTURE(static_cast<double>(s.worst));
#ifdef FP_FAST_FMA
    CHECK(s.worst <= 1.0L);
#else
    CHECK(s.worst <= 1.5L);
#endif
    CHECK(std::isnan(exp_nonpositive_normal(std::numeric_limits<double>::quiet_NaN())));
    MESSAGE("largest error " << static_cast<double>(s.worst) << " ulp at x = " << s.at << " over " << s.count
                             << " arguments");
}

TEST_CASE("exp_nonpositive at the ends: exact at 0, 0 below -746, NaN kept") {
    CHECK(exp_nonpositive(0.0) == 1.0);
    CHECK(exp_nonpositive(-0.0) == 1.0);
    CHECK(exp_nonpositive(-746.0) == 0.0);
    CHECK(exp_nonpositive(-800.0) == 0.0);
    CHECK(exp_nonpositive(-1e300) == 0.0);
    CHECK(exp_nonpositive(-std::numeric_limits<double>::infinity()) == 0.0);
    CHECK(std::isnan(exp_nonpositive(std::numeric_limits<double>::quiet_NaN())));
    // The smallest subnormal, as exp rounds it: exp(-745.1) is 2^-1074 to the nearest.
    CHECK(exp_nonpositive(-745.1) == std::numeric_limits<double>::denorm_min());
    CHECK(exp_nonpositive(-745.2) == 0.0);
    // The largest argument whose exp is subnormal, and the first whose exp is normal.
    CHECK(exp_nonpositive(-708.4) == std::exp(-708.4));
    CHECK(exp_nonpositive(-708.3) == std::exp(-708.3));
}

TEST_CASE("exp_nonpositive over an array, as the log densities call it, gives the scalar values") {
    // The compiler vectorises this loop (four doubles at a time with AVX2); the vector code
    // keeps the scalar code's bound.
    std::vector<double> x(1003), y(x.size());
    vbn::inference::Rng rng(5);
    for (auto& v : x) v = -750.0 * rng.uniform() * rng.uniform();
    x[7] = -0.0;
    x[8] = std::numeric_limits<double>::quiet_NaN();
    x[9] = -std::numeric_limits<double>::infinity();
    double* __restrict out = y.data();
    const double* __restrict in = x.data();
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = exp_nonpositive(in[i]);
    for (std::size_t i = 0; i < x.size(); ++i) {
        CAPTURE(x[i]);
        if (std::isnan(x[i]))
            CHECK(std::isnan(y[i]));
        else
            CHECK(std::abs(static_cast<long double>(y[i]) - std::exp(static_cast<long double>(x[i]))) <=
                  1.5L * ulp_at(std::exp(static_cast<long double>(x[i]))));
    }
}
