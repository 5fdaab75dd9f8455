"""Train, sweep, benchmark and verify the residual-ablation runs, and build the book from their records.

    python -m residual_lib train --variant attn_only --profile cpu --seed 1337 [--eval-mode fixed|random]
                                 [--gain 2.0] [--results DIR] [--max-iters N] [--precision fp32|bf16]
                                 [--device auto|cpu|cuda]
    python -m residual_lib sweep notebooks/06_central.py --profile cpu --seeds 1337 42 123 [--jobs N]
                                 [--threads N] [--fuse K] [--compile] [--executor local|submitit] [--all]
    python -m residual_lib bench --profile cpu|paper-10m [--fuse K] [--steps N] [--threads N]
                                 [--reference nanoGPT/model.py] [--json PATH]
    python -m residual_lib device-check [--device cuda] [--checks NAME ...] [--json PATH]
    python -m residual_lib book [--profile cpu] [--skip-bad]
    python -m residual_lib summary [--results DIR] [--profile cpu] [--skip-bad]
    python -m residual_lib verify RECORD.json [RECORD.json ...] [--quiet]

``train`` prints the record's path as its last line (reusing an existing record with the same
key unless ``--force``). Bad input ends with one line on stderr naming the fix and exit status 2;
nothing is written. ``verify`` retrains each record's run in a scratch folder and exits 1 if any
differs from its record (:mod:`residual_lib.training.verify`). Ctrl-C and SIGTERM exit with 130.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from .commands import inputs
from .commands.bench import bench, report, write_json
from .commands.summary import summary
from .commands.devicecheck import CHECKS, plan_from_report, run_checks, write_report
from .commands.sweep import sweep
from .core.files import NotWritableError, check_writable
from .core.paths import results_folder
from .core.stop import check, requested, sigterm_stops
from .core.text import plural
from .pages.book import build
from .pages.execute import all_notebooks
from .run.architecture import VARIANTS
from .run.data import DataError
from .run.profiles import BOOK_PROFILE, PROFILES, ProfileError, get_profile
from .run.runs import PAPER_SEEDS, Run, RunError, check_variant
from .run.runtime import isa_mode, resolve_device
from .storage.provenance import CommitError
from .storage.records import RecordError, read_record
from .study.frames import record_eval_floor
from .study.sections import DEFAULT_PROFILE
from .training.store import obtain
from .training.verify import rerunnable, verify_record

CLUSTERS = ("slurm", "local", "debug")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage as well), and where to look
        self.exit(2, f"{self.prog}: error: {message}: see {self.prog} --help\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m residual_lib", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    parser.commands = sub.choices  # each command's parser, by name

    t = sub.add_parser("train", help="train one run (or reuse its record) and print the record's path")
    t.add_argument("--variant", required=True, help=f"one of {', '.join(VARIANTS)}")
    t.add_argument("--profile", default=BOOK_PROFILE, help=f"one of {', '.join(PROFILES)} (default {BOOK_PROFILE})")
    t.add_argument("--seed", type=int, default=1337)
    t.add_argument("--eval-mode", default="fixed", help="fixed (batches seeded 99,991) or random (nanoGPT-style)")
    t.add_argument("--gain", type=float, default=1.0, help="runtime gain on every sublayer output (default 1.0)")
    t.add_argument("--results", "--out", dest="out", default=None,
                   help="results directory (default: results/ of this checkout; --out is the old spelling)")
    t.add_argument("--max-iters", type=int, default=None, help="override the profile's step count")
    t.add_argument("--precision", default=None, choices=("fp32", "bf16"),
                   help="override the profile's precision (fp32, or bf16 autocast)")
    t.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    t.add_argument("--nondeterministic", action="store_true", help="allow non-deterministic kernels")
    t.add_argument("--replicate", type=int, default=0, help="repeat index, to rerun an identical configuration")
    t.add_argument("--init-noise", type=float, default=0.0,
                   help="multiply every initial weight by 1 + NOISE * N(0,1), e.g. 1e-6 (default 0: none)")
    t.add_argument("--data-dir", default=None, help="folder with tinyshakespeare/input.txt (default $RESIDUAL_DATA_DIR, else the copy packaged with "
                        "residual_lib)")
    t.add_argument("--force", action="store_true", help="retrain even if the record exists")
    t.add_argument("--quiet", action="store_true", help="no progress output")
    t.add_argument("--compile", action="store_true", help="train through torch.compile")
    t.add_argument("--checkpoint-every", type=int, default=None,
                   help="save the run's state every N steps and resume from it if restarted (default: "
                        "$RESIDUAL_CHECKPOINT_EVERY if set, else 250 for the paper profiles, none otherwise; 0: none)")
    t.add_argument("--resume-other-code", action="store_true",
                   help="continue a checkpoint written by other code (default: start over); the record names both")

    w = sub.add_parser("sweep", help="train what section notebooks need, then execute them with papermill")
    w.add_argument("notebooks", nargs="*", help="notebooks/NN_section.py files")
    w.add_argument("--all", action="store_true", help="every notebook under notebooks/")
    w.add_argument("--profile", default=DEFAULT_PROFILE, help=f"one of {', '.join(PROFILES)} (default {DEFAULT_PROFILE})")
    w.add_argument("--seeds", type=int, nargs="+", default=list(PAPER_SEEDS),
                   help=f"default: the paper's, {' '.join(map(str, PAPER_SEEDS))}")
    w.add_argument("--variants", nargs="+", default=None, help=f"only these variants (one or more of {', '.join(VARIANTS)}; default: each section's own)")
    w.add_argument("--jobs", type=int, default=None, help="processes training at once (default: one per core on CPU, 1 on GPU)")
    w.add_argument("--threads", type=int, default=None, help="torch threads per job (default: cores / jobs)")
    w.add_argument("--fuse", type=int, default=None,
                   help="runs of one fuse key trained together per job (default: 1 on CPU, up to 8 on GPU)")
    w.add_argument("--compile", action="store_true", help="train through torch.compile")
    w.add_argument("--executor", default="local", help="local (process pool) or submitit (Slurm, else local)")
    w.add_argument("--cluster", default=None, help="submitit cluster: slurm, local or debug (default: detected)")
    w.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    w.add_argument("--results", "--out", dest="out", default=None,
                   help="results directory (default: results/ of this checkout; --out is the old spelling)")
    w.add_argument("--no-notebooks", action="store_true", help="train only; do not execute the notebooks")

    m = sub.add_parser("bench", help="tokens/s: one model, K fused, the sweep layout, no diagnostics; matmul peak")
    m.add_argument("--profile", default=BOOK_PROFILE, help=f"one of {', '.join(PROFILES)} (default {BOOK_PROFILE})")
    m.add_argument("--fuse", type=int, default=4, help="models fused, and runs in the sweep figure (default 4)")
    m.add_argument("--steps", type=int, default=None, help="timed steps per figure and round (default 30; 5 for large models on CPU)")
    m.add_argument("--warmup", type=int, default=3, help="untimed steps before each figure (default 3)")
    m.add_argument("--repeats", type=int, default=3, help="rounds per figure; the best is reported (default 3)")
    m.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    m.add_argument("--json", default=None, help="also write the figures to this JSON file")
    m.add_argument("--compile", action="store_true", help="every figure through torch.compile")
    m.add_argument("--threads", type=int, default=None,
                   help="threads of the single, fused and reference figures (default: every core)")
    m.add_argument("--reference", default=None,
                   help="nanoGPT's model.py: time its GPT beside ours at the same shape, precision and threads")
    m.add_argument("--fuse-sizes", type=int, nargs="*", default=None, metavar="K",
                   help="also time groups of these sizes (default on CUDA: 4 8 16 32; none on CPU)")

    d = sub.add_parser("device-check", help="check the accelerator code paths (bf16, fused, dropout, gradient "
                                            "accumulation, compile): one line per check, no pytest needed")
    d.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    d.add_argument("--checks", nargs="+", default=None,
                   help="which checks (default: every check that applies to the device)")
    d.add_argument("--json", default=None, help="also write the report to this JSON file")
    d.add_argument("--plan", default=None, metavar="BENCH_JSON",
                   help="instead of the checks: from a bench report, the group size that records the most runs of "
                        "--profile in --seconds, printed as 'fuse=K runs=N groups=G'")
    d.add_argument("--seconds", type=float, default=None, help="the time left for training (with --plan)")
    d.add_argument("--profile", default=None, help="the profile to plan (with --plan; default paper-10m)")

    b = sub.add_parser("book", help="execute every notebook from the records, then build the jupyter-book site")
    b.add_argument("--profile", default=BOOK_PROFILE, help=f"profile whose records the chapters show (default {BOOK_PROFILE})")
    b.add_argument("--results", default=None, help="results directory (default results/ of this checkout)")
    b.add_argument("--skip-bad", action="store_true",
                   help="move bad record files aside (named on stderr; the sweep retrains them) and build without "
                        "them, instead of stopping")

    s = sub.add_parser("summary", help="table of final validation losses per variant")
    s.add_argument("results_dir", nargs="?", default=None, metavar="RESULTS",
                   help="results directory (the old spelling of --results)")
    s.add_argument("--results", default=None, help="results directory (default: results/ of this checkout)")
    s.add_argument("--profile", default=None, help="only this profile")
    s.add_argument("--skip-bad", action="store_true", help="leave bad record files out (named on stderr) "
                                                          "instead of stopping")
    s.add_argument("--all-conditions", action="store_true",
                   help="one row per condition (evaluation mode, gain, determinism) instead of the "
                        "controlled runs only")

    v = sub.add_parser("verify", help="retrain the runs of committed records and compare them bitwise; write "
                                      "a certificate beside each (<results>/<profile>/verified/)")
    v.add_argument("records", nargs="+", metavar="RECORD", help="run record files (results/<profile>/*.json)")
    v.add_argument("--quiet", action="store_true", help="no progress output while retraining")
    return parser


def _train(args) -> int:
    spec = Run(get_profile(args.profile, max_iters=args.max_iters, precision=args.precision), args.variant, args.seed, args.eval_mode,
               args.gain, not args.nondeterministic, args.replicate, args.init_noise)
    if args.checkpoint_every is not None and args.checkpoint_every < 0:
        raise RunError(f"--checkpoint-every must be >= 0, got {args.checkpoint_every}: pass a step count, or 0 for "
                       "no checkpoints")
    device = resolve_device(args.device)
    path, trained = obtain([spec], results_folder(args.out), force=args.force, device=device, data_dir=args.data_dir,
                        progress=False if args.quiet else None, compile=args.compile,
                        checkpoint_every=args.checkpoint_every, resume_other_code=args.resume_other_code)[0]

    rec = read_record(path)
    if rec.get("status") == "diverged":
        print(f"{rec['variant']} seed {rec['seed']} ({rec['profile']}): DIVERGED at step {rec['diverged_at_step']} "
              "(non-finite loss); the record says so and the pages leave it out of statistics")
        print(path)
        return 1
    how = (f"{rec['steps']} steps in {rec['wall_seconds']:.1f}s, {rec['tokens_per_second']:,.0f} tokens/s"
           if trained else "cached record")
    print(f"{rec['variant']} seed {rec['seed']} ({rec['profile']}, {rec['eval_mode']}): final val "
          f"{rec['final_val_loss']:.4f}, best {rec['best_val_loss']:.4f}, floor of the evaluation batches "
          f"{record_eval_floor(rec):.4f}; {how}")
    print(path)
    return 0


def _sweep(args) -> int:
    notebooks = list(args.notebooks) + ([str(p) for p in all_notebooks()] if args.all else [])
    if not notebooks:
        raise RunError("no notebooks given: pass notebooks/NN_section.py files or --all")
    inputs.notebook_paths(notebooks)
    get_profile(args.profile)
    for variant in args.variants or []:
        check_variant(variant)
    if args.executor not in ("local", "submitit"):
        raise RunError(f"unknown executor {args.executor!r}: choose local or submitit")
    if args.cluster is not None and args.cluster not in CLUSTERS:
        raise RunError(f"unknown cluster {args.cluster!r}: choose {', '.join(CLUSTERS)} (or leave it out)")
    if args.cluster is not None and args.executor != "submitit":
        raise RunError("--cluster is a submitit setting: add --executor submitit")
    for name in ("jobs", "threads", "fuse"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            raise RunError(f"--{name} must be positive, got {getattr(args, name)}")
    resolve_device(args.device)
    check_writable(results_folder(args.out))  # before the first run, not at its record
    try:
        report = sweep(notebooks, profile=args.profile, seeds=args.seeds, variants=args.variants,
                       results_dir=args.out, jobs=args.jobs, threads=args.threads, executor=args.executor,
                       device=args.device, cluster=args.cluster, run_notebooks=not args.no_notebooks,
                       fuse=args.fuse, compile=args.compile)
    except (FileNotFoundError, ValueError) as exc:
        raise RunError(str(exc)) from None
    print(f"sweep ({args.profile}): runs {len(report.trained)} trained, {report.cached} cached, "
          f"{len(report.failed_runs)} failed; notebooks {len(report.notebooks)} executed, "
          f"{len(report.failed_notebooks)} failed; {report.wall_seconds:.1f}s")
    for path in report.notebooks:
        print(f"  executed {path}")
    for line in report.diverged:
        print(f"  DIVERGED {line}")
    for label, message in report.failed_runs:
        print(f"  FAILED run {label}: {message}")
    for name, message in report.failed_notebooks:
        print(f"  FAILED notebook {name}: {message}")
    return 0 if report.ok else 1


def _bench(args) -> int:
    get_profile(args.profile)
    for name in ("fuse", "steps", "repeats", "threads"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            raise RunError(f"--{name} must be positive, got {getattr(args, name)}")
    if args.warmup < 0:
        raise RunError(f"--warmup must be >= 0, got {args.warmup}")
    inputs.threads_fit(args.threads)
    device = resolve_device(args.device)
    inputs.json_target(args.json)  # before the benchmark, not after it
    if args.reference is not None and not Path(args.reference).is_file():
        raise RunError(f"--reference {args.reference} is not a file: pass nanoGPT's model.py")
    sizes = args.fuse_sizes if args.fuse_sizes is not None else ([4, 8, 16, 32] if device.startswith("cuda") else [])
    if any(k < 2 for k in sizes):
        raise RunError(f"--fuse-sizes must each be 2 or more, got {' '.join(map(str, sizes))}")
    result = bench(args.profile, fuse=args.fuse, steps=args.steps, warmup=args.warmup, device=device,
                   compile=args.compile, repeats=args.repeats, threads=args.threads, reference=args.reference,
                   fuse_sizes=tuple(sizes), progress=(lambda so_far: write_json(so_far, args.json)) if args.json else None)
    print(report(result))
    if args.json:
        write_json(result, args.json)
        print(args.json)
    return 0


def _device_check(args) -> int:
    if args.plan is not None:  # the lease's group size, from a bench report (residual_lib.commands.devicecheck)
        if args.checks or args.json:
            raise RunError("--plan only plans groups from a bench report and runs no check: leave out --checks "
                           "and --json")
        try:
            plan = plan_from_report(args.plan, args.seconds, get_profile(args.profile or "paper-10m"))
        except ValueError as exc:
            raise RunError(str(exc)) from None
        print(f"fuse={plan['fuse']} runs={plan['runs']} groups={plan['groups']}")
        return 0
    if args.seconds is not None or args.profile is not None:
        raise RunError("--seconds and --profile plan a lease's groups: add --plan BENCH_JSON, or leave them out")
    device = resolve_device(args.device)
    unknown = [n for n in args.checks or [] if n not in CHECKS]
    if unknown:
        raise RunError(f"unknown {plural('check', len(unknown))} {', '.join(unknown)}: choose from {', '.join(CHECKS)}")
    inputs.json_target(args.json)
    report = run_checks(device, args.checks)
    if args.json:
        write_report(report, args.json)
        print(args.json)
    return 0 if report["ok"] else 1


def _book(args) -> int:
    get_profile(args.profile)
    inputs.results_dir(args.results)
    try:
        index = build(args.profile, args.results, skip_bad=args.skip_bad)
    except FileNotFoundError as exc:  # no records for this profile yet
        raise RunError(str(exc)) from None
    except (RecordError, RunError):  # already one line that names the fix (another build holds _build)
        raise
    except subprocess.CalledProcessError:
        raise RunError("jupyter-book reported warnings or errors (shown above): fix them and rebuild") from None
    except Exception as exc:  # a notebook raised: papermill names the cell
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise RunError(f"a book page failed to execute: {lines[-1] if lines else exc.__class__.__name__}") from None
    print(index)
    return 0


def _verify(args) -> int:
    for name in args.records:  # every path checked before anything is retrained
        if not Path(name).is_file():
            raise RunError(f"{name} is not a file: pass run record files, e.g. results/smoke/<variant>_seed<seed>_"
                           "<key>.json")
        try:
            rerunnable(name)
        except RecordError as exc:
            raise RunError(f"{exc}: pass a run record as train wrote it, under results/<profile>/") from None
        inputs.certificates_writable(name)

    def commit(sha, dirty) -> str:
        return f"{sha[:7]}{'+dirty' if dirty else ''}" if sha else "an unknown commit"

    differ = 0
    for name in args.records:
        cert = verify_record(name, progress=False if args.quiet else None)
        when = (f"recorded at {commit(cert['record_commit'], cert['record_dirty'])}, rerun at "
                f"{commit(cert['rerun_commit'], cert['rerun_dirty'])}")
        if cert["equal"]:
            final = cert["final_val_loss"]
            print(f"{name}: bitwise equal to the record ({when}): final val "
                  f"{'null (diverged)' if final is None else repr(final)}")
        else:
            first, differ = cert["first_difference"], differ + 1
            print(f"{name}: DIFFERS from the record ({when}) first at {first['field']}: recorded "
                  f"{json.dumps(first['recorded'])[:80]}, rerun {json.dumps(first['rerun'])[:80]}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the command's own parser, whose --help lists what it takes
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    with sigterm_stops():
        try:
            inputs.no_empty_values(args)
            isa_mode()  # a misspelt RESIDUAL_CPU_ISA stops every command before it does anything
            code = {"train": _train, "sweep": _sweep, "bench": _bench, "book": _book, "summary": summary,
                    "device-check": _device_check, "verify": _verify}[args.command](args)
            check()  # a SIGTERM that a finaliser swallowed still counts
            return code
        except KeyboardInterrupt:
            return _interrupted(args.command)
        except Exception as exc:
            if requested():  # what a stop's clean-up tripped over is not the story: the stop is
                return _interrupted(args.command)
            if isinstance(exc, BrokenPipeError):  # `summary | head` closed the pipe: the reader has it all
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the final flush must not fail
                return 141
            if not isinstance(exc, (RunError, ProfileError, DataError, RecordError, NotWritableError, CommitError)):
                raise
            print(f"python -m residual_lib: error: {exc}", file=sys.stderr)
            return 2


def _interrupted(command: str) -> int:
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # a notebook's abandoned tasks: not news
    kept = {"train": "; finished records are kept, rerun to continue", "sweep": "; finished records are kept, rerun to "
            "continue", "verify": "; finished certificates are kept"}.get(command, "")
    print(f"python -m residual_lib: interrupted{kept}", file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
