# octoric: the only entry points. `make run` and `make test` install what they need first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON_SYS ?= $(shell command -v python3.11 || command -v python3)
VENV       := .venv
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.octoric-setup
RMR_CRATE  := rmr/Cargo.toml
RMR_LIB    := build/lib/librmr_si.so
RUN_ARGS   ?=
PYTEST_ARGS ?=

.PHONY: help setup native run test test-all bench eval charts lint fmt clean lock doctor

help:
	@echo "make run       run the embedded RIC, simulated gNBs, xApps and video flows (RUN_ARGS='--duration 30')"
	@echo "make test      the default test suite (< 20 min): Python + native"
	@echo "make test-all  every suite, slow and sanitizer ones included"
	@echo "make bench     benchmarks; writes docs/benchmarks.md"
	@echo "make eval-webrtc  Chromium calls across the emulated cell beside the GCC model (root, ~60 min)"
	@echo "make eval      the five papers' reports: OCC (build/occ-eval/), Dumbo, MORC, ToN'22, SEC'23 (docs/eval-*.md)"
	@echo "make charts    the xApps' Helm charts: lint, render, schema check, policy scan, descriptors, NetworkPolicies"
	@echo "make images    build the xApps' container images (docker or buildah; REGISTRY=, TAG=)"
	@echo "make lint      ruff + mypy + the layers contract (import-linter) (+ clippy/rustfmt)"
	@echo "make fmt       format Python and native code"
	@echo "make setup     create .venv, install locked deps, build native parts, install redis-server"
	@echo "make clean     remove build outputs and the venv"

# --- setup (idempotent; re-runs when the lock or pyproject changes) ---------------------
setup: $(STAMP) native

$(STAMP): pyproject.toml requirements.lock
	@test -n "$(PYTHON_SYS)" || { echo "error: python3.11 not found" >&2; exit 1; }
	@$(PYTHON_SYS) -c 'import sys; assert sys.version_info[:2] == (3, 11), "octoric needs Python 3.11, found " + sys.version' 
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install -q pip==26.3 setuptools==84.2.1 wheel==0.48.0
	$(PY) -m pip install -q -r requirements.lock
	@# lenient: the mode setuptools supports (compat is deprecated); -qq: its advisory box is noise
	$(PY) -m pip install -qq --no-deps --no-build-isolation -e . --config-settings editable_mode=lenient
	@# start-up hooks (octoric/site_hooks.py, the same files the wheel installs): a plain
	@# `import ricxappframe` in this venv binds our librmr_si.so (docs/rmr.md), and, in a run whose
	@# Redis wants a login (OCTORIC_REDIS_PASSWORD_FILE set), its ricsdl logs in
	@# (octoric.xapps.base.sdl.use_redis_credentials): an unmodified ricxappframe xApp joins as is
	$(PY) -m octoric.site_hooks
	@command -v redis-server >/dev/null || $(MAKE) --no-print-directory redis
	@touch $(STAMP)

# the dashboard test's browser: Debian's Chromium (Playwright drives it; no browser download)
.PHONY: browser
browser:
	@command -v chromium >/dev/null || { echo "installing chromium from Debian (needs root)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# the Chromium WebRTC call's camera clip (sim/chromium/call.py makes a Y4M from opencv-doc's
# Megamind.avi with ffmpeg on first use, cached in ~/.cache/octoric; never committed)
.PHONY: webrtc-clip
webrtc-clip:
	@{ command -v ffmpeg >/dev/null && [ -f /usr/share/doc/opencv-doc/examples/data/Megamind.avi ]; } || { \
	  echo "installing ffmpeg and opencv-doc from Debian (needs root)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq ffmpeg opencv-doc >/dev/null; }

# the live metrics test's server: Debian's Prometheus (tests/core/test_prometheus_live.py starts
# its own on a free loopback port; the package's system service is not needed by octoric)
.PHONY: prometheus
prometheus:
	@command -v prometheus >/dev/null || [ -x /usr/bin/prometheus ] || { echo "installing prometheus from Debian (needs root)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

.PHONY: redis
redis:
	@echo "installing redis-server from Debian (needs root)"
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null

E2SM_CRATE := e2sm/native/Cargo.toml
REALUE_CRATE := sim/realue/native/Cargo.toml
OCC_CRATE := xapps/occ/native/Cargo.toml
LOADGEN_CRATE := experiments/native/Cargo.toml
RELAY_CRATE := ric/native/Cargo.toml
RMR_CLIENT_CRATE := rmr/client/Cargo.toml
native:
	@# install, then rename: a running process keeps the library it mapped (an in-place copy
	@# would change the pages under it)
	@if [ -f $(RMR_CRATE) ]; then \
	  cargo build -q --release --manifest-path $(RMR_CRATE) && mkdir -p build/lib && \
	  install -m 0755 rmr/target/release/librmr_si.so $(RMR_LIB).new && mv -f $(RMR_LIB).new $(RMR_LIB); \
	fi
	@if [ -f $(E2SM_CRATE) ]; then \
	  cargo build -q --release --manifest-path $(E2SM_CRATE) && mkdir -p build/lib && \
	  install -m 0755 e2sm/native/target/release/libocto_e2sm.so build/lib/libocto_e2sm.so.new && mv -f build/lib/libocto_e2sm.so.new build/lib/libocto_e2sm.so; \
	fi
	@if [ -f $(REALUE_CRATE) ]; then \
	  cargo build -q --release --manifest-path $(REALUE_CRATE) && mkdir -p build/lib && \
	  install -m 0755 sim/realue/native/target/release/libocto_realue.so build/lib/libocto_realue.so.new && mv -f build/lib/libocto_realue.so.new build/lib/libocto_realue.so; \
	fi
	@if [ -f $(OCC_CRATE) ]; then \
	  cargo build -q --release --manifest-path $(OCC_CRATE) && mkdir -p build/lib && \
	  install -m 0755 xapps/occ/native/target/release/libocto_occ.so build/lib/libocto_occ.so.new && mv -f build/lib/libocto_occ.so.new build/lib/libocto_occ.so; \
	fi
	@if [ -f $(RELAY_CRATE) ]; then \
	  cargo build -q --release --manifest-path $(RELAY_CRATE) && mkdir -p build/lib && \
	  install -m 0755 ric/native/target/release/libocto_e2relay.so build/lib/libocto_e2relay.so.new && mv -f build/lib/libocto_e2relay.so.new build/lib/libocto_e2relay.so; \
	fi
	@# octoric bench loop's load tools: the gNBs' replay and the feedback sink
	@if [ -f $(LOADGEN_CRATE) ]; then \
	  cargo build -q --release --manifest-path $(LOADGEN_CRATE) && mkdir -p build/lib build/bin && \
	  install -m 0755 experiments/native/target/release/libocto_loadgen.so build/lib/libocto_loadgen.so.new && mv -f build/lib/libocto_loadgen.so.new build/lib/libocto_loadgen.so && \
	  install -m 0755 experiments/native/target/release/feedback_sink build/bin/feedback_sink.new && mv -f build/bin/feedback_sink.new build/bin/feedback_sink; \
	fi

lock:
	$(PY) -m pip freeze --exclude-editable | grep -v '^octoric' > requirements.lock

# --- main job ---------------------------------------------------------------------------
run: setup
	$(VENV)/bin/octoric run $(RUN_ARGS)

doctor: setup
	$(VENV)/bin/octoric doctor

# --- tests ------------------------------------------------------------------------------
test: setup browser prometheus cxx
	$(PY) -m octoric.testrun $(PYTEST_ARGS)

# liboctopus's build and tests: CMake, a C++17 compiler, GoogleTest, nlohmann-json (Debian);
# clang for its libFuzzer target (make test-all, srsran_agent/liboctopus/scripts/fuzz.sh)
CXX_PKGS := cmake g++ ninja-build libgtest-dev nlohmann-json3-dev clang
.PHONY: cxx
cxx:
	@if ! command -v cmake >/dev/null || ! command -v clang++ >/dev/null || \
	    [ ! -f /usr/include/gtest/gtest.h ] || [ ! -f /usr/include/nlohmann/json.hpp ]; then \
	  echo "installing $(CXX_PKGS) from Debian (needs root)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(CXX_PKGS) >/dev/null; fi

test-all: setup browser webrtc-clip prometheus cxx images
	@command -v valgrind >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; }
	$(PY) -m octoric.testrun --all $(PYTEST_ARGS)

bench: setup cxx
	$(VENV)/bin/octoric bench --write docs/benchmarks.md

# the OCC paper's comparison on every Mahimahi trace and the PHY routes, then on traces the
# project was never tuned on: the 5G production dataset's driving downloads as Mahimahi traces
# (docs/eval-occ.md); EVAL_ARGS adds options
EVAL_TRACES ?= ../shared/traces/mahimahi
RACA_ZIP ?= ../shared/traces/5g-raca/5G-production-dataset.zip
RACA_TRACES = build/traces/raca-5g-driving
$(RACA_TRACES)/.done: $(RACA_ZIP)
	$(VENV)/bin/octoric sim mahimahi-from-csv $(RACA_ZIP) --match Download/Driving --out $(RACA_TRACES)
	touch $@
# Every `octoric eval NAME --out DIR` writes DIR/report.md, results.json and its PNGs; the
# claims reports are then published as docs/eval-NAME.md, .json and .png (`octoric eval report
# docs/eval-NAME.json` rebuilds one from its stored runs)
EVAL_PAPERS := dumbo morc ton22 sec23
eval: setup $(RACA_TRACES)/.done
	$(VENV)/bin/octoric eval occ --traces $(EVAL_TRACES) --seeds 5 --out build/occ-eval --timeseries ATT-LTE-driving --timeseries Verizon-LTE-short $(EVAL_ARGS)
	cp build/occ-eval/occ-eval-*.png docs/
	$(VENV)/bin/octoric eval occ --traces $(RACA_TRACES) --no-contention --routes --seeds 5 --no-mapping-ablation --out build/occ-eval-raca $(EVAL_ARGS)
	@set -e; for n in $(EVAL_PAPERS); do \
	  echo "octoric eval $$n --traces $(EVAL_TRACES) --out build/$$n-eval"; \
	  $(VENV)/bin/octoric eval $$n --traces $(EVAL_TRACES) --out build/$$n-eval; \
	  cp build/$$n-eval/report.md docs/eval-$$n.md; \
	  cp build/$$n-eval/results.json docs/eval-$$n.json; \
	  cp build/$$n-eval/eval-$$n*.png docs/; \
	done

# Chromium's libwebrtc across the emulated cell beside the simulator (issue #47; root, ~60 min:
# 45 calls of 60 s, each alone on the machine), published as docs/eval-webrtc.*
.PHONY: eval-webrtc
eval-webrtc: setup browser webrtc-clip
	$(VENV)/bin/octoric eval webrtc --traces $(EVAL_TRACES) --out build/webrtc-eval
	cp build/webrtc-eval/report.md docs/eval-webrtc.md
	cp build/webrtc-eval/results.json docs/eval-webrtc.json
	cp build/webrtc-eval/eval-webrtc.png docs/

# helm lint --strict, helm template x charts/ci values, strict schema check, checkov, descriptors
# (installs helm, k8svalidate and checkov into build/tools on first use; docs/deploy.md); then
# the NetworkPolicies: every xApp port covered, only the RIC platform's pods admitted
charts: setup
	$(PY) -m octoric.deploy.charts
	$(PY) -m pytest -q -p no:cacheprovider tests/deploy/test_chart_netpol.py

# xApp images with docker, or else buildah on bases made from Debian's packages (installed from
# Debian on first use: buildah, podman to run them, mmdebstrap); REGISTRY/TAG name them
REGISTRY ?= registry.local:5000
TAG ?= 1.0.0
IMAGE_PKGS := buildah podman mmdebstrap uidmap
.PHONY: images
images:
	@if ! { command -v docker >/dev/null && docker info >/dev/null 2>&1; } && \
	  ! { command -v buildah >/dev/null && command -v mmdebstrap >/dev/null && command -v podman >/dev/null; }; then \
	  echo "installing $(IMAGE_PKGS) (Debian)"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(IMAGE_PKGS) >/dev/null; fi
	@bash charts/images.sh "$(REGISTRY)" "$(TAG)"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	@for c in $(RMR_CRATE) $(E2SM_CRATE) $(REALUE_CRATE) $(OCC_CRATE) $(LOADGEN_CRATE) $(RELAY_CRATE) $(RMR_CLIENT_CRATE); do if [ -f $$c ]; then \
	  cargo fmt --manifest-path $$c -- --check && \
	  cargo clippy -q --manifest-path $$c --all-targets -- -D warnings || exit 1; fi; done

fmt: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	@for c in $(RMR_CRATE) $(E2SM_CRATE) $(REALUE_CRATE) $(OCC_CRATE) $(LOADGEN_CRATE) $(RELAY_CRATE) $(RMR_CLIENT_CRATE); do if [ -f $$c ]; then cargo fmt --manifest-path $$c; fi; done

clean:
	rm -rf build $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
	@for c in $(RMR_CRATE) $(E2SM_CRATE) $(REALUE_CRATE) $(OCC_CRATE) $(LOADGEN_CRATE) $(RELAY_CRATE) $(RMR_CLIENT_CRATE); do if [ -f $$c ]; then cargo clean -q --manifest-path $$c; fi; done
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
