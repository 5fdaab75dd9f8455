"""What a run is: the block variants and the model (:mod:`.architecture`, :mod:`.model`), the
named settings (:mod:`.profiles`), a run and its key (:mod:`.runs`), the corpora and their
batches (:mod:`.data`, :mod:`.batches`), and the platform a run names -- device, precision,
kernels and threads (:mod:`.runtime`, :mod:`.isa`). Imports only :mod:`residual_lib.core`."""
