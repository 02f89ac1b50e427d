"""The fake's own exceptions: it is a separate tool and never imports carbonshift.

- :class:`FakeKubeError`: the root of everything the fake raises on purpose.
- :class:`ConfigError`: a setting or argument of the fake is wrong (also a ``ValueError``).
- :class:`TemporaryError`: something outside the fake failed for now (``delay_s``).
- :class:`PermanentError`: a tool the fake needs refused for good (e.g. no openssl).
"""

from __future__ import annotations

__all__ = ["ConfigError", "FakeKubeError", "PermanentError", "TemporaryError"]


class FakeKubeError(Exception):
    """Root of every error the fake raises on purpose."""


class ConfigError(FakeKubeError, ValueError):
    """A setting, argument or annotation value is invalid; the message says how to fix it."""


class TemporaryError(FakeKubeError):
    """A failure that may go away: retry after ``delay_s`` seconds."""

    def __init__(self, message: str, *, delay_s: float = 1.0) -> None:
        super().__init__(message)
        self.delay_s = delay_s


class PermanentError(FakeKubeError):
    """Something the fake needs refused for good."""
