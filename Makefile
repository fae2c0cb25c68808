# groupscope: `make demo` runs the product, `make test` runs the whole suite.
# Both install what they need (Debian packages, a virtualenv, the package with its extras, Apache
# Kafka's jars from Maven Central into ~/.cache/groupscope) and are safe to run again: every step
# checks first and does nothing when it is already done.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := redis-server chromium chromium-driver maven openssl prometheus prometheus-alertmanager
# the JDK, not only the JRE: javac compiles the Streams test application at first use
JAVA_PACKAGE := openjdk-17-jdk-headless
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: demo test lint format bench docs system-deps venv kafka-jars clean check-fixtures

demo: system-deps venv kafka-jars
	$(BIN)/groupscope demo $(DEMO_ARGS)

test: system-deps venv kafka-jars
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# docs/configuration.md is generated from the settings (collectors/config.py); a test checks it is current
docs: venv
	$(BIN)/python -m collectors.config_reference > docs/configuration.md.tmp
	mv docs/configuration.md.tmp docs/configuration.md

bench: venv system-deps kafka-jars
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Debian packages: installed only when missing. Java 17 (or 21) runs Spark and the Kafka broker: a
# Java already on the PATH (with javac) is used, else Debian's openjdk-17-jdk-headless is installed.
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	{ java -version 2>&1 | grep -Eq 'version "(17|21)' && command -v javac >/dev/null; } || missing="$$missing $(JAVA_PACKAGE)"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@command -v java >/dev/null || { echo "Java 17 is required by Spark: install openjdk-17-jre-headless" >&2; exit 1; }
	@java -version 2>&1 | grep -Eq 'version "(17|21)' || { echo "Spark needs Java 17 (or 21); found: $$(java -version 2>&1 | head -1)" >&2; exit 1; }

venv: $(STAMP)

# Apache Kafka's jars (the embedded broker and kafka-dump-log; kafka-streams for the Streams test
# application, collectors/demo/streams_app), once per version (GROUPSCOPE_KAFKA_VERSION).
kafka-jars: venv
	@$(BIN)/python -m collectors.demo.servers.kafka >/dev/null

$(STAMP): pyproject.toml
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache .ruff_cache build *.egg-info
