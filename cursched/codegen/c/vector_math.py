"""The opt-in ``compile(vector_math=True)``: vector variants of the elementary functions.

GCC vectorises a loop that calls ``expf`` only when it knows a vector variant of ``expf``
(glibc's libmvec has them) and the call has no side effect. ``math.h`` declares the variants
only under ``-ffast-math``, which also assumes that no value is infinite or NaN and lets the
compiler reassociate reductions: wrong for a softmax row that starts with ``-inf``. This
option asks for less:

* ``-fno-math-errno``: math functions need not set ``errno``. Generated code never reads
  ``errno``, so nothing observable changes.
* the prelude below declares the libmvec variants of ``expf``, ``logf``, ``sinf`` (and of the
  double functions) with GCC's ``simd`` attribute, as ``math.h`` does under ``-ffast-math``.

Infinities and NaN keep their IEEE meaning and floating-point reductions keep their order
(GCC vectorises the calls and adds the results in order). The one difference from a default
build: a vectorised call returns libmvec's result, which may differ from the scalar libm's by
a few ulp (glibc documents each function's maximum error), so results are not bitwise equal
to a default build's. On other compilers or targets the prelude declares nothing.
"""

from __future__ import annotations

__all__ = ["VECTOR_MATH_CFLAGS", "VECTOR_MATH_PRELUDE", "with_vector_math"]

VECTOR_MATH_CFLAGS: tuple[str, ...] = ("-fno-math-errno",)
"""The flag the option adds (see the module docstring)."""

# glibc's libmvec has had these six since 2.22 (x86-64); the simd attribute is GCC's, and
# under -ffast-math math.h already declares them
VECTOR_MATH_PRELUDE = """\
/* compile(vector_math=True): the vector variants of glibc's libmvec */
#include <math.h>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__FAST_MATH__)
__attribute__((__simd__("notinbranch"))) float expf(float);
__attribute__((__simd__("notinbranch"))) float logf(float);
__attribute__((__simd__("notinbranch"))) float sinf(float);
__attribute__((__simd__("notinbranch"))) double exp(double);
__attribute__((__simd__("notinbranch"))) double log(double);
__attribute__((__simd__("notinbranch"))) double sin(double);
#endif
"""
"""C text put before a unit's source."""


def with_vector_math(c_source: str) -> str:
    """``c_source`` with the prelude in front (the unit's own ``#include <math.h>`` then
    finds the header already included)."""
    return VECTOR_MATH_PRELUDE + c_source
