"""Section plans, the sweep (process pool and submitit), and every notebook under papermill."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from conftest import SMOKE_SEEDS as SEEDS

from residual_lib.__main__ import main
from residual_lib.commands.sweep import sweep, train_runs
from residual_lib.pages import notebook, parameters
from residual_lib.pages.execute import all_notebooks, execute_notebook
from residual_lib.run.profiles import get_profile
from residual_lib.run.runs import Run, RunError
from residual_lib.study import sections
from residual_lib.study.sections import plan

NOTEBOOKS = all_notebooks()
ROOT = Path(__file__).resolve().parents[1]


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.json"))}


def test_there_is_one_notebook_per_paper_section():
    assert [p.stem for p in NOTEBOOKS] == list(sections.PLANS)


def test_plans_ask_for_the_runs_each_section_describes():
    assert plan("03_setup", "smoke", SEEDS) == []
    collapse = plan("04_joint_collapse", "smoke", SEEDS)
    random_runs = [s for s in collapse if s.eval_mode == "random"]
    assert len(random_runs) == 4 and {s.seed for s in random_runs} == {1337}
    central = [s for s in plan("06_central", "smoke", SEEDS) if s.profile.name == "smoke"]
    assert set(collapse) - set(random_runs) == set(central)  # block 0 over every seed
    assert len(central) == 8 and all(s.eval_mode == "fixed" and s.deterministic for s in central)
    twin = [s for s in plan("06_central", "smoke", SEEDS) if s.profile.name != "smoke"]
    assert {s.profile.name for s in twin} == {"smoke-dropout"} and len(twin) == 8
    gains = {s.gain for s in plan("05_confounds", "smoke", SEEDS)}
    assert gains == {0.5, 1.0, 2.0, 4.0}
    assert {s.variant for s in plan("07_mechanism", "smoke", SEEDS)} == {"attn_only", "ffn_only", "mixer", "pointwise",
                                                                          "full"}
    repro = plan("08_reproduction", "smoke", SEEDS)
    assert sum(not s.deterministic for s in repro) == 3
    with pytest.raises(ValueError, match="no section named"):
        plan("99_nothing", "smoke", SEEDS)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_under_papermill(notebook, smoke_results, tmp_path):
    params = {"profile": "smoke", "seeds": SEEDS, "results_dir": str(smoke_results), "train_missing": False}
    before = _digest(smoke_results)
    executed = execute_notebook(notebook, params, tmp_path)
    nb = json.loads(executed.read_text())
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o["output_type"] == "error"]
    assert not errors
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "train_missing = False" in "".join(injected[0]["source"])
    assert _digest(smoke_results) == before  # the notebook only read records


def test_a_notebook_with_missing_records_names_the_sweep_command(tmp_path):
    with pytest.raises(Exception, match="python -m residual_lib sweep notebooks/06_central.py"):
        execute_notebook(NOTEBOOKS[3], {"profile": "smoke", "seeds": [7], "results_dir": str(tmp_path),
                                        "train_missing": False}, tmp_path / "out")
    assert (tmp_path / "out" / "06_central.failed.ipynb").is_file()
    assert not (tmp_path / "out" / "06_central.ipynb").exists()


def test_a_second_sweep_trains_nothing_and_leaves_records_byte_identical(smoke_results):
    before = _digest(smoke_results)
    report = sweep([str(p) for p in NOTEBOOKS], profile="smoke", seeds=SEEDS, results_dir=smoke_results,
                   run_notebooks=False, progress=False)
    assert report.ok and report.trained == [] and report.cached == len(before)
    assert _digest(smoke_results) == before


def test_a_failed_run_does_not_stop_the_others(tmp_path, monkeypatch, capsys):
    good = [Run("smoke", "full", 5), Run("smoke", "ffn_only", 5)]
    # a context longer than the validation split: valid as a Run, but its worker raises
    bad = Run(get_profile("smoke", block_size=200_000), "full", 5)
    monkeypatch.setattr("residual_lib.commands.sweep.plan", lambda section, **kw: [good[0], bad, good[1]])
    status = main(["sweep", str(NOTEBOOKS[3]), "--profile", "smoke", "--out", str(tmp_path / "r"),
                   "--no-notebooks", "--jobs", "2"])
    out = capsys.readouterr().out
    assert status == 1
    assert "runs 2 trained" in out and "1 failed" in out
    assert "FAILED run smoke full seed 5" in out and "is longer than" in out
    assert len(list((tmp_path / "r" / "smoke").glob("*.json"))) == 2
    log = tmp_path / "r" / "smoke" / "logs" / f"full_seed5_{bad.key}.log"
    assert "RunError: context 200000 is longer than" in log.read_text()


def _comparable(path: str) -> dict:
    rec = json.loads(Path(path).read_text())
    return {k: rec[k] for k in ("key", "curves", "final_val_loss", "best_val_loss", "diagnostics", "config")}


def test_submitit_local_executor_makes_the_same_records_as_the_process_pool(tmp_path):
    specs = [Run("smoke", "attn_only", 9), Run("smoke", "no_residual", 9)]
    local, failed = train_runs(specs, tmp_path / "local", jobs=2, threads=1, executor="local", progress=False)
    assert not failed
    remote, failed = train_runs(specs, tmp_path / "submitit", jobs=2, threads=1, executor="submitit",
                                 cluster="local", progress=False)
    assert not failed, failed
    assert sorted(Path(p).name for p in local) == sorted(Path(p).name for p in remote)
    for a in sorted(local):
        b = str(tmp_path / "submitit" / "smoke" / Path(a).name)
        assert _comparable(a) == _comparable(b)


class _FakeJob:
    def __init__(self):
        self.cancelled = False

    def done(self):
        return self.cancelled

    def cancel(self, check=True):
        self.cancelled = True


class _FakeExecutor:
    """Stands in for submitit.AutoExecutor: jobs that run until cancelled, listed in ``jobs``."""

    def __init__(self, folder, cluster=None):
        self.cluster = "local"

    def update_parameters(self, **kwargs):
        pass

    def submit(self, fn, *args):
        job = _FakeJob()
        _FakeExecutor.jobs.append(job)
        return job


class _DoneJob(_FakeJob):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def done(self):
        return True

    def result(self):
        return self.value


class _BareEnvironmentExecutor(_FakeExecutor):
    """Runs each job at once, in this process, without the sweep's RESIDUAL_CHECKPOINT_EVERY:
    a Slurm site that starts jobs with ``--export=NONE``."""

    def submit(self, fn, *args):
        _FakeExecutor.jobs.append(args)
        saved = os.environ.pop("RESIDUAL_CHECKPOINT_EVERY")
        try:
            return _DoneJob(fn(*args))
        finally:
            os.environ["RESIDUAL_CHECKPOINT_EVERY"] = saved


def test_a_cluster_job_checkpoints_at_the_sweeps_interval_without_the_sweeps_environment(monkeypatch, tmp_path):
    import submitit

    import residual_lib.commands.sweep as sweep_module

    monkeypatch.setattr(submitit, "AutoExecutor", _BareEnvironmentExecutor)
    monkeypatch.setattr(_FakeExecutor, "jobs", [], raising=False)
    asked = []
    monkeypatch.setattr(sweep_module, "obtain", lambda runs, *a, **options: asked.append(options) or [])
    specs = [Run("smoke", "attn_only", 9), Run("smoke", "ffn_only", 9)]
    for every, expected in (("40", 40), ("0", 0)):
        monkeypatch.setenv("RESIDUAL_CHECKPOINT_EVERY", every)
        train_runs(specs, tmp_path, jobs=1, threads=1, executor="submitit", fuse=1, progress=False)
    assert [options["checkpoint_every"] for options in asked] == [40, 40, 0, 0]
    # a bad value stops the sweep in one line before any job is submitted
    monkeypatch.setenv("RESIDUAL_CHECKPOINT_EVERY", "often")
    with pytest.raises(RunError, match="^RESIDUAL_CHECKPOINT_EVERY must be a whole number"):
        train_runs(specs, tmp_path, jobs=1, threads=1, executor="submitit", progress=False)
    assert len(_FakeExecutor.jobs) == 4


def test_a_stopped_submitit_sweep_cancels_its_jobs_and_gives_back_its_claims(monkeypatch, tmp_path):
    """A stop gives the runs' claims back, so a job left running on the cluster would be
    trained again by the next sweep: the sweep cancels what it submitted."""
    import submitit

    import residual_lib.commands.sweep as sweep_module

    monkeypatch.setattr(submitit, "AutoExecutor", _FakeExecutor)
    monkeypatch.setattr(_FakeExecutor, "jobs", [], raising=False)
    calls = iter(range(100))

    def check():  # the stop arrives once the job is submitted and the sweep is waiting on it
        if next(calls) >= 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "check", check)
    spec = Run("smoke", "attn_only", 9)
    with pytest.raises(KeyboardInterrupt):
        train_runs([spec], tmp_path, jobs=1, threads=1, executor="submitit", progress=False)
    assert len(_FakeExecutor.jobs) == 1 and _FakeExecutor.jobs[0].cancelled
    assert not list((tmp_path / "smoke").glob(".*.claim"))


def test_sweep_trains_seed_by_seed(monkeypatch, tmp_path):
    """A sweep stopped half-way leaves whole seeds: runs are queued seed by seed."""
    import residual_lib.commands.sweep as sweep_module

    queued = []
    monkeypatch.setattr(sweep_module, "_LocalPool", _RecordingPool.factory(queued))
    sweep([str(p) for p in NOTEBOOKS if p.stem in ("06_central", "07_mechanism", "08_reproduction")],
          profile="smoke", seeds=[7, 5], results_dir=tmp_path, run_notebooks=False, progress=False, jobs=1)
    seeds = [s.seed for group in queued for s in group]
    # seed 7: four central variants and the same with dropout, the mixer and its control, a deterministic
    # and three non-deterministic repeats; seed 5: all but the repeats
    assert seeds == [7] * 14 + [5] * 10


class _RecordingPool:
    """Stands in for the process pool: records what is submitted, in order, and trains nothing."""

    def __init__(self, queued):
        self.queued, self.poll = queued, 0.0

    @classmethod
    def factory(cls, queued):
        return lambda jobs: cls(queued)

    def submit(self, specs, *args):
        from concurrent.futures import Future

        self.queued.append(specs)
        future = Future()
        future.set_result([])
        return future

    def close(self, interrupted=False):
        pass


def test_a_misspelt_section_parameter_is_refused_not_ignored():
    with pytest.raises(ValueError, match="unknown parameter gain_varaint for section 05_confounds: it takes gains, "
                                         "gain_variant"):
        plan("05_confounds", "smoke", SEEDS, gain_varaint="ffn_only")
    with pytest.raises(ValueError, match="none besides profile"):
        plan("07_mechanism", "smoke", SEEDS, repeats=2)
    assert len(plan("05_confounds", "smoke", SEEDS, gains=[1.0, 2.0])) < len(plan("05_confounds", "smoke", SEEDS))


def test_a_notebook_asks_for_its_records_with_the_names_its_section_takes(monkeypatch):
    asked = {}
    monkeypatch.setattr(notebook, "ensure", lambda section, **kw: asked.update(section=section, **kw))
    namespace = {"profile": "smoke", "seeds": [1], "variants": ["full"], "results_dir": "r", "train_missing": False,
                 "device": "cpu", "gains": [1.0, 2.0], "gain_variant": "full", "tolerance": 0.05, "pd": object()}
    notebook.notebook_records("05_confounds", namespace)
    assert asked == {"section": "05_confounds", "profile": "smoke", "seeds": [1], "variants": ["full"],
                     "results_dir": "r", "train_missing": False, "device": "cpu", "gains": [1.0, 2.0],
                     "gain_variant": "full", "gain_seeds": 3}  # not tolerance, which the plan does not take
    asked.clear()
    notebook.notebook_records("06_central", namespace, skip_missing=True)
    assert "gains" not in asked and asked["skip_missing"] is True


def test_a_parameter_left_none_takes_the_sections_default_and_the_page_sees_it(monkeypatch):
    asked = {}
    monkeypatch.setattr(notebook, "ensure", lambda section, **kw: asked.update(kw))
    namespace = {"profile": "cpu", "seeds": None, "gains": None, "gain_variant": "ffn_only"}
    notebook.notebook_records("05_confounds", namespace)
    assert asked["seeds"] == list(sections.PAPER_SEEDS) and asked["gains"] == [0.5, 1.0, 2.0, 4.0]
    assert asked["gain_variant"] == "ffn_only" and asked["profile"] == "cpu"
    assert namespace["gains"] == [0.5, 1.0, 2.0, 4.0] and namespace["variants"] == list(sections.CENTRAL_VARIANTS)
    # what the sweep trains (plan with profile and seeds) is what the notebook then asks for
    assert plan("05_confounds", "cpu", sections.PAPER_SEEDS) == plan("05_confounds", **{
        k: v for k, v in asked.items() if k not in ("results_dir", "train_missing", "device")} | {
        "gain_variant": "attn_only"})
    namespace["seeds"].append(9)  # a notebook that edits its seeds leaves the default alone
    assert parameters.defaults("05_confounds")["seeds"] == list(sections.PAPER_SEEDS)


def _asked(monkeypatch, section: str, **given) -> tuple[dict, dict]:
    """What ``section``'s notebook asks :func:`residual_lib.pages.notebook.ensure` for with ``given`` in its
    namespace, and the namespace afterwards."""
    asked = {}
    monkeypatch.setattr(notebook, "ensure", lambda section, **kw: asked.update(kw))
    namespace = dict(given)
    notebook.notebook_records(section, namespace)
    return asked, namespace


def test_a_seed_list_is_read_in_every_common_spelling_never_split_into_characters(monkeypatch):
    spellings = {
        "[1337, 42]": [1337, 42], "1337,42": [1337, 42], "1337, 42": [1337, 42], "1337 42": [1337, 42],
        " 1337  42 ": [1337, 42], "(1337, 42)": [1337, 42], "1337": [1337], "5": [5], 5: [5],
        (1337, 42): [1337, 42], "[1337]": [1337], "['1337', '42']": [1337, 42], "0": [0],
    }
    for given, expected in spellings.items():
        asked, namespace = _asked(monkeypatch, "06_central", seeds=given)
        assert asked["seeds"] == expected and namespace["seeds"] == expected, given
    asked, _ = _asked(monkeypatch, "06_central", seeds=[1337, 42])
    assert asked["seeds"] == [1337, 42]


def test_every_section_parameter_is_read_in_its_common_spellings(monkeypatch):
    asked, namespace = _asked(monkeypatch, "05_confounds", profile="cpu", variants="full attn_only",
                              gains="0.5, 2", gain_variant="ffn_only", train_missing="false", device="cpu",
                              results_dir=Path("r"))
    assert asked == {"profile": "cpu", "seeds": list(sections.PAPER_SEEDS), "variants": ["full", "attn_only"],
                     "gains": [0.5, 2.0], "gain_variant": "ffn_only", "gain_seeds": 3, "train_missing": False,
                     "device": "cpu", "results_dir": "r"}
    assert _asked(monkeypatch, "05_confounds", gain_seeds="2")[0]["gain_seeds"] == 2
    assert namespace["gains"] == [0.5, 2.0] and namespace["train_missing"] is False
    assert _asked(monkeypatch, "05_confounds", gains=2)[0]["gains"] == [2.0]
    assert _asked(monkeypatch, "05_confounds", gains="[1, 4.0]")[0]["gains"] == [1.0, 4.0]
    assert _asked(monkeypatch, "06_central", variants='["full", "ffn_only"]')[0]["variants"] == ["full", "ffn_only"]
    assert _asked(monkeypatch, "06_central", variants="full,ffn_only")[0]["variants"] == ["full", "ffn_only"]
    assert _asked(monkeypatch, "06_central", variants="full")[0]["variants"] == ["full"]
    assert _asked(monkeypatch, "06_central", dropout_twin="True")[0]["dropout_twin"] is True
    assert _asked(monkeypatch, "06_central", train_missing="true")[0]["train_missing"] is True
    assert _asked(monkeypatch, "06_central", device="cuda:1")[0]["device"] == "cuda:1"
    assert _asked(monkeypatch, "09_scale_ladder", ladder_seeds="2")[0]["ladder_seeds"] == 2
    assert _asked(monkeypatch, "10_ffn_escape", perturbations=0)[0]["perturbations"] == 0
    assert _asked(monkeypatch, "08_reproduction", repeats="4", repro_variant="full")[0]["repeats"] == 4


@pytest.mark.parametrize("section, name, value", [
    ("06_central", "seeds", "abc"), ("06_central", "seeds", "1.5"), ("06_central", "seeds", -1),
    ("06_central", "seeds", "1337 -42"), ("06_central", "seeds", []), ("06_central", "seeds", ""),
    ("06_central", "seeds", True), ("06_central", "seeds", [1.5]), ("06_central", "seeds", 2**63),
    ("06_central", "seeds", "[1337, 42"), ("06_central", "seeds", {"a": 1}),
    ("06_central", "variants", "fulll"), ("06_central", "variants", ["full", "bogus"]), ("06_central", "variants", 3),
    ("06_central", "profile", "cpu-typo"), ("06_central", "profile", 5),
    ("06_central", "train_missing", "yes"), ("06_central", "train_missing", 1), ("06_central", "dropout_twin", "no"),
    ("06_central", "device", "gpu"), ("06_central", "results_dir", 5), ("06_central", "results_dir", ""),
    ("05_confounds", "gains", [0.0, 1.0]), ("05_confounds", "gains", "-1"), ("05_confounds", "gains", "x"),
    ("05_confounds", "gains", "nan"), ("05_confounds", "gain_variant", "attn-only"),
    ("09_scale_ladder", "ladder_seeds", 0), ("09_scale_ladder", "ladder_seeds", "two"),
    ("10_ffn_escape", "perturbations", -1), ("08_reproduction", "repeats", 1.5),
])
def test_a_bad_section_parameter_is_one_line_naming_it_its_value_and_the_fix(monkeypatch, section, name, value):
    with pytest.raises(ValueError) as raised:
        _asked(monkeypatch, section, **{name: value})
    message = str(raised.value)
    assert isinstance(raised.value, parameters.ParameterError)
    assert "\n" not in message and message.startswith(f"{name} must be "), message
    assert f"got {value!r}: pass -p {name} " in message, message


def test_a_notebook_given_seeds_as_a_raw_string_asks_for_exactly_those_seeds(tmp_path):
    """``-r seeds 1337`` through papermill: the string is one seed, not the digits 1, 3 and 7."""
    params = {"profile": "smoke", "seeds": "1337", "dropout_twin": False, "results_dir": str(tmp_path / "results"),
              "train_missing": True}
    executed = execute_notebook(NOTEBOOKS[3], params, tmp_path / "out")
    nb = json.loads(executed.read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert 'seeds = "1337"' in "".join(injected[0]["source"])
    records = [json.loads(p.read_text()) for p in (tmp_path / "results").rglob("*.json")]
    assert sorted((r["profile"], r["variant"], r["seed"]) for r in records) == sorted(
        ("smoke", v, 1337) for v in sections.CENTRAL_VARIANTS)


@pytest.mark.parametrize("page", [*NOTEBOOKS, ROOT / "book" / "confounds.py"], ids=lambda p: p.stem)
def test_a_parameters_cell_names_its_sections_parameters_and_retypes_no_default(page):
    """A parameters cell holds the names :func:`residual_lib.pages.parameters.defaults` lists; every default but
    the profile and the switches is None there, so the section's defaults are written once."""
    import ast
    import re

    text = page.read_text()
    cell = re.search(r'^# %% tags=\["parameters"[^\n]*\n(.*?)(?=^# %%)', text, flags=re.M | re.S).group(1)
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(cell).body}
    section = "05_confounds" if page.stem == "confounds" else page.stem
    assert set(values) == set(parameters.defaults(section)), page.name
    retyped = {k: v for k, v in values.items() if v is not None and k not in ("profile", "train_missing", "device")}
    assert retyped == {}, f"{page.name} retypes section defaults: {retyped}"


@pytest.mark.parametrize("page", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_section_notebooks_parameters_cell_is_the_generated_one(page):
    text = page.read_text()
    cell = re.search(r'^# %% tags=\["parameters"[^\n]*\n(.*?)(?=^# %%)', text, flags=re.M | re.S).group(1)
    assert cell.strip() == parameters.parameters_cell(page.stem)


def test_a_parameters_cell_is_rewritten_from_the_sections_defaults(tmp_path):
    page = tmp_path / "05_confounds.py"
    page.write_text('# %% [markdown]\n# text\n\n# %% tags=["parameters", "remove-cell"]\nprofile = "cpu"\n'
                    "gains = [1.0]\n\n# %%\nx = 1\n")
    assert parameters.sync_parameters_cell(page)
    assert parameters.parameters_cell("05_confounds") in page.read_text() and "gains = None" in page.read_text()
    assert page.read_text().endswith("\n\n# %%\nx = 1\n") and not parameters.sync_parameters_cell(page)
