"""The one root exception of carbonshift and its families.

Families are grouped by what the caller can do about the failure:

- :class:`InputError`: the input is wrong; fix it (a file, a flag, an annotation, a value).
- :class:`TemporaryError`: something outside us failed for now; retry later (``delay_s``).
- :class:`PermanentError`: an outside service refused for good (bad key, unknown zone).
- :class:`DataRangeError`: asked for times a data source does not cover.
- :class:`SolverError`: the solver failed in a way that is not an infeasible model.

Infeasible plans are results with a status, never exceptions. Third-party errors are
translated at the boundary with ``raise ... from``. Messages name the value, its unit and
the fix: ``"deadline_slot 3 is before release_slot 5 for job 'j7'; ..."``.
"""

from __future__ import annotations

__all__ = [
    "CarbonshiftError",
    "DataRangeError",
    "InputError",
    "PermanentError",
    "SolverError",
    "TemporaryError",
]


class CarbonshiftError(Exception):
    """Root of every error carbonshift raises on purpose."""


class InputError(CarbonshiftError, ValueError):
    """The input is invalid; the message says which value, its unit and how to fix it."""


class DataRangeError(InputError):
    """A time range falls outside what a carbon data source covers."""


class TemporaryError(CarbonshiftError):
    """A failure that may go away: retry after ``delay_s`` seconds."""

    def __init__(self, message: str, *, delay_s: float = 1.0) -> None:
        super().__init__(message)
        self.delay_s = delay_s


class PermanentError(CarbonshiftError):
    """An outside service refused for good (bad credentials, unknown zone, ...)."""


class SolverError(CarbonshiftError):
    """The solver failed for a reason other than an infeasible or unbounded model."""


class SolverMemoryError(SolverError):
    """The solver ran out of memory (HiGHS: model status 'Memory limit reached')."""
