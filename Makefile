# agentmemory: make run (the embedded default), make test (every test), make bench.
SHELL := /bin/bash
GO ?= go
TEMPORAL_VERSION := v1.5.1
TEMPORAL := $(CURDIR)/bin/temporal
DATA_DIR ?= ./data
ADDR ?= 127.0.0.1:8080
# DEV_FLAGS: more flags for `agentmemory dev`, e.g. make run DEV_FLAGS=--fake-model
DEV_FLAGS ?=

.PHONY: run build test test-short test-console bench demo lint temporal postgres gate-report

## run: install what is missing and start `agentmemory dev` (SQLite + Temporal dev server).
run: temporal build
	./bin/agentmemory dev --addr $(ADDR) --data-dir $(DATA_DIR) $(DEV_FLAGS)

## build: the agentmemory binary in ./bin.
build:
	$(GO) build -o bin/agentmemory ./cmd/agentmemory

## temporal: the Temporal CLI (dev server) in ./bin, installed once with go install.
temporal: $(TEMPORAL)
$(TEMPORAL):
	@echo "Installing the Temporal CLI $(TEMPORAL_VERSION) (the dev server) into ./bin: the first time, go install"
	@echo "downloads and compiles it, which takes about 5 to 25 minutes on a 2-core machine and prints nothing meanwhile."
	GOBIN=$(CURDIR)/bin $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_VERSION)

## test: every test, on SQLite and PostgreSQL (127.0.0.1:5432, database test) and a Temporal dev server.
test: temporal
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) test-console

## test-console: the Console in real Chromium (Debian's /usr/bin/chromium driven by
## playwright-core from api/console/e2e, never a downloaded browser) against the real binary;
## screenshots land in api/console/e2e/screenshots/.
test-console: temporal
	@command -v chromium >/dev/null || { echo "test-console needs Debian's chromium: apt-get install -y chromium"; exit 1; }
	cd api/console/e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund && node console.e2e.mjs

## test-short: the fast tests only (no Temporal dev server, no long integration runs).
test-short:
	$(GO) test -count=1 -short ./...

## bench: API throughput and latency against the database's own compare-and-swap limit, with the
## shipped pool defaults, and on PostgreSQL the same load with a tuned pool (ratio printed).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./bench
	$(GO) test -run '^$$' -bench . -benchtime 200x ./internal/notes

## gate-report: recall and false refusals of the local personal-data gate on the labelled
## corpus internal/redact/testdata/corpus.jsonl, overall and per kind, with the failing cases.
gate-report:
	GATE_REPORT=1 $(GO) test -count=1 -run '^TestGateCorpus$$' -v ./internal/redact/

## demo: replay the ABCD sample conversations against a running `make run`.
demo: build
	ADDR=$(ADDR) DATA_DIR=$(DATA_DIR) ./scripts/demo.sh

## lint: formatting and go vet.
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

## postgres: start the local PostgreSQL cluster if it is down.
postgres:
	@pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
