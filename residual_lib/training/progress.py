"""What a training process says while it runs: a progress bar at a terminal, one line per
evaluation otherwise."""

from __future__ import annotations

import os
import sys
import time


class Progress:
    """A tqdm bar when stderr is a terminal, plain lines at evaluations otherwise, nothing
    at all when ``progress`` is False. A closed stderr (a pipe whose reader went away)
    silences it rather than stopping the run."""

    def __init__(self, total: int, label: str, progress: bool | None):
        self.quiet = progress is False
        self.interactive = (not self.quiet) and (sys.stderr.isatty() if progress is None else progress)
        self.label, self.total, self.start = label, total, time.perf_counter()
        self.bar = None
        if self.interactive:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=label, leave=False, dynamic_ncols=True)

    def _guard(self, write) -> None:
        try:
            write()
        except (BrokenPipeError, OSError, ValueError):  # ValueError: writing to a closed file
            self.quiet, self.bar = True, None
            try:  # nobody reads stderr any more: later writes (and the exit's flush) go nowhere
                sys.stderr = open(os.devnull, "w")
            except OSError:
                pass

    def step(self, n: int = 1, **postfix) -> None:
        if self.bar is not None:
            bar = self.bar

            def write():
                bar.update(n)
                if postfix:
                    bar.set_postfix({k: f"{v:.4f}" for k, v in postfix.items()}, refresh=False)

            self._guard(write)

    def eval(self, step: int, val_loss: float, train_loss: float | None, label: str | None = None) -> None:
        if self.bar is not None or self.quiet:
            return
        train = f" train {train_loss:.4f}" if train_loss is not None else ""
        elapsed = time.perf_counter() - self.start
        self._guard(lambda: print(f"[{label or self.label}] step {step}/{self.total} val {val_loss:.4f}{train} "
                                  f"({elapsed:.1f}s)", file=sys.stderr, flush=True))

    def close(self) -> None:
        if self.bar is not None:
            self._guard(self.bar.close)
