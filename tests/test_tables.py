"""The book's table formatting: one rule for every page."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from residual_lib.pages.tables import MISSING, listing, missing_runs, number, table
from residual_lib.run.runs import Run


@pytest.mark.parametrize("value, text", [
    (3.347312, "3.347"),
    (-0.0571, "−0.057"),  # a true minus sign
    (-0.0002, "0.000"),  # no "−0.000" ...
    (-4e-7, "−4.0×10⁻⁷"),  # ... unless small values are shown (a column that spans orders of magnitude)
    (0.0, "0.000"),
    (4.5e-7, "4.5×10⁻⁷"),  # a starved gradient does not print as 0.000
    (2.5e6, "2.5×10⁶"),
    (float("nan"), MISSING),
    (None, MISSING),
    (pd.NA, MISSING),
    (np.float32(1.25), "1.250"),
    (7, "7"),
    (np.int64(123456), "123,456"),
    (True, "yes"),
    (np.bool_(False), "no"),
    ("cpu", "cpu"),
    ("", MISSING),
    (math.inf, "∞"),
])
def test_each_cell_is_formatted_by_one_rule(value, text):
    assert number(value, small=value != -0.0002) == text


def test_a_table_has_readable_headers_no_index_and_dashes_for_missing_values():
    frame = pd.DataFrame({"final_val_loss": [1.81234, np.nan], "boot_low": [0.1, 0.2], "n_a": [5, 3]},
                         index=pd.Index(["attn_only", "ffn_only"], name="variant"))
    html = table(frame, index=True).to_html()
    assert "final val loss (nats)" in html and "bootstrap 95% CI low" in html and "n a" in html
    assert ">variant<" in html and ">AttnOnly<" in html  # the index, kept on request, as a named column
    assert ">1.812<" in html and f">{MISSING}<" in html and "nan" not in html.lower()
    plain = table(frame).to_html()
    assert ">AttnOnly<" not in plain  # no pandas index unless asked for
    assert 'class="book-table"' in plain


def test_an_interval_is_one_column_whose_bound_near_zero_reads_as_zero():
    frame = pd.DataFrame({"mean": [0.2], "ci_low": [1.2e-5], "ci_high": [0.41], "p_value": [1.2e-5]})
    html = table(frame).to_html()
    assert ">[0.000, 0.410]<" in html and "Welch 95% CI" in html and "ci high" not in html
    assert "1.2×10⁻⁵" in html  # the p-value column keeps its scientific notation


def test_numbers_written_as_text_align_right_as_numbers_do_and_words_stay_left():
    frame = pd.DataFrame({"step": ["8,750", MISSING, "12"], "run": ["seed 1", "seed 2", "3 a"],
                          "gap": ["−0.012", "3.2×10⁻⁴", None], "loss": [1.0, 2.0, 3.0], "escaped": [True, False, True],
                          "none": [MISSING] * 3, "share": ["3.7%", "12%", "1e-05"], "commit": ["8008129", "1234567", "—"]})
    html = table(frame).to_html()
    rule = html.split("{")[0]  # the selectors of the one right-aligning rule
    right = {int(c) for c in re.findall(r"_row0_col(\d+)", rule)}
    assert right == {0, 2, 3, 6}  # step, gap, loss, share; not words, booleans, dashes only or commits


def test_two_columns_with_one_header_are_refused():
    frame = pd.DataFrame({"mean": [1.0], "mean (nats)": [2.0]})
    with pytest.raises(ValueError, match="pass headers="):
        table(frame)


def test_decimals_and_a_caption_can_be_chosen():
    html = table(pd.DataFrame({"floor": [3.34731]}), decimals=4, caption="Floors").to_html()
    assert ">3.3473<" in html and "Floors" in html


def test_a_column_of_everyday_magnitudes_never_shows_scientific_notation_or_minus_zero():
    frame = pd.DataFrame({"gap": [1.645, -0.0002, 0.0001], "grad": [0.74, 2e-7, 5e-9]})
    html = table(frame).to_html()
    assert "0.000" in html and "−0.000" not in html and "-0.000" not in html
    assert "2.0×10⁻⁷" in html and "0.740" in html  # gradient norms span orders of magnitude
    assert "e-0" not in html
    # a norm that is exactly 0 does not turn its column's small norms into 0.000 (the sentences say 3.0×10⁻⁶)
    html = table(pd.DataFrame({"median norm": [0.246, 3e-6, 0.0]})).to_html()
    assert "3.0×10⁻⁶" in html and "0.246" in html


def test_prose_helpers_write_lists_constants_and_missing_runs_as_the_pages_do():
    assert listing([3]) == "3" and listing(["a", "b"]) == "a and b" and listing([1, 2, 3]) == "1, 2 and 3"
    assert missing_runs([Run("smoke", "full", 1), Run("smoke", "ffn_only", 2)]).to_dict("list") == {
        "run": ["smoke Full seed 1", "smoke FFNOnly seed 2"]}  # as pages name variants, "Full" too
    assert Run("smoke", "full", 1).label() == "smoke full seed 1"  # logs and errors keep the code name


def test_decimals_can_be_chosen_per_column():
    frame = pd.DataFrame({"tokens per parameter": [35.218, 0.384], "minutes": [3.232, 80.207], "loss": [1.5564, 2.0]})
    html = table(frame, decimals={"tokens per parameter": 1, "minutes": 0}).to_html()
    assert all(t in html for t in ("35.2", "0.4", ">3<", ">80<", "1.556"))
    assert "35.218" not in html and "80.207" not in html


def test_a_column_with_a_large_integer_groups_every_integer_from_a_thousand_and_a_table_can_be_named():
    frame = pd.DataFrame({"steps": [2000, 20_000, 150], "seed": [1337, 42, 123]})
    html = table(frame, anchor="tab-budget").to_html()
    assert ">2,000<" in html and ">20,000<" in html and ">150<" in html
    assert ">1337<" in html  # a column without a number of 10,000 or more keeps its integers plain
    assert html.count('id="T_tab-budget"') == 1 and html.count(' id="') == html.count(' id="T_tab-budget')


def test_tables_name_the_variants_as_the_prose_does():
    frame = pd.DataFrame({"difference": ["ffn_only − attn_only", "full"], "attn_only": [1.0, 2.0]})
    html = table(frame).to_html()
    assert ">FFNOnly − AttnOnly<" in html and ">Full<" in html and ">AttnOnly</th>" in html
    assert "attn_only" not in html and "attn only" not in html


def test_variant_code_names_read_as_the_pages_write_them_and_full_only_where_it_names_a_run():
    from residual_lib.pages.names import display_name, prose_names

    assert display_name("full") == "Full" and display_name("no_residual") == "NoResidual"
    assert display_name("cpu full seed 42; cpu attn_only seed 1") == "cpu Full seed 42; cpu AttnOnly seed 1"
    assert display_name("the full budget, a full seed list") == "the full budget, a full seed list"
    # the variant in differences, orders, lists, comparisons, values and the possessive; the word elsewhere
    assert display_name("attn_only - full") == "AttnOnly − Full"
    assert display_name("ffn_only - floor") == "FFNOnly − floor"
    assert display_name("attn_only > ffn_only > full in 0 of 5 seeds") == "AttnOnly > FFNOnly > Full in 0 of 5 seeds"
    assert display_name("cover attn_only, ffn_only, full, no_residual") == "cover AttnOnly, FFNOnly, Full, NoResidual"
    assert display_name("full vs attn_only; full 1.922 against 1.690; full (1.486 against 1.4)") == \
        "Full vs AttnOnly; Full 1.922 against 1.690; Full (1.486 against 1.4)"
    assert display_name("full's block-0 norm; more than full does; ratio to full") == \
        "Full's block-0 norm; more than Full does; ratio to Full"
    assert display_name("the full analysis, at its full budget, in full - see") == \
        "the full analysis, at its full budget, in full - see"
    assert prose_names("`cpu full seed 1` and cpu full seed 1") == "`cpu full seed 1` and cpu Full seed 1"


def test_a_frame_can_keep_a_column_of_everyday_magnitudes_out_of_scientific_notation():
    frame = pd.DataFrame({"norm": [1.3, 4.9e-4], "loss gap": [1.3, 4.9e-4]})
    frame.attrs["everyday"] = ["loss gap"]
    html = table(frame).to_html()
    assert html.count("×10") == 1 and ">0.000<" in html  # the norm spans orders of magnitude; the loss gap does not


def test_a_column_spanning_orders_of_magnitude_writes_a_one_digit_value_as_its_neighbours_are_written():
    norms = pd.DataFrame({"seed": [42, 123, 1337], "FFNOnly": [2.3e-4, 5.8e-4, 4.3e-7], "AttnOnly": [0.683, 0.006, 0.74]})
    html = table(norms).to_html()
    assert ">5.8×10⁻⁴<" in html and ">0.001<" not in html  # not rounded to one digit beside 2.3×10⁻⁴
    assert ">0.006<" in html  # a column that does not span keeps fixed decimals
    assert ">0.246<" in table(pd.DataFrame({"norm": [0.246, 1.2e-5]})).to_html()  # two digits or more: fixed
    spread = table(pd.DataFrame({"std": [0.026, 4.0e-4, 0.0098]})).to_html()  # everyday values beside one tiny
    assert ">0.010<" in spread and ">4.0×10⁻⁴<" in spread and "9.8×10⁻³" not in spread
    assert ">0.006<" in table(pd.DataFrame({"p_value": [0.006, 1.2e-5]})).to_html()  # p as the prose writes it
    minutes = table(pd.DataFrame({"minutes": [3.0, 0.4, 0.0004]}), decimals=0).to_html()
    assert ">3<" in minutes and "×10⁰" not in minutes  # no decimals: only the rule for what rounds to 0


def test_a_table_of_sentences_is_marked_to_read_as_blocks_where_it_does_not_fit():
    frame = pd.DataFrame({"threshold": ["FLOOR_TOL"], "meaning": ["nats either side of the floor"]})
    assert 'class="book-table book-table-blocks"' in table(frame, blocks=True).to_html()
    assert 'class="book-table"' in table(frame).to_html()
