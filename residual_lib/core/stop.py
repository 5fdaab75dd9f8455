"""SIGTERM stops a command as Ctrl-C does, and a stop once asked for is not lost.

The handler raises :class:`KeyboardInterrupt` where the main thread happens to be. When
that is inside a finaliser (a ``__del__`` or a weakref callback run by the garbage
collector), Python reports the exception as unraisable and carries on, so the handler also
remembers the request: long loops call :func:`check` and raise it again, and a command that
returns after a request counts as interrupted.
"""

from __future__ import annotations

import contextlib
import signal

_requested = False


def _terminate(signum, frame):
    global _requested
    _requested = True
    raise KeyboardInterrupt  # SIGTERM (timeout, schedulers) stops as cleanly as Ctrl-C


def requested() -> bool:
    """Whether SIGTERM arrived since :func:`sigterm_stops` was entered."""
    return _requested


def check() -> None:
    """Raise :class:`KeyboardInterrupt` if a stop was asked for, even one swallowed on the way."""
    if _requested:
        raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_stops():
    """Within the block SIGTERM raises :class:`KeyboardInterrupt` and is remembered."""
    global _requested
    _requested = False
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _requested = False
