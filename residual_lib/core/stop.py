"""SIGTERM stops a command as Ctrl-C does, and a stop once asked for is not lost.

Two ways to take a stop:

- :func:`sigterm_stops` (every command): SIGTERM raises :class:`KeyboardInterrupt` where the
  main thread happens to be, as Ctrl-C does. The handler also remembers the request, because
  an exception raised inside a finaliser (a ``__del__`` or a weakref callback run by the
  garbage collector) is reported as unraisable and dropped: a command that returns after a
  request still counts as interrupted (:func:`check`).
- :func:`deferred` (the sweep's loop over its worker pool): SIGTERM and Ctrl-C only record
  the request, and the loop raises it at a point of its choosing with :func:`check`. An
  interrupt raised inside :class:`concurrent.futures.ProcessPoolExecutor`'s own code (between
  creating its manager thread and starting it, or while a future's lock is held) leaves the
  pool unable to shut down: an error instead of the interrupt, or a hang. A second signal
  while deferred raises at once, so that a stuck shutdown can still be broken.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_requested = False
_deferring = False
_scopes = 0  # how many sigterm_stops blocks are open: a command's, which reads the request at its end


def _handler(signum, frame):
    global _requested
    again = _requested
    _requested = True
    if not _deferring or again:
        raise KeyboardInterrupt  # SIGTERM (timeout, schedulers) stops as cleanly as Ctrl-C


def requested() -> bool:
    """Whether SIGTERM (or, while deferred, Ctrl-C) arrived since the outermost
    :func:`sigterm_stops` was entered."""
    return _requested


def check() -> None:
    """Raise :class:`KeyboardInterrupt` if a stop was asked for, even one swallowed on the way."""
    if _requested:
        raise KeyboardInterrupt


def _install(signums) -> dict:
    if threading.current_thread() is not threading.main_thread():
        return {}  # handlers can only be set from the main thread; elsewhere nothing changes
    return {signum: signal.signal(signum, _handler) for signum in signums}


def _restore(previous: dict) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python


@contextlib.contextmanager
def sigterm_stops():
    """Within the block SIGTERM raises :class:`KeyboardInterrupt` and is remembered. Nested
    blocks keep a request that reached an outer one."""
    global _requested, _scopes
    outer = _requested
    _requested, _scopes = False, _scopes + 1
    previous = _install([signal.SIGTERM])
    try:
        yield
    finally:
        _restore(previous)
        _requested, _scopes = outer, _scopes - 1


@contextlib.contextmanager
def deferred():
    """Within the block SIGTERM and Ctrl-C are recorded, not raised: the block calls
    :func:`check` where an interrupt is safe. One that arrived after the block's last check is
    raised as the block ends; a second signal raises at once. Outside a command (a notebook
    calling :func:`residual_lib.sweep`), a stop is spent once raised, so the next call runs."""
    global _deferring, _requested
    outer = _deferring
    _deferring = True
    previous = _install([signal.SIGTERM, signal.SIGINT])
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        _deferring = outer
        _restore(previous)
        stop = _requested
        if not _scopes:
            _requested = False
        if stop and not failed:
            raise KeyboardInterrupt
