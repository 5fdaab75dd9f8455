"""What the book computes and draws: building it (:mod:`.book`, :mod:`.sphinxext`), executing
its notebooks (:mod:`.execute`, :mod:`.notebook`, :mod:`.parameters`), figures and tables
(:mod:`.plots`, :mod:`.tables`), each chapter's findings (:mod:`.chapters`) and the scorecard
(:mod:`.scorecard`). Imports only the layers below."""
