"""What a run is: :class:`Run`, the one value every layer passes around.

A run is a profile, a variant, a seed, an evaluation mode, a runtime gain, a determinism
setting, a replicate index and an initial-weight perturbation. ``Run`` checks its fields
when it is made, so an invalid run never exists; its :attr:`Run.key` hashes every field (the
profile's included) and names its record file (:data:`RECORD_NAME`).

The key's recipe (:func:`run_identity`, :func:`run_key`) is frozen: every committed record
is filed under the key it gives, and the test suite recomputes the key of each one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import numbers
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

from .architecture import VARIANTS
from .batches import ValidationSet
from .profiles import Profile, get_profile

#: Part of every run key (changing it would change every key): the identity's format.
RECORD_VERSION = 1
#: A record's file name, under ``<results>/<profile>/``.
RECORD_NAME = "{variant}_seed{seed}_{key}.json"
#: The paper's seeds, the default of every section and of ``sweep``.
PAPER_SEEDS = (1337, 42, 123)


def in_paper_order(seeds) -> list[int]:
    """``seeds`` once each, in the order the plans queue them: the paper's (:data:`PAPER_SEEDS`)
    first, then any other by value."""
    rank = {s: i for i, s in enumerate(PAPER_SEEDS)}
    return sorted({int(s) for s in seeds}, key=lambda s: (rank.get(s, len(rank)), s))


EVAL_MODES = ValidationSet.MODES
#: Largest seed accepted (torch seeds are 64-bit; data-order generators take up to 2^63 - 1).
MAX_SEED = 2**63 - 1


class RunError(ValueError):
    """Invalid run settings; the message says how to fix them."""


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise RunError(f"unknown variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    return variant


def run_identity(
    profile, variant: str, seed: int, eval_mode: str, gain: float, deterministic: bool, replicate: int,
    init_noise: float = 0.0,
) -> dict:
    """Everything that determines a run's result; its hash is the run's key. ``profile`` is a
    :class:`residual_lib.run.profiles.Profile` or its dict as a record stores it (hashed as
    stored, so that a profile field added later does not change old records' keys).
    ``init_noise`` enters only when it is not zero, so runs without it keep the keys they
    always had."""
    identity = {
        "profile": profile.to_dict() if hasattr(profile, "to_dict") else dict(profile),
        "variant": variant,
        "seed": int(seed),
        "eval_mode": eval_mode,
        "gain": float(gain),
        "deterministic": bool(deterministic),
        "replicate": int(replicate),
    }
    if init_noise:
        identity["init_noise"] = float(init_noise)
    return identity


def run_key(identity: dict) -> str:
    """A 16-hex-digit hash of the run's identity (a JSON-serialisable dict)."""
    blob = json.dumps({"record_version": RECORD_VERSION, **identity}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def record_key(rec: dict) -> str:
    """The key a record's own configuration hashes to."""
    return run_key(run_identity(rec["config"]["profile"], rec["variant"], rec["seed"], rec["eval_mode"], rec["gain"],
                                rec["deterministic"], rec["replicate"], rec.get("init_noise") or 0.0))


def record_path(results_dir: str | os.PathLike, profile: str, variant: str, seed: int, key: str) -> Path:
    return Path(results_dir) / profile / RECORD_NAME.format(variant=variant, seed=seed, key=key)


@dataclass(frozen=True)
class Run:
    """One training run. ``profile`` may be given by name; it is held as a
    :class:`~residual_lib.run.profiles.Profile`, so a profile with overridden fields (``train
    --max-iters``) is a run of its own, with a key of its own."""

    profile: Profile
    variant: str
    seed: int
    eval_mode: str = "fixed"
    gain: float = 1.0
    deterministic: bool = True
    replicate: int = 0
    init_noise: float = 0.0

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        set_("profile", get_profile(self.profile))
        check_variant(self.variant)
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or not 0 <= self.seed <= MAX_SEED:
            raise RunError(f"seed must be an integer from 0 to 2^63 - 1, got {self.seed}: pass e.g. --seed 1337")
        if self.eval_mode not in EVAL_MODES:
            raise RunError(f"unknown eval mode {self.eval_mode!r}: choose one of {', '.join(EVAL_MODES)}")
        if not (isinstance(self.gain, numbers.Real) and self.gain > 0 and math.isfinite(self.gain)):
            raise RunError(f"gain must be a positive number, got {self.gain}: pass e.g. --gain 2.0")
        if isinstance(self.replicate, bool) or not isinstance(self.replicate, numbers.Integral) or self.replicate < 0:
            raise RunError(f"replicate must be an integer >= 0, got {self.replicate}: pass --replicate 0 or more")
        if not (isinstance(self.init_noise, numbers.Real) and self.init_noise >= 0 and math.isfinite(self.init_noise)):
            raise RunError(f"init noise must be a finite number >= 0, got {self.init_noise}: pass e.g. "
                           "--init-noise 1e-6")
        # one spelling per value, so that equal runs compare (and hash, and key) equal
        set_("seed", int(self.seed))
        set_("replicate", int(self.replicate))
        set_("gain", float(self.gain))
        set_("deterministic", bool(self.deterministic))
        set_("init_noise", float(self.init_noise))

    @classmethod
    def from_record(cls, rec: dict) -> "Run":
        """The run a record was made by (its profile rebuilt from the record's configuration:
        for a record made before a profile field was added or removed, this is today's nearest
        run, whose key differs; :func:`record_key` hashes the configuration as stored)."""
        return cls(Profile(**rec["config"]["profile"]), rec["variant"], rec["seed"], rec["eval_mode"], rec["gain"],
                   rec["deterministic"], rec["replicate"], rec.get("init_noise") or 0.0)

    def replace(self, **changes) -> "Run":
        return replace(self, **changes)

    @functools.cached_property
    def key(self) -> str:
        return run_key(run_identity(self.profile, self.variant, self.seed, self.eval_mode, self.gain,
                                    self.deterministic, self.replicate, self.init_noise))

    def fields(self) -> dict:
        """The run's fields as a record stores them (the profile by name)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["profile"] = self.profile.name
        return out

    def path(self, results_dir: str | os.PathLike) -> Path:
        """Where this run's record is filed under ``results_dir``."""
        return record_path(results_dir, self.profile.name, self.variant, self.seed, self.key)

    @property
    def fuse_key(self) -> tuple:
        """Runs with one fuse key can be trained together (:mod:`residual_lib.training.fused`): the same
        profile, the same parameter shapes (attention or the mixer) and the same
        determinism setting, which is process-wide."""
        return (self.profile, VARIANTS[self.variant][2], self.deterministic)

    def label(self) -> str:
        """How logs and errors name the run: ``cpu attn_only seed 42``, with what sets it apart
        from the default in brackets (pages write it through
        :func:`residual_lib.pages.names.display_name`: ``cpu AttnOnly seed 42``)."""
        extra = [] if self.eval_mode == "fixed" else [self.eval_mode]
        extra += [] if self.gain == 1.0 else [f"gain {self.gain:g}"]
        extra += [] if self.deterministic else [f"nondeterministic #{self.replicate}"]
        extra += [f"init noise {self.init_noise:g} #{self.replicate}"] if self.init_noise else []
        return f"{self.profile.name} {self.variant} seed {self.seed}" + (f" ({', '.join(extra)})" if extra else "")

    def __repr__(self) -> str:
        return f"Run({self.label()}, key {self.key})"


def fuse_groups(runs: list[Run], fuse: int) -> list[list[Run]]:
    """Split ``runs`` into groups of at most ``fuse`` runs of one :attr:`Run.fuse_key`, which
    can be trained together. Groups come in the order of their first run and keep the given
    order within, so a queue ordered seed by seed stays so (with ``fuse=1`` the runs keep
    their order exactly)."""
    if fuse < 1:
        raise RunError(f"fuse must be at least 1, got {fuse}: pass --fuse 1 to train runs one by one")
    by_key: dict[tuple, list[Run]] = {}
    for r in runs:
        by_key.setdefault(r.fuse_key, []).append(r)
    groups = [members[i:i + fuse] for members in by_key.values() for i in range(0, len(members), fuse)]
    position = {id(r): i for i, r in enumerate(runs)}
    return sorted(groups, key=lambda g: position[id(g[0])])
