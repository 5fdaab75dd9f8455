"""Where a record came from: the commit of the code that made it and the machine's software,
without host or user names."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import torch

from ..run.runtime import kernel_environment


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


#: Names the commit of the code where the checkout's own git history lags behind its files (a
#: copy of a working tree on a lent machine, whose ``.git`` may be an older one):
#: ``scripts/device_check.sh`` sets it from its ``COMMIT``.
COMMIT_ENV = "RESIDUAL_CODE_COMMIT"


class CommitError(ValueError):
    """:data:`COMMIT_ENV` holds something that is not a commit; the message says how to fix it."""


@functools.lru_cache(maxsize=None)
def code_version() -> tuple[str | None, bool | None]:
    """(git commit, dirty flag) of this checkout, read once per process. The trainer calls
    it when a run starts, so a record names the code that was loaded, even if the files
    change while it trains. ``(None, None)`` outside a git checkout. With :data:`COMMIT_ENV`
    set, that commit, dirty if the files differ from it, and ``None`` (unknown) for the flag
    if this checkout's history does not hold it."""
    claimed = (os.environ.get(COMMIT_ENV) or "").strip().lower()
    if claimed:
        if not re.fullmatch(r"[0-9a-f]{40}", claimed):
            raise CommitError(f"{COMMIT_ENV}={claimed[:50]!r} is not a commit: set it to the 40-hex-digit commit the "
                              "code came from (git rev-parse HEAD), or unset it")
        if _git("cat-file", "-e", f"{claimed}^{{commit}}") is None:
            print(f"residual_lib: {COMMIT_ENV} {claimed[:12]} cannot be checked here (this checkout's history does not "
                  "hold it): records name it, with their dirty flag unknown", file=sys.stderr)
            return claimed, None
        return claimed, bool(_git("diff", "--name-only", claimed))
    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if sha else None
    return sha, (bool(status) if sha else None)


#: The modules whose code decides a run's numbers: what a run is, its corpus and batches, the
#: model, the step and the trainers, the kernels. A checkpoint names their digest
#: (:func:`code_digest`), so a run is never continued by other code without saying so.
RUN_CODE = ("run/architecture.py", "run/batches.py", "run/data.py", "run/isa.py", "run/model.py", "run/profiles.py",
            "run/runs.py", "run/runtime.py", "training/batched.py", "training/checkpoint.py",
            "training/diagnostics.py", "training/fused.py", "training/state.py", "training/step.py",
            "training/train.py")


@functools.lru_cache(maxsize=None)
def code_digest() -> str:
    """sha256 over :data:`RUN_CODE`'s files, read once per process (the code that was loaded)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in RUN_CODE:
        digest.update(name.encode() + b"\0" + (package / name).read_bytes() + b"\0")
    return digest.hexdigest()


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The processor's model as the system names it ("AMD EPYC", "Intel(R) Xeon(R) ..."): MKL and
    oneDNN pick kernels by model as well as by instruction set, so a CPU record names it. Linux
    reads it from ``cpuinfo``; elsewhere, or where that has none, the platform's processor or
    architecture name stands in."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


#: What a record's provenance says about the machine and kernels a process ran on: a resumed run
#: can span processes on different machines, so its record names these for each
#: (``provenance.processes``), beside the run's precision and whether it was compiled.
PLATFORM_FIELDS = ("device", "device_name", "cpu_threads", "isa_mode", "cpu_capability", "mkl_enable_instructions",
                   "onednn_max_cpu_isa", "amx", "torch_version", "precision", "compiled")


def process_platform(prov: dict, from_step: int) -> dict:
    """One entry of ``provenance.processes``: the step a process began training at and the
    :data:`PLATFORM_FIELDS` of ``prov`` (a record's provenance, as that process would write it)."""
    return {"from_step": from_step, **{name: prov.get(name) for name in PLATFORM_FIELDS}}


#: Names a CPU record gives as its device where it does not name the processor's model.
ARCHITECTURES = {"x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "arm", "cpu"}


def named_model(prov: dict) -> str | None:
    """The processor's or GPU's model a provenance names; None where it names only the
    architecture (older CPU records: ``x86_64``) or nothing."""
    model = str(prov.get("device_name") or "")
    return model if model and model.lower() not in ARCHITECTURES else None


def kernel_kind(prov: dict) -> dict:
    """What decides a run's last bits besides its key and code, as far as a provenance (a
    record's, or one of its ``processes``) says, field by field: the device (``cuda`` or
    ``cpu``), the CPU's instruction set with the MKL and oneDNN limits in force (none for AVX2,
    whose native and pinned kernels are one kind), for bf16 whether AMX ran its matrix
    multiplies, and the GPU's or CPU's model (:func:`named_model`). A field the provenance is
    silent on is None."""
    device = str(prov.get("device") or "")
    kind = "cuda" if device.startswith("cuda") else "cpu" if device or prov.get("cpu_capability") else None
    capability = prov.get("cpu_capability") if kind == "cpu" else None
    limits = () if capability in (None, "AVX2") else (prov.get("mkl_enable_instructions"), prov.get("onednn_max_cpu_isa"))
    bf16 = kind == "cpu" and "bf16" in str(prov.get("precision", ""))
    return {"device": kind, "kernels": (capability, *limits) if capability else None,
            "amx": prov.get("amx") if bf16 else None, "model": named_model(prov)}


def kernels_differ(provenances: list[dict]) -> bool:
    """Whether these provenances name kernels of different kinds: two that name a field of
    :func:`kernel_kind` name different values of it. One that is silent on a field (AMX for a
    bf16 run, its model) may have run on either and sets nothing apart there."""
    kinds = [kernel_kind(p) for p in provenances]
    return any(len({k[field] for k in kinds if k[field] is not None}) > 1 for field in ("device", "kernels", "amx", "model"))


def provenance(device: str, deterministic: bool) -> dict:
    """Where and how a run was made, without host names or user names."""
    sha, dirty = code_version()
    if device.startswith("cuda") and torch.cuda.is_available():
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = cpu_model()
    return {
        "git_sha": sha,
        "git_dirty": dirty,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": device,
        "device_name": device_name,
        "cpu_threads": torch.get_num_threads(),
        **kernel_environment(),
        "deterministic": deterministic,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }
