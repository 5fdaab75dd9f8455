"""The scorecard: one row per claim of the paper and profile, with a verdict computed
from run records by a stated rule.

Verdicts (:data:`VERDICTS`):

* ``reproduced`` -- the records show what the claim says;
* ``partly reproduced`` -- it holds in some seeds and fails in others (the row gives the counts);
* ``agrees with the paper's confirmed result`` -- for a result the paper itself set aside
  as an anomaly (its intermediate reproduction): ours agrees with the paper's controlled
  result instead;
* ``not reproduced`` -- the records contradict the claim;
* ``new evidence for`` / ``new evidence against`` -- a test the paper could not decide,
  decided here: evidence for or against the paper's proposal, by the direction its rule
  states, not a reproduction of a result;
* ``not testable here`` -- the records exist but the claim cannot be tested with them (a
  platform effect), or no record could test it (a quantity the paper does not define: so
  at every profile, records or not);
* ``inconclusive`` -- the records do not decide: an absolute number of the paper's model, against
  a smaller stand-in; a comparison whose rule needs an interval between seeds, with one seed per
  variant; or a value between a rule's two lines;
* ``not run at this scale`` -- the runs the claim needs at the profile are not all recorded.

Scales: a 10M claim is checked at ``paper-10m`` (the paper's setting) and at ``cpu``
(a ~0.8M-parameter stand-in); a claim the central sweep decides also at ``cpu-dropout``,
the stand-in with ``paper-10m``'s dropout (:data:`residual_lib.run.profiles.DROPOUT_TWIN`); a
124M claim only at ``paper-124m``.

Thresholds. Every number a rule compares with is a constant of :mod:`.limits`, listed in
:data:`.limits.THRESHOLDS` with plausible alternatives; :func:`.sensitivity.sensitivity`
recomputes every verdict at each alternative, and a verdict that changes is marked fragile on
the grid.

The floor. Every "at the floor" compares a loss with the unigram cross-entropy *on the
tokens that loss was measured on* (``eval_floor``: the fixed evaluation batches for fixed
evaluation, the expected value over random windows for random evaluation; see
:func:`residual_lib.run.data.eval_floor`), so the comparison is symmetric: a variant is at the
floor when it is within ``FLOOR_TOL`` nats of it on either side.

Each rule (:mod:`.rules`) is its text and its check, registered together by
:func:`.rule.rule` right above the check, the text built from the same constants and paper
values the check uses; each claim (:mod:`.claims`) names its rule. :mod:`.verdicts` applies
them (rows in the claims file's order), :mod:`.prose` and :mod:`.html` present the result.
"""

from . import limits
from .claims import CLAIMS, TITLES, Claim
from .html import (EVIDENCE, GRID_LABELS, badge, claim_anchor, claims_html, grid, grid_html, grid_note, how_trained,
                   legend, ours_text, profiles_sentence, section_view, verdict_box, verdict_slug)
from .limits import ESCAPE_CONFIDENCE, THRESHOLDS, Threshold, thresholds
from .prose import compared_seeds, count_sentence, headline, scale_shift, stand_in_scope
from .rule import PAPER_SCALE, RULES, VERDICTS, Rule, profiles_for_scale, stand_ins
from .sensitivity import fragile, sensitivity, threshold_table
from .verdicts import build, scale_note


def __getattr__(name: str):
    """``scorecard.FLOOR_TOL`` and the other thresholds read :mod:`.limits` when asked, so
    that inside ``with thresholds(...)`` they give the values the rules use."""
    if name in {t.name for t in THRESHOLDS}:
        return getattr(limits, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ALPHA_NEAR_ONE", "CLAIMS", "EVIDENCE", "Claim", "DRIFT_REL", "ESCAPE_CONFIDENCE", "FLOOR_TOL", "GAIN_TOL", "GRID_LABELS",
    "LAYER0_FROM", "LAYER0_ZERO", "NOISE_SHARE", "PAPER_SCALE", "RECOVERY_MARGIN", "REL_TOL", "RULES", "Rule",
    "SEED_SPREAD", "SPREAD_TOL", "THRESHOLDS", "TITLES", "Threshold", "VERDICTS", "badge", "build", "claim_anchor",
    "claims_html", "compared_seeds", "count_sentence", "fragile", "grid", "grid_html", "grid_note", "how_trained", "legend", "ours_text", "profiles_sentence", "headline", "profiles_for_scale", "scale_note", "scale_shift", "stand_in_scope",
    "section_view", "sensitivity", "stand_ins", "threshold_table", "thresholds", "verdict_box", "verdict_slug",
]
