"""Chapter 5, the measurement confounds: whether a constant runtime gain changes what is learned, and how
much noise a single random-batch validation estimate carries."""

from __future__ import annotations

import pandas as pd

from .. import analysis, scorecard


def gain_table(gain_runs: pd.DataFrame) -> pd.DataFrame:
    """Final and best validation loss of each gain's run, indexed by gain in increasing order."""
    return gain_runs.set_index("gain")[["final_val_loss", "best_val_loss"]].sort_index()


def gain_finding(gain_runs: pd.DataFrame, merged_at: int | None, tolerance: float = scorecard.GAIN_TOL) -> str:
    """Whether the training curves across gains merge: the step from which their spread stays below
    ``tolerance`` (``merged_at``, None if never, from :func:`analysis.gain_equivalence`), and how far apart
    the final validation losses end."""
    final = gain_runs.final_val_loss
    if merged_at is not None:
        merged = (f"The training-loss spread across gains stays below {tolerance} nats from step {merged_at:,}"
                  f" of {int(gain_runs.steps.iloc[0]):,}")
    else:
        merged = f"The spread across gains never stays below {tolerance} nats"
    return f"{merged}; the final validation losses differ by {final.max() - final.min():.4f} nats."


def gain_caption(gain_variant: str, seed: int, tolerance: float = scorecard.GAIN_TOL) -> str:
    """The caption of the gain curves: which variant and seed, and the tolerance line of the spread panel."""
    return (f"Training loss of `{gain_variant}` (seed {seed}) with a constant gain g on every sublayer output"
            " (top), and the spread across gains at each logged step, log scale (bottom; the dashed line is the"
            f" {tolerance}-nat tolerance).")


#: The alt text of the gain curves.
GAIN_ALT = ("Two stacked line charts against training step: training loss in nats per gain, and the max minus min"
            " across gains on a log scale with a dashed tolerance line.")


def noise_table(estimates: pd.DataFrame) -> pd.DataFrame:
    """Per variant, the std and the largest absolute deviation of random-batch evaluations of a final model
    from the same model's fixed-batch loss (:func:`analysis.val_estimates`): the noise of one estimate."""
    deviation = estimates.groupby("variant")["deviation"]
    noise = pd.DataFrame({"std": deviation.std(), "max |deviation| (nats)": deviation.agg(lambda d: d.abs().max())})
    return noise.reindex(analysis.variant_order(estimates))


#: The caption and alt text of the evaluation-noise figure.
SPREAD_CAPTION = ("Each point is one random-batch evaluation of a final model minus the same model's fixed-batch loss:"
                  " the noise a single nanoGPT-style validation estimate carries.")
SPREAD_ALT = ("Strip chart per variant of random-batch minus fixed-batch validation loss in nats, scattered around a"
              " zero line.")
