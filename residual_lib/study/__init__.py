"""What the records say: record frames (:mod:`.frames`), statistics (:mod:`.analysis`,
:mod:`.scaling`, :mod:`.escapes`, :mod:`.gains`, :mod:`.budget`), which runs each section plans
and reads (:mod:`.sections`), and the paper's own values as data (:mod:`.paper`,
``paper_claims.csv``). Imports only the layers below (core, run, storage, training)."""
