"""The commands on top of everything: sweeps over the section notebooks (:mod:`.sweep`), the
benchmark (:mod:`.bench`) and the device check (:mod:`.devicecheck`). ``python -m residual_lib``
(``residual_lib/__main__.py``) dispatches to them, and to ``verify``
(:mod:`residual_lib.training.verify`, which retrains through :func:`~residual_lib.training.store.obtain`)."""
