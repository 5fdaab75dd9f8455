"""The commands on top of everything: sweeps over the section notebooks (:mod:`.sweep`), the
benchmark (:mod:`.bench`), the device check (:mod:`.devicecheck`) and rerunning committed
records (:mod:`.verify`). ``python -m residual_lib`` (``residual_lib/__main__.py``) dispatches
to them."""
