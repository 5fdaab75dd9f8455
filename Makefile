# Quick start:  make run   (virtual environment + the cpu profile's four variants + a results table)
#               make test  (virtual environment + the test suite)
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
PROFILE ?= cpu
SEEDS   ?= 1337
RESULTS ?= results
VARIANTS ?= full attn_only ffn_only no_residual

.PHONY: venv run sweep reproduce book notebooks test clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# Trains what is missing (records already under $(RESULTS)/ are reused), then prints the table.
run: venv
	@for seed in $(SEEDS); do for variant in $(VARIANTS); do \
	  $(PY) -m residual_lib train --variant $$variant --profile $(PROFILE) --seed $$seed --results $(RESULTS) || exit 1; \
	done; done
	$(PY) -m residual_lib summary $(RESULTS) --profile $(PROFILE)

# Every section notebook at $(PROFILE), via papermill (trains only what is missing).
sweep: venv
	$(PY) -m residual_lib sweep --all --profile $(PROFILE) --seeds $(SEEDS)

# Every record the book shows at the cpu profile: all sections for five seeds and the scale
# ladder, trained where missing under $(RESULTS)/ (RESULTS=fresh-results re-creates them
# from scratch elsewhere). About 4 hours on 2 cores from scratch.
REPRO_SEEDS ?= 1337 42 123 7 8
reproduce: venv
	$(PY) -m residual_lib sweep --all --profile cpu --seeds $(REPRO_SEEDS) --results $(RESULTS)

# The jupyter-book site in _build/html, from the records under results/$(PROFILE) (nothing is trained).
book: venv
	$(PY) -m residual_lib book --profile $(PROFILE)

# The .ipynb twins of the .py notebooks, which Colab opens from the repository: the same cells,
# plus the Colab set-up cell and a note on the default profile (residual_lib/pages/book.py, write_twins;
# the ids of unchanged cells are kept, so a regeneration changes only what changed).
notebooks: venv
	$(PY) -m residual_lib.pages.book

# pytest-xdist: PYTEST_WORKERS processes share the tests (the smoke sweep and the book they read
# are built once, tests/conftest.py); PYTEST_WORKERS=0 runs them in this process.
PYTEST_WORKERS ?= 2
test: venv
	$(PY) -m ruff check residual_lib tests notebooks scripts book
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --durations=10

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info _build
