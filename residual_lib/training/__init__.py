"""How a run trains: one optimisation step (:mod:`.step`) over its state (:mod:`.state`), the
single and fused trainers (:mod:`.train`, :mod:`.fused`, :mod:`.batched`), checkpoints,
diagnostics and progress, :func:`.store.obtain` (a run's record, cached or trained) and
:mod:`.verify` (a committed record's run trained again and compared bit for bit).
Imports only the layers below (core, run, storage)."""
