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

A signal the process ignores when a block opens (``SIG_IGN``, as a shell sets Ctrl-C for a
script's background job) is left ignored by both. Both act on the main thread only (the one
Python runs signal handlers in); elsewhere they change nothing. Their own bookkeeping runs
with the two signals blocked, so a signal cannot land half-way through it.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
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
    """Whether SIGTERM (or, while deferred, Ctrl-C) arrived in the open :func:`sigterm_stops`
    or :func:`deferred` block."""
    return _requested


def check() -> None:
    """Raise :class:`KeyboardInterrupt` if a stop was asked for, even one swallowed on the way."""
    if _requested and (_scopes or _deferring):
        raise KeyboardInterrupt


def _install(signums) -> dict:
    # a signal the process was started ignoring stays ignored: a script's background job
    # (``train ... &``) is meant to outlive Ctrl-C in the terminal that started it
    return {signum: signal.signal(signum, _handler) for signum in signums
            if signal.getsignal(signum) is not signal.SIG_IGN}


def _restore(previous: dict) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _block() -> set:
    """Hold SIGTERM and SIGINT back (they are delivered once unblocked); the mask before."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)


def _unblock(mask) -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextlib.contextmanager
def sigterm_stops():
    """Within the block SIGTERM raises :class:`KeyboardInterrupt` and is remembered. An inner
    block keeps a request that reached it for the block around it."""
    global _requested, _scopes
    if not _main_thread():
        yield
        return
    mask, previous, outer = _block(), {}, _requested
    try:  # a signal held back during the bookkeeping is delivered inside the try, never before it
        _requested, _scopes = False, _scopes + 1
        previous = _install([signal.SIGTERM])
        _unblock(mask)
        yield
    finally:
        _block()
        _restore(previous)
        _scopes -= 1
        _requested = (outer or _requested) if (_scopes or _deferring) else outer
        _unblock(mask)


@contextlib.contextmanager
def deferred():
    """Within the block SIGTERM and Ctrl-C are recorded, not raised: the block calls
    :func:`check` where an interrupt is safe. One that arrived after the block's last check is
    raised as the block ends; a second signal raises at once. Outside a command (a notebook
    calling :func:`residual_lib.sweep`), a stop is spent once raised, so the next call runs."""
    global _deferring, _requested
    if not _main_thread():
        yield
        return
    mask, previous, outer, failed = _block(), {}, _deferring, False
    try:
        _deferring = True
        previous = _install(_SIGNALS)
        _unblock(mask)
        yield
    except BaseException:
        failed = True
        raise
    finally:
        _block()
        _deferring = outer
        _restore(previous)
        stop = _requested
        if not (_scopes or _deferring):
            _requested = False
        _unblock(mask)
        if stop and not failed:
            raise KeyboardInterrupt
