"""Where a page's runs trained, in words (residual_lib.pages.platforms): one clause per device and kernels."""

import pandas as pd
import pytest

from residual_lib.pages import platforms

AMX = {"device": "cpu", "cpu_threads": 1, "cpu_capability": "AVX512", "precision": "bf16 autocast", "amx": True}
NO_AMX = {**AMX, "amx": False}


@pytest.fixture
def records(monkeypatch):
    """A frame of runs whose record files hold the provenance given per path."""
    provenance = {}
    monkeypatch.setattr(platforms, "read_record", lambda path: {"provenance": provenance[path]})

    def make(*runs):
        for variant, seed, prov in runs:
            provenance[f"{variant}-{seed}"] = prov
        return pd.DataFrame([{"variant": v, "seed": s, "path": f"{v}-{s}"} for v, s, _ in runs])
    return make


def test_one_platform_is_one_clause(records):
    assert platforms.trained_on(records(("attn_only", 1337, AMX))) == (
        "AttnOnly seed 1337 trained on one CPU core with AVX-512 kernels and the AMX matrix units.")
    both = platforms.trained_on(records(("attn_only", 1337, AMX), ("full", 1337, AMX)))
    assert both == "Each of the two runs trained on one CPU core with AVX-512 kernels and the AMX matrix units."


def test_runs_on_different_kernels_are_named_by_platform(records):
    text = platforms.trained_on(records(("attn_only", 1337, AMX), ("ffn_only", 1337, NO_AMX),
                                      ("ffn_only", 42, NO_AMX)))
    assert text.startswith("The records name where each run trained: ")
    assert "AttnOnly seed 1337 on one CPU core with AVX-512 kernels and the AMX matrix units; " in text
    assert "FFNOnly seeds 42 and 1337 on one CPU core with AVX-512 kernels and no AMX matrix units. " in text
    assert text.endswith("reproduces bit for bit only on kernels of its own kind.")


def test_runs_that_differ_only_where_a_record_is_silent_are_not_said_to_differ_in_kernels(records):
    old = {"device": "cpu", "cpu_threads": 1}
    text = platforms.trained_on(records(("full", 7, AMX), ("full", 8, old), ("attn_only", 1, {})))
    assert text == ("The records name where each run trained: Full seed 7 on one CPU core with AVX-512 kernels and the AMX "
                    "matrix units; Full seed 8 on one CPU core, its kernels not recorded; AttnOnly seed 1 on a "
                    "device its record does not name.")


def test_a_gpu_run_beside_a_cpu_run_is_said_to_differ_in_kernels(records):
    gpu = {"device": "cuda", "device_name": "NVIDIA H200", "cpu_capability": "AVX512"}
    text = platforms.trained_on(records(("full", 1337, gpu), ("full", 42, AMX)))
    assert text.startswith("The records name where each run trained: Full seed 1337 on one NVIDIA H200; Full seed 42 on ")
    assert text.endswith("only on kernels of its own kind.")


def test_amx_is_named_for_bf16_only_and_gpus_by_name():
    assert platforms.platform({**AMX, "precision": "fp32"}) == "one CPU core with AVX-512 kernels"
    assert platforms.platform({"device": "cuda", "device_name": "NVIDIA H200"}) == "one NVIDIA H200"
    assert platforms.platform({}) == "a device its record does not name"
    old = platforms.platform({"device": "cpu", "cpu_threads": 1, "precision": "bf16 autocast"})
    assert old == "one CPU core, its kernels not recorded"
    assert platforms.platform({**NO_AMX, "cpu_threads": 2, "cpu_capability": "AVX2"}) == (
        "two CPU threads with AVX2 kernels and no AMX matrix units")


def test_no_records_no_sentence(records):
    assert platforms.trained_on(records()) == ""


def test_a_cpu_record_names_the_processors_model_and_the_page_says_it(tmp_path):
    from residual_lib.storage.provenance import cpu_model

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\n")
    assert cpu_model(str(info)) == "AMD EPYC"
    assert cpu_model(str(tmp_path / "absent")) not in ("", None)  # the platform's name stands in
    assert platforms.platform({**NO_AMX, "device_name": "AMD EPYC"}) == (
        "one CPU core of an AMD EPYC with AVX-512 kernels and no AMX matrix units")
    assert platforms.platform({**AMX, "precision": "fp32", "device_name": "Intel(R) Xeon(R) 8480+"}) == (
        "one CPU core of an Intel(R) Xeon(R) 8480+ with AVX-512 kernels")
    assert platforms.platform({**AMX, "device_name": "x86_64"}).startswith("one CPU core with ")


def test_fp32_runs_on_two_processor_models_are_said_to_differ_in_their_bits(records):
    fp32 = {**AMX, "precision": "fp32"}
    text = platforms.trained_on(records(("ffn_only", 1, {**fp32, "device_name": "Intel(R) Xeon(R) 8480+"}),
                                        ("ffn_only", 3, {**fp32, "device_name": "AMD EPYC"})))
    assert "FFNOnly seed 3 on one CPU core of an AMD EPYC with AVX-512 kernels." in text
    assert text.endswith("only on kernels of its own kind.")
    # a record that names no model may have run on either: the runs are listed, no difference claimed
    unnamed = platforms.trained_on(records(("ffn_only", 1, {**fp32, "device_name": "x86_64"}),
                                           ("ffn_only", 3, {**fp32, "device_name": "AMD EPYC"})))
    assert unnamed == ("The records name where each run trained: FFNOnly seed 1 on one CPU core with AVX-512 kernels; "
                       "FFNOnly seed 3 on one CPU core of an AMD EPYC with AVX-512 kernels.")


def test_a_run_resumed_without_its_earlier_processes_kernels_says_which_steps_its_record_names(records):
    text = platforms.trained_on(records(("attn_only", 1337, {**AMX, "resumed_from_step": 4900}),
                                        ("ffn_only", 1337, {**AMX, "processes": [{**AMX, "from_step": 950}]})))
    assert text == ("Each of the two runs trained on one CPU core with AVX-512 kernels and the AMX matrix units. "
                    "Both runs were resumed from checkpoints that did not keep the "
                    "kernels of earlier processes, so their records name the kernels of their last steps only "
                    "(AttnOnly seed 1337 from step 4,900 and FFNOnly seed 1337 from step 950): the earlier steps may "
                    "have run on other kernels.")
    # each step beside its own run, whatever order the records come in
    text = platforms.trained_on(records(("ffn_only", 1337, {**AMX, "resumed_from_step": 4950}),
                                        ("ffn_only", 42, {**AMX, "resumed_from_step": 2000})))
    assert "(FFNOnly seed 1337 from step 4,950 and FFNOnly seed 42 from step 2,000)" in text
    same = platforms.trained_on(records(("full", 1, {**AMX, "resumed_from_step": 900}),
                                        ("full", 2, {**AMX, "resumed_from_step": 900})))
    assert "their last steps only (from step 900 on): " in same
    three = platforms.trained_on(records(("full", 1, {**AMX, "resumed_from_step": 900}), ("full", 2, AMX),
                                         ("full", 3, {**AMX, "resumed_from_step": 900})))
    assert "Full seeds 1 and 3 were resumed" in three  # not all: each is named
    three = platforms.trained_on(records(*[("full", s, {**AMX, "resumed_from_step": 900}) for s in (1, 2, 3)]))
    assert "All three runs were resumed from checkpoints that did not keep the kernels of earlier processes" in three
    whole = {**AMX, "resumed_from_step": 950, "processes": [{**AMX, "from_step": 0}, {**AMX, "from_step": 950}]}
    assert platforms.trained_on(records(("full", 1337, whole))) == (
        "Full seed 1337 trained on one CPU core with AVX-512 kernels and the AMX matrix units.")  # every step named


def test_a_run_whose_processes_ran_on_different_kernels_is_said_to_reproduce_on_no_single_platform(records):
    mixed = {**NO_AMX, "resumed_from_step": 950, "processes": [{**AMX, "from_step": 0}, {**NO_AMX, "from_step": 950}]}
    text = platforms.trained_on(records(("ffn_only", 1337, mixed), ("attn_only", 1337, NO_AMX)))
    assert text.startswith("AttnOnly seed 1337 trained on one CPU core with AVX-512 kernels and no AMX matrix units. "
                           "FFNOnly seed 1337 trained in processes on kernels of different kinds (from step 0 on one CPU core "
                           "with AVX-512 kernels and the AMX matrix units; from step 950 on one CPU core with AVX-512 kernels "
                           "and no AMX matrix units), so it reproduces bit for bit on no single platform.")
    assert "only on kernels of its own kind" not in text  # one run on one kind: nothing between runs to say
    both = platforms.trained_on(records(("ffn_only", 1337, mixed), ("attn_only", 1337, NO_AMX), ("full", 1, AMX)))
    assert both.endswith("only on kernels of its own kind.")  # two runs, each on one kind, and the kinds differ
    alone = platforms.trained_on(records(("full", 1, mixed)))
    assert alone.startswith("Full seed 1 trained in processes on kernels of different kinds (from step 0 on ")


def test_kinds_of_kernels_differ_where_both_provenances_say_so_and_a_silent_one_sets_nothing_apart():
    from residual_lib.storage.provenance import kernels_differ

    assert not kernels_differ([AMX, {**AMX, "device_name": "x86_64"}, {**AMX, "device_name": "AMD EPYC"}])
    assert kernels_differ([{**AMX, "device_name": "Intel Xeon"}, {**AMX, "device_name": "AMD EPYC"}])
    assert kernels_differ([AMX, NO_AMX]) and not kernels_differ([AMX, {**AMX, "amx": None}])
    assert not kernels_differ([{**AMX, "precision": "fp32"}, {**NO_AMX, "precision": "fp32"}])  # AMX runs no fp32
    assert kernels_differ([AMX, {**AMX, "mkl_enable_instructions": "AVX2"}])  # a limit on MKL: other kernels
    avx2 = {"device": "cpu", "cpu_capability": "AVX2", "precision": "fp32"}  # the pin and an AVX2 machine: one kind
    assert not kernels_differ([avx2, {**avx2, "mkl_enable_instructions": "AVX2", "onednn_max_cpu_isa": "AVX2"}])
    gpu = {"device": "cuda", "device_name": "NVIDIA H100"}
    assert kernels_differ([gpu, {**gpu, "device_name": "NVIDIA H200"}]) and kernels_differ([gpu, AMX])
    assert not kernels_differ([gpu, {"device": "cuda"}, {}])


def test_a_mixed_run_names_each_span_of_one_platform_once(records):
    steps = [{**AMX, "from_step": 0}, {**AMX, "from_step": 300}, {**NO_AMX, "from_step": 900}]
    text = platforms.trained_on(records(("full", 1, {**NO_AMX, "resumed_from_step": 900, "processes": steps})))
    assert text == ("Full seed 1 trained in processes on kernels of different kinds (from step 0 on one CPU core with "
                    "AVX-512 kernels and the AMX matrix units; from step 900 on one CPU core with AVX-512 kernels and no "
                    "AMX matrix units), so it reproduces bit for bit on no single platform.")  # its own, no closing line
    unknown = [{**AMX, "from_step": 0, "device_name": "x86_64"}, {**AMX, "from_step": 300, "device_name": "AMD EPYC"}]
    text = platforms.trained_on(records(("full", 2, {**AMX, "device_name": "AMD EPYC", "processes": unknown})))
    assert text == "Full seed 2 trained on one CPU core of an AMD EPYC with AVX-512 kernels and the AMX matrix units."


def test_limits_on_mkl_and_onednn_are_named_where_they_set_kernels_apart(records):
    limited = {**AMX, "mkl_enable_instructions": "AVX512", "onednn_max_cpu_isa": "AVX512_CORE"}
    assert platforms.platform(limited) == ("one CPU core with AVX-512 kernels and the AMX matrix units under "
                                           "MKL_ENABLE_INSTRUCTIONS=AVX512 and ONEDNN_MAX_CPU_ISA=AVX512_CORE")
    pinned = {"device": "cpu", "cpu_threads": 1, "cpu_capability": "AVX2", "precision": "fp32",
              "mkl_enable_instructions": "AVX2", "onednn_max_cpu_isa": "AVX2"}
    assert platforms.platform(pinned) == "one CPU core with AVX2 kernels"  # the pin's own settings
    text = platforms.trained_on(records(("full", 1, AMX), ("full", 2, limited)))
    assert "under MKL_ENABLE_INSTRUCTIONS=AVX512" in text and text.endswith("only on kernels of its own kind.")


def test_a_span_of_one_kind_is_named_by_the_process_that_names_its_model(records):
    steps = [{**AMX, "from_step": 0, "device_name": "x86_64"}, {**AMX, "from_step": 300, "device_name": "AMD EPYC"},
             {**NO_AMX, "from_step": 900}]
    text = platforms.trained_on(records(("full", 1, {**NO_AMX, "processes": steps})))
    assert "(from step 0 on one CPU core of an AMD EPYC with AVX-512 kernels and the AMX matrix units; from step 900 " \
           "on one CPU core with AVX-512 kernels and no AMX matrix units)" in text
