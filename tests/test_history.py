"""How the rules changed: a rule's code cannot change without an entry in the history, and
the first rules, re-implemented, judge constructed records as they did."""

from __future__ import annotations

from residual_lib.pages.scorecard import RULES, history


def test_every_rule_is_pinned_and_a_changed_rule_needs_an_entry_in_the_history():
    assert set(history.RULE_DIGESTS) == set(RULES)
    changed = [name for name in RULES if history.rule_digest(name) != history.RULE_DIGESTS[name]]
    assert not changed, (f"the code of rule(s) {changed} changed: add the change to history.CHANGES (commit, date, "
                         "what, why, which records existed) and update history.RULE_DIGESTS")


def test_the_changes_are_in_order_and_name_existing_rules():
    dates = [c.date for c in history.CHANGES]
    assert dates == sorted(dates) and dates[0] > history.FIRST_DATE
    assert all(set(c.rules) <= set(RULES) for c in history.CHANGES)
    assert {c.commit for c in history.changes_for("hidden_norm_growth")} >= {"5380c9f", "54b7525", "4cc3fa7"}
