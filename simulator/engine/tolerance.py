"""The one float32-against-float64 tolerance: is a kernel's result right?

:func:`check_result` compares a float32 result with its float64 reference
(:func:`simulator.engine.reference.reference`) element by element, with one of two
tolerances: the running error bound of each element
(:mod:`simulator.engine.error_bound`, computed from the kernel's IR at the inputs, sound
for any kernel of the IR, subtractions included) where the reference carries one, else a
tolerance scaled to the dot-product length K times the reference at the inputs' absolute
values (right for sums of products: GEMM, matrix-vector). The simulator's outputs
(``tiletraffic simulate --values``) and the
OpenCL runs (``gpu.runtime.launch.check_result``, which raises ``gpu.runtime.launch.ResultMismatchError``)
are checked with it. numpy only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from tiletraffic.simulator.engine.unwritten import nonfinite_causes

UNIT_ROUNDOFF_F32 = 2.0**-24
"""Unit roundoff u of IEEE binary32 (round to nearest)."""

UNIT_ROUNDOFF_F16 = 2.0**-11
"""Unit roundoff of IEEE binary16 (round to nearest): a value stored as ``half``."""

HALF_SUBNORMAL_ERROR = 2.0**-25
"""Largest absolute error of rounding a value to a float16 subnormal (half its spacing
2**-24)."""

_FLT_MIN = float(np.finfo(np.float32).tiny)  # 2**-126, smallest normal float32


class ResultMismatchError(RuntimeError):
    """A result differs from the float64 reference by more than the tolerance, or (with no
    check given) from the output of the first launch.

    Attributes:
        launch: the launch (0-based, warm-up launches included) whose output was refused,
            when known.
        check: the :class:`CheckResult` that refused it, when there was one.
    """

    def __init__(self, message: str, launch: int | None = None, check=None):
        super().__init__(message)
        self.launch, self.check = launch, check


@dataclass(frozen=True)
class CheckResult:
    """Comparison of a float32 kernel output with its float64 reference.

    Attributes:
        ok: every element finite and within its tolerance.
        max_abs_error: largest |actual - reference| (inf if any element is NaN/inf).
        max_allowed: largest per-element tolerance.
        worst_index: index (tuple) of the element with the largest error/tolerance
            ratio, None for empty arrays.
        worst_value, worst_reference, worst_tolerance: at ``worst_index``.
        nan_count: NaN elements in ``actual``, whatever their cause.
        mismatch_count: elements outside their tolerance (NaNs included).
        k: dot-product length the tolerance was scaled to.
        gamma_k: the relative error factor used, :func:`error_factor` of ``k`` (unused
            with a running error bound).
        unwritten_count: elements still holding the fill value
            ``simulator.engine.unwritten.UNWRITTEN_BITS``: never written by the kernel.
        written_nonfinite_count: NaN or infinite elements the kernel did write (e.g.
            computed from an uninitialized accumulator).
    """

    ok: bool
    max_abs_error: float
    max_allowed: float
    worst_index: tuple[int, ...] | None
    worst_value: float
    worst_reference: float
    worst_tolerance: float
    nan_count: int
    mismatch_count: int
    k: int
    gamma_k: float
    unwritten_count: int = 0
    written_nonfinite_count: int = 0
    running_bound: bool = False
    """The tolerance is the running error bound of each element
    (:mod:`simulator.engine.error_bound`), not the K-scaled one."""
    stored_half: bool = False
    """The tolerance includes the rounding of each float32 result to the ``half`` the
    output stores."""

    @property
    def error_over_tolerance(self) -> float:
        """Largest |error| / tolerance over all elements (<= 1 passes; inf for NaN)."""
        if self.worst_index is None:
            return 0.0
        if not np.isfinite(self.worst_value):
            return float("inf")
        err = abs(self.worst_value - self.worst_reference)
        return err / self.worst_tolerance if self.worst_tolerance else (0.0 if err == 0 else
                                                                        float("inf"))

    def message(self, name: str = "output") -> str:
        """Human-readable verdict naming the worst element (largest error/tolerance)."""
        where = f"{name}[{', '.join(str(i) for i in self.worst_index)}]" if self.worst_index else name
        causes = []
        if self.unwritten_count:
            causes.append(f"{self.unwritten_count} never written")
        if self.written_nonfinite_count:
            causes.append(f"{self.written_nonfinite_count} written as NaN or inf (computed from "
                          "an undefined value, e.g. an uninitialized accumulator)")
        return (
            f"{where} = {self.worst_value:.6g}, reference {self.worst_reference:.6g}, "
            f"|error| {abs(self.worst_value - self.worst_reference):.3g} vs tolerance {self.worst_tolerance:.3g} "
            f"there (error/tolerance {self.error_over_tolerance:.3g}; "
            + ("running error bound of the element's float32 operations"
               if self.running_bound else
               f"{self.gamma_k:.3g}*(sum of |terms|) + floor, K = {self.k}")
            + (", then rounded to half" if self.stored_half else "") + "); "
            f"{self.mismatch_count} element(s) out of tolerance"
            + (f": {', '.join(causes)}" if causes else "")
        )

    mismatch_error: ClassVar[type[Exception]] = ResultMismatchError
    """What :meth:`raise_if_bad` raises (``gpu.runtime.launch`` raises its own subclass)."""

    def raise_if_bad(self, name: str = "output") -> None:
        """Raise :attr:`mismatch_error` (:class:`ResultMismatchError`) unless ``ok``."""
        if not self.ok:
            raise self.mismatch_error(self.message(name), check=self)


PROBABILISTIC_LAMBDA = 8.0
"""lambda of the probabilistic error bound used by :func:`check_result`."""


def error_factor(k: int) -> float:
    """Relative error factor of a float32 dot product of length ``k``:
    ``min(2*gamma_k, gamma~_k(lambda=8))`` (see :func:`check_result`)."""
    u = UNIT_ROUNDOFF_F32
    ku = k * u
    worst = 2.0 * ku / (1.0 - ku)
    probable = math.expm1(PROBABILISTIC_LAMBDA * math.sqrt(k) * u + k * u * u / (1.0 - u))
    return min(worst, probable)


def check_result(
    actual: np.ndarray, reference_f64: np.ndarray, k: int, abs_inputs_product: np.ndarray,
    *, result_type: type[CheckResult] = CheckResult, error_bound: np.ndarray | None = None,
    stored_half: bool = False,
) -> CheckResult:
    """Compare a float32 dot-product result with its float64 reference, tolerance scaled to K.

    Each element is a length-``k`` dot product computed in float32. The worst-case
    bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
    eq. 3.5) is ``|fl(x.y) - x.y| <= gamma_k * (|x|.|y|)``, ``gamma_k = k*u/(1-k*u)``,
    ``u = 2**-24``; it grows like K and, at K = 16384, lets a dropped term pass
    unseen. The tolerance therefore uses the probabilistic bound of Higham and Mary
    (SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4):
    ``gamma~_k = exp(lambda*sqrt(k)*u + k*u**2/(1-u)) - 1`` with lambda = 8, which holds
    for each element with probability at least ``1 - 2k*exp(-lambda**2*(1-u)**2/2)``
    (better than 1 - 1e-9 for k < 2**24). Tolerance:
    ``min(2*gamma_k, gamma~_k) * abs_inputs_product + 2*k*FLT_MIN``; the absolute floor
    covers subnormals flushed to zero (FLT_MIN = 2**-126 per operation).

    With ``error_bound`` the tolerance of each element is that bound instead: the running
    error bound of :mod:`simulator.engine.error_bound` (deterministic and sound for
    every expression of the IR, subtractions, divisions and functions included, under its
    device model: source order, any fused multiply-add contraction, flush to zero).

    Args:
        actual: kernel output (float32), any shape.
        reference_f64: exact-input float64 result, same shape (e.g. ``A64 @ B64``).
        k: dot-product length (the inner dimension K), ``0 <= k < 2**24``.
        abs_inputs_product: ``|A| @ |B|`` (or ``|A| @ |x|``) in float64, same shape.
        result_type: :class:`CheckResult` or a subclass (its ``mismatch_error``).
        error_bound: per-element tolerance, float64, same shape (non-negative; inf allowed
            where no bound holds), or None for the K-scaled one.
        stored_half: the output stores ``half``: each float32 result is rounded to the
            nearest float16 once more, so the tolerance ``t`` becomes
            ``t + 2**-11*(|reference| + t) + 2**-25`` (half's unit roundoff on the float32
            value, whose magnitude is at most ``|reference| + t``, and its subnormal
            spacing).

    Raises:
        ValueError: shapes differ, ``k`` out of range, the reference is not finite, or
            ``error_bound`` has another shape or a negative or NaN element.
    """
    actual = np.asarray(actual)
    ref = np.asarray(reference_f64, dtype=np.float64)
    absprod = np.asarray(abs_inputs_product, dtype=np.float64)
    if actual.shape != ref.shape or absprod.shape != ref.shape:
        raise ValueError(
            f"shapes differ: actual {actual.shape}, reference {ref.shape}, abs_inputs_product {absprod.shape}"
        )
    if not 0 <= k < 2**24:
        raise ValueError(f"k = {k} out of range: the bound needs k * 2**-24 < 1")
    if not (np.all(np.isfinite(ref)) and np.all(np.isfinite(absprod))):
        raise ValueError("the reference or abs_inputs_product contains NaN or inf")
    gamma = error_factor(k)
    if error_bound is None:
        tol = gamma * absprod + 2.0 * k * _FLT_MIN
    else:
        tol = np.asarray(error_bound, dtype=np.float64)
        if tol.shape != ref.shape:
            raise ValueError(f"shapes differ: error_bound {tol.shape}, reference {ref.shape}")
        if not np.all(tol >= 0):
            raise ValueError("error_bound has a negative or NaN element")
    if stored_half:
        tol = tol + UNIT_ROUNDOFF_F16 * (np.abs(ref) + tol) + HALF_SUBNORMAL_ERROR
    values = actual.astype(np.float64)
    err = np.where(np.isfinite(values), np.abs(values - ref), np.inf)
    bad = ~(err <= tol)
    if err.size == 0:
        return result_type(True, 0.0, 0.0, None, 0.0, 0.0, 0.0, 0, 0, k, gamma,
                           running_bound=error_bound is not None, stored_half=stored_half)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0, 0.0, err / tol)  # tol == 0 with err > 0 -> inf
    flat = int(np.argmax(ratio))
    worst = tuple(int(i) for i in np.unravel_index(flat, err.shape))
    unwritten, written_nonfinite = nonfinite_causes(actual)
    return result_type(
        ok=not bool(bad.any()),
        max_abs_error=float(err.max()),
        max_allowed=float(tol.max()),
        worst_index=worst,
        worst_value=float(values[worst]),
        worst_reference=float(ref[worst]),
        worst_tolerance=float(tol[worst]),
        nan_count=int(np.isnan(values).sum()),
        mismatch_count=int(bad.sum()),
        k=k,
        gamma_k=gamma,
        unwritten_count=unwritten,
        written_nonfinite_count=written_nonfinite,
        running_bound=error_bound is not None,
        stored_half=stored_half,
    )
