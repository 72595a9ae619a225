"""Errors that reach users: each names the bad value and says what to do."""


class DMLCoreError(ValueError):
    """Bad input from a user (data, roles, options). The message is shown as is."""


class FitCancelled(RuntimeError):
    """Raised inside a fit when its ``should_stop`` check returns True."""


class FitDiverged(RuntimeError):
    """Raised when a training loss becomes NaN or infinite."""


class NotFittedError(DMLCoreError, AttributeError):
    """``predict`` (or another method that needs a fit) was called before ``fit``."""
