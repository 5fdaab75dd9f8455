"""Precision per profile, the CPU kernels a run names, and the fast CPU paths of the paper
profiles (int32 dropout masks, sliced batches): bits tied to the key and the kernels, records
made under the portable AVX2 pin still verified bitwise, one run counted once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from residual_lib.run.isa import CPU_ISA, ISA_ENV
from residual_lib.run.model import _drop_threshold, keep_mask
from residual_lib.run.profiles import ProfileError, get_profile
from residual_lib.run.runs import Run
from residual_lib.run.runtime import machine_isa
from residual_lib.storage.records import read_record
from residual_lib.study.frames import load_records
from residual_lib.training.store import obtain
from residual_lib.training.train import train
from residual_lib.training.verify import verify_record

ROOT = Path(__file__).resolve().parents[1]

#: smoke with the paper profiles' CPU settings: bf16 autocast, dropout 0.2 with int32 masks,
#: each batch of 16 in slices of 4
FAST = dict(precision="bf16", cpu_dropout="int32", cpu_micro_batch=4)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in CPU_ISA and k != ISA_ENV}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _bits(path: Path) -> str:
    rec = read_record(path)
    return json.dumps([rec["final_val_loss"], rec["curves"], rec["diagnostics"]], sort_keys=True)


def test_the_paper_profiles_train_in_bf16_and_the_stand_ins_keep_their_keys():
    assert get_profile("paper-10m").precision == "bf16" and get_profile("paper-124m").precision == "bf16"
    assert get_profile("paper-10m").cpu_micro_batch == 16 and get_profile("paper-10m").cpu_dropout == "int32"
    # the fields added later are left out of a stand-in's dict at their defaults: keys as before
    assert not {"precision", "cpu_dropout", "cpu_micro_batch"} & set(get_profile("cpu").to_dict())
    assert {"precision": "bf16", "cpu_dropout": "int32", "cpu_micro_batch": 16}.items() <= \
        get_profile("paper-10m").to_dict().items()
    assert Run("cpu", "full", 1).key != Run(get_profile("cpu", precision="bf16"), "full", 1).key
    with pytest.raises(ProfileError, match="precision"):
        get_profile("smoke", precision="fp16")
    with pytest.raises(ProfileError, match="divide"):
        get_profile("smoke", cpu_micro_batch=5)


def test_int32_masks_drop_at_the_asked_rate_and_follow_the_generator():
    assert _drop_threshold(0.2) == -(2**31) + 858_993_459  # round(0.2 * 2^32)
    torch.manual_seed(0)
    mask = keep_mask(torch.Size((1000, 1000)), 0.2, "cpu")
    assert mask.dtype == torch.bool and mask.shape == (1000, 1000)
    assert abs(1 - mask.float().mean().item() - 0.2) < 0.002  # 10^6 draws: sd 4e-4
    torch.manual_seed(0)
    assert torch.equal(keep_mask(torch.Size((1000, 1000)), 0.2, "cpu"), mask)


def test_two_bf16_runs_are_bitwise_equal_and_record_their_precision_and_kernels():
    profile = get_profile("smoke-dropout", max_iters=60, **FAST)
    a, b = (train(Run(profile, "full", 3), progress=False) for _ in range(2))
    assert json.dumps(a["curves"]) == json.dumps(b["curves"]) and a["final_val_loss"] == b["final_val_loss"]
    assert a["final_val_loss"] < a["eval_floor"] - 0.1  # it learns
    prov = a["provenance"]
    assert prov["precision"] == "bf16 autocast" and prov["cpu_threads"] == 1
    assert prov["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and prov["isa_mode"] == "native"
    # fp32 and torch's masks are another run, with other numbers
    other = train(Run(get_profile("smoke-dropout", max_iters=60), "full", 3), progress=False)
    assert other["final_val_loss"] != a["final_val_loss"]


def test_slices_of_a_batch_give_the_whole_batch_gradient():
    """cpu_micro_batch changes how a batch is computed, not what: the same data, and losses
    that agree with the whole batch's to float rounding (fp32, no dropout)."""
    whole = train(Run(get_profile("smoke", max_iters=40), "attn_only", 2), progress=False)
    sliced = train(Run(get_profile("smoke", max_iters=40, cpu_micro_batch=4), "attn_only", 2), progress=False)
    for split in ("train", "val"):
        a, b = whole["curves"][split]["loss"], sliced["curves"][split]["loss"]
        assert len(a) == len(b) and max(abs(x - y) / x for x, y in zip(a, b)) < 1e-5


def test_a_killed_bf16_run_resumes_bitwise(tmp_path, monkeypatch):
    import residual_lib.training.train as train_module

    run = Run(get_profile("smoke-dropout", max_iters=80, **FAST), "ffn_only", 4)
    whole, _ = obtain([run], tmp_path / "whole", progress=False, checkpoint_every=30)[0]

    class Killed(BaseException):
        pass

    original = train_module.take_step

    def dying(trainer, step, log):
        if step == 50:
            raise Killed
        return original(trainer, step, log)

    with monkeypatch.context() as patch:
        patch.setattr(train_module, "take_step", dying)
        with pytest.raises(Killed):
            obtain([run], tmp_path / "killed", progress=False, checkpoint_every=30)
    resumed, trained = obtain([run], tmp_path / "killed", progress=False, checkpoint_every=30)[0]
    assert trained and read_record(resumed)["provenance"]["resumed_from_step"] == 30
    assert _bits(resumed) == _bits(whole)


def test_a_record_made_under_the_portable_pin_verifies_bitwise_on_the_fastest_kernels(tmp_path):
    """A smoke record trained in a child process with RESIDUAL_CPU_ISA=avx2, as every committed
    record was, verifies from this process (the machine's fastest kernels): verify reruns it
    under the kernels it names."""
    code = ("import sys, residual_lib\nfrom residual_lib.run.runs import Run\nfrom residual_lib.training.store import obtain\n"
            "print(obtain([Run('smoke', 'full', 6)], sys.argv[1], progress=False)[0][0])")
    made = subprocess.run([sys.executable, "-c", code, str(tmp_path / "results")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=_env(**{ISA_ENV: "avx2"}))
    assert made.returncode == 0, made.stderr
    path = Path(made.stdout.strip().splitlines()[-1])
    assert read_record(path)["provenance"]["cpu_capability"] == "AVX2"
    cert = verify_record(path)
    assert cert["equal"] is True, cert["first_difference"]
    assert cert["record_cpu_capability"] == cert["rerun_cpu_capability"] == "AVX2"


def test_a_committed_records_first_steps_reproduce_under_the_portable_pin():
    """The first 31 steps of the committed cpu attn_only seed-1337 record, made on another
    machine with the AVX2 pin, are bitwise the same here under the same pin."""
    committed = read_record(ROOT / "results" / "cpu" / "attn_only_seed1337_a28e5f2f3b15c1d0.json")
    code = ("import json, residual_lib\nfrom residual_lib.run.runs import Run\nfrom residual_lib.training.train import train\n"
            "rec = train(Run(residual_lib.get_profile('cpu', max_iters=31), 'attn_only', 1337), progress=False)\n"
            "print(json.dumps({'loss': rec['curves']['train']['loss'], 'isa': rec['provenance']['cpu_capability']}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=_env(**{ISA_ENV: "avx2"}))
    assert result.returncode == 0, result.stderr
    fresh = json.loads(result.stdout.strip().splitlines()[-1])
    assert "cpu_capability" not in committed["provenance"]  # made before records named their kernels
    assert len(fresh["loss"]) == 4  # steps 0, 10, 20 and 30
    assert fresh["loss"] == committed["curves"]["train"]["loss"][:4]
    assert fresh["isa"] in ("AVX2", "DEFAULT", "NO AVX")  # pinned on x86; other CPUs have their own


@pytest.mark.skipif(machine_isa() in ("DEFAULT", "NO AVX"), reason="no vector kernels to fall back from")
def test_kernels_other_than_those_asked_for_are_named_in_one_line(tmp_path):
    args = [sys.executable, "-m", "residual_lib", "train", "--variant", "full", "--profile", "smoke", "--max-iters",
            "2", "--results", str(tmp_path), "--quiet"]
    slow = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=_env(ATEN_CPU_CAPABILITY="default"))
    assert slow.returncode == 0, slow.stderr
    lines = [line for line in slow.stderr.splitlines() if "kernels" in line]
    assert len(lines) == 1 and "ATEN_CPU_CAPABILITY=default" in lines[0] and machine_isa() in lines[0]
    assert read_record(Path(slow.stdout.strip().splitlines()[-1]))["provenance"]["cpu_capability"] == "DEFAULT"
    bad = subprocess.run([*args[:-2], str(tmp_path / "other"), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=_env(**{ISA_ENV: "avx512"}))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and ISA_ENV in bad.stderr
    assert not (tmp_path / "other").exists()


def test_two_records_of_one_key_count_as_one_run(tmp_path, capsys):
    path, _ = obtain([Run("smoke", "full", 9)], tmp_path / "results", progress=False)[0]
    copy = tmp_path / "results" / "elsewhere" / "smoke" / path.name
    copy.parent.mkdir(parents=True)
    shutil.copy(path, copy)
    frame = load_records(tmp_path / "results")
    assert len(frame) == 1 and frame.path.iloc[0] == str(path)  # the one where the trainer files it
    assert frame.cpu_capability.iloc[0] == torch.backends.cpu.get_cpu_capability()
    assert frame.precision.iloc[0] == "fp32"
    err = capsys.readouterr().err
    assert "left out 1 record file filed outside <results>/<profile>/" in err and str(copy.parent) in err
    # both folders asked for by name: two records of one key, one run
    frame = load_records([path.parent, copy.parent])
    assert len(frame) == 1 and frame.path.iloc[0] == str(path)
    err = capsys.readouterr().err
    assert "left out 1 record file with the key of another (one run counts once)" in err and str(copy.parent) in err


@pytest.mark.parametrize("variant", ["full", "attn_only", "ffn_only", "no_residual"])
def test_under_bf16_every_variant_keeps_an_fp32_residual_stream(variant):
    """Autocast makes each sublayer's output bf16; Full adds it to an fp32 stream, so a variant
    without a residual must get it back in fp32 too, or its stream alone would round in bf16."""
    from residual_lib.run.data import load_corpus
    from residual_lib.training.state import RunState

    profile = get_profile("smoke-dropout", **FAST)
    state = RunState(Run(profile, variant, 1), load_corpus(profile.dataset), "cpu")
    x, y = state.next_batch()
    with state.autocast:
        _, loss, hidden = state.model(x, y, return_hidden=True)
    assert all(h.dtype == torch.float32 for h in hidden) and loss.dtype == torch.float32


def test_a_record_made_on_the_default_kernels_verifies_and_a_failed_child_leaves_no_verdict(tmp_path):
    from residual_lib.run.runs import RunError
    from residual_lib.training.verify import _verify_elsewhere, certificate_path

    code = ("import sys, residual_lib\nfrom residual_lib.run.runs import Run\nfrom residual_lib.training.store import obtain\n"
            "print(obtain([Run(residual_lib.get_profile('smoke', max_iters=40), 'ffn_only', 6)], sys.argv[1], "
            "progress=False)[0][0])")
    made = subprocess.run([sys.executable, "-c", code, str(tmp_path / "results")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=_env(ATEN_CPU_CAPABILITY="default"))
    assert made.returncode == 0, made.stderr
    path = Path(made.stdout.strip().splitlines()[-1])
    assert read_record(path)["provenance"]["cpu_capability"] == "DEFAULT"
    cert = verify_record(path)
    assert cert["equal"] is True and cert["rerun_cpu_capability"] == "DEFAULT"
    # a child that fails before it writes its certificate leaves none behind, not the last one
    with pytest.raises(RunError, match="failed"):
        _verify_elsewhere(path, _env(**{ISA_ENV: "bogus"}), False, None)
    assert not certificate_path(path).exists()


def test_dropout_must_be_below_one_and_the_reference_must_be_nanogpts(tmp_path):
    from residual_lib.commands.bench import _ReferenceLoop
    from residual_lib.run.runs import RunError

    with pytest.raises(ProfileError, match="below 1"):
        get_profile("smoke", dropout=1.0)
    other = tmp_path / "model.py"
    other.write_text("x = 1\n")
    with pytest.raises(RunError, match="nanoGPT's model.py"):
        _ReferenceLoop(other, get_profile("smoke"), 65, "cpu")


@pytest.mark.parametrize(("signum", "at"), [(signal.SIGINT, 44), (signal.SIGTERM, 44), (signal.SIGTERM, 59),
                                           (signal.SIGINT, 79)])
def test_a_run_stopped_during_a_step_saves_a_checkpoint_after_it_and_resumes_bitwise(tmp_path, monkeypatch, signum,
                                                                                       at, capsys):
    """Ctrl-C or SIGTERM while a step trains: the step finishes, a checkpoint is saved after it
    (not only at the last multiple of checkpoint_every), and the resumed run equals an
    uninterrupted one bit for bit; also at a step that ends on a regular checkpoint (59: saved
    once) and at the last step (79: the resumed run only evaluates). Inside a command's
    ``sigterm_stops`` scope, as the command line runs it."""
    from residual_lib.core.stop import sigterm_stops

    import residual_lib.training.train as train_module

    run = Run(get_profile("smoke-dropout", max_iters=80, **FAST), "ffn_only", 4)
    whole, _ = obtain([run], tmp_path / "whole", progress=False, checkpoint_every=30)[0]
    original = train_module.take_step

    def interrupted(trainer, step, log):
        if step == at:
            os.kill(os.getpid(), signum)  # arrives while the step trains
        return original(trainer, step, log)

    with monkeypatch.context() as patch:
        patch.setattr(train_module, "take_step", interrupted)
        with pytest.raises(KeyboardInterrupt), sigterm_stops():
            obtain([run], tmp_path / "stopped", progress=False, checkpoint_every=30)
    said = capsys.readouterr().err
    assert (f"stopped after step {at + 1}: checkpoint saved" in said) == (at != 59)  # 59: the regular save stands
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    resumed, trained = obtain([run], tmp_path / "stopped", progress=False, checkpoint_every=30)[0]
    assert trained and read_record(resumed)["provenance"]["resumed_from_step"] == at + 1
    assert _bits(resumed) == _bits(whole)


def test_a_fused_group_stopped_during_a_step_saves_one_checkpoint_and_resumes_bitwise(tmp_path, monkeypatch, capsys):
    """The same stop for a group trained together: its trainer takes its own step
    (:mod:`residual_lib.training.fused`), and the group's one checkpoint resumes every run."""
    from residual_lib.core.stop import sigterm_stops

    import residual_lib.training.fused as fused_module

    profile = get_profile("smoke-dropout", max_iters=60, **FAST)
    runs = [Run(profile, "ffn_only", 4), Run(profile, "full", 4)]
    whole = [path for path, _ in obtain(runs, tmp_path / "whole", fuse=2, progress=False, checkpoint_every=25)]
    original = fused_module.take_step

    def interrupted(trainer, step, log):
        if step == 33:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(trainer, step, log)

    with monkeypatch.context() as patch:
        patch.setattr(fused_module, "take_step", interrupted)
        with pytest.raises(KeyboardInterrupt), sigterm_stops():
            obtain(runs, tmp_path / "stopped", fuse=2, progress=False, checkpoint_every=25)
    assert "stopped after step 34: checkpoint saved" in capsys.readouterr().err
    assert len(list((tmp_path / "stopped").rglob("*.pt"))) == 1
    resumed = obtain(runs, tmp_path / "stopped", fuse=2, progress=False, checkpoint_every=25)
    for (path, trained), alone in zip(resumed, whole):
        prov = read_record(path)["provenance"]
        assert trained and prov["resumed_from_step"] == 34 and prov["fused_models"] == 2
        assert _bits(path) == _bits(alone)


def test_a_record_whose_processes_ran_on_different_kernels_is_refused_by_verify_before_it_retrains(monkeypatch):
    import residual_lib.training.verify as verify_module
    from residual_lib.run.runs import RunError

    bf16 = {"device": "cpu", "cpu_capability": "AVX512", "precision": "bf16 autocast"}
    h100 = {"device": "cuda", "device_name": "NVIDIA H100", "precision": "bf16 autocast"}
    monkeypatch.setattr(verify_module, "obtain", lambda *a, **k: pytest.fail("retrained"))
    for processes in ([{**bf16, "amx": True}, {**bf16, "amx": False}],  # AMX, then none
                      [h100, {**h100, "device_name": "NVIDIA H200"}],  # a GPU of another model, on a cuda record
                      [{**bf16, "amx": True}, h100]):
        prov = {**processes[-1], "processes": processes}
        monkeypatch.setattr(verify_module, "read_record", lambda path: {"provenance": prov})
        with pytest.raises(RunError, match=r"^mixed\.json: its run was resumed on kernels of another kind partway .*: "
                                           r"train it afresh into another results folder and compare$"):
            verify_record("results/x/mixed.json")
