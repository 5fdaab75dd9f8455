"""Where records live: the record schema, reading and sealing one (:mod:`.records`), the claims
that keep two processes off one run (:mod:`.locks`), and what made a record
(:mod:`.provenance`). Imports only the layers below (core, run)."""
