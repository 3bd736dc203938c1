# agentmemory: make run (the embedded default), make test (every test), make bench.
SHELL := /bin/bash
GO ?= go
TEMPORAL_VERSION := v1.5.1
TEMPORAL := $(CURDIR)/bin/temporal
WORKFLOWCHECK_VERSION := v0.6.0
WORKFLOWCHECK := $(CURDIR)/bin/workflowcheck
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/bin/staticcheck
ERRCHECK_VERSION := v1.30.0
ERRCHECK := $(CURDIR)/bin/errcheck
# RACE_PKGS: the packages with concurrency, tested under -race by make test (and only there:
# test-go runs every other package without it). The Go SDK's own module (sdk/) also runs -race.
RACE_PKGS := ./internal/state/... ./internal/notes/... ./internal/events/... ./internal/receipts/... ./internal/proposals/... ./internal/sdktest/...
# RACE_API_TESTS: the api tests that drive state, notes and receipts concurrently (internal/state
# is tested through the API); test-go-race runs them again under -race.
RACE_API_TESTS := Concurrent|Parallel|ReadDoesNotWait|ReadYourWrites
# AGENTMEMORY_SKIP_LOG: where tests record a capability skip (a tool or extension missing here:
# internal/skips, the SDKs' conformance suites); make test empties it first and prints one
# summary line of it last (scripts/skips.sh).
export AGENTMEMORY_SKIP_LOG ?= $(CURDIR)/.skips.log
DATA_DIR ?= ./data
ADDR ?= 127.0.0.1:8080
PYTHON ?= python3
# DEV_FLAGS: more flags for `agentmemory dev`, e.g. make run DEV_FLAGS=--fake-model
DEV_FLAGS ?=

.PHONY: run build test test-short test-go test-go-race test-sdk test-sdk-short test-python test-typescript test-console vet bench demo lint temporal workflowcheck staticcheck errcheck skips-reset postgres gate-report

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

## test: every test, on SQLite and PostgreSQL (127.0.0.1:5432, database test) and a Temporal
## dev server: go vet, the main module (RACE_PKGS under -race), the Go SDK's module, and
## workflowcheck over workflows/, the linters (make lint),
## the Python and TypeScript SDKs, and the Console in Chromium; last, one line naming every
## capability skip (a test skipped because a tool or an extension is missing here) and why.
test: skips-reset temporal lint test-go test-go-race test-sdk workflowcheck test-python test-typescript test-console
	$(WORKFLOWCHECK) ./workflows/...
	@./scripts/skips.sh summary

skips-reset:
	@./scripts/skips.sh reset

## test-console: the Console in real Chromium (Debian's /usr/bin/chromium driven by
## playwright-core from api/console/e2e, never a downloaded browser) against the real binary
## (console.e2e.mjs, and boards.e2e.mjs for Boards and Bridges); screenshots land in
## api/console/e2e/screenshots/.
test-console: temporal
	@command -v chromium >/dev/null || { echo "test-console needs Debian's chromium: apt-get install -y chromium"; exit 1; }
	cd api/console/e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund && node console.e2e.mjs && node boards.e2e.mjs

## test-typescript: the TypeScript SDK (sdk/typescript): npm ci, the tsc build, then node --test
## against the real binary (./bin/agentmemory) and the Temporal CLI in ./bin.
test-typescript: temporal build
	cd sdk/typescript && npm ci --no-audit --no-fund
	cd sdk/typescript && npm run build && npm run build:test
	cd sdk/typescript && AGENTMEMORY_BIN=$(CURDIR)/bin/agentmemory AGENTMEMORY_TEMPORAL_CLI=$(TEMPORAL) \
		node --test --test-concurrency=1 build/test/*.test.js

## test-python: the Python SDK (sdk/python, standard library unittest) against the real binary:
## the conformance suite (sdk/conformance), the tool kit against /mcp, the README quick start,
## the block/context cache (counted by a proxy), the OpenAI Agents SDK and LangChain
## integrations and examples (with stand-ins of the frameworks: no Python package index here).
test-python: temporal build
	cd sdk/python && AGENTMEMORY_BIN=$(CURDIR)/bin/agentmemory AGENTMEMORY_TEMPORAL_CLI=$(TEMPORAL) \
		$(PYTHON) -m unittest discover -s tests -t tests -v

## test-short: the fast tests only, of both modules: no PostgreSQL, no Temporal dev server.
test-short: test-sdk-short
	$(GO) test -count=1 -short ./...

## vet: go vet over the main module and the SDK's module.
vet:
	$(GO) vet ./...
	cd sdk && $(GO) vet ./...

## test-go: every package of the main module but RACE_PKGS.
test-go:
	$(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS))")

## test-go-race: RACE_PKGS and the api's RACE_API_TESTS under the race detector.
test-go-race:
	$(GO) test -count=1 -race -timeout 30m $(RACE_PKGS)
	$(GO) test -count=1 -race -timeout 30m -run '$(RACE_API_TESTS)' ./api/

## test-sdk: the Go SDK's own module (package sdk: standard library only; sdk/tools and its
## OpenAI and Anthropic adapters; the examples) under -race against the real binary
## (./bin/agentmemory) and the Temporal CLI in ./bin; then the README's quick start built in a
## scratch module pointed at this clone's sdk/ (scripts/sdk-from-clone.sh).
test-sdk: temporal build
	cd sdk && AGENTMEMORY_BIN=$(CURDIR)/bin/agentmemory AGENTMEMORY_TEMPORAL_CLI=$(TEMPORAL) $(GO) test -count=1 -race ./...
	GO=$(GO) ./scripts/sdk-from-clone.sh

test-sdk-short:
	cd sdk && $(GO) vet ./... && $(GO) test -count=1 -short ./...
	GO=$(GO) ./scripts/sdk-from-clone.sh

## workflowcheck: go.temporal.io/sdk/contrib/tools/workflowcheck in ./bin, installed once with
## go install; make test runs it over workflows/ (no non-deterministic call in a workflow).
workflowcheck: $(WORKFLOWCHECK)
$(WORKFLOWCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

## bench: API throughput and latency (32 agents) against the HTTP floor, the database's own
## compare-and-swap and /healthz, with issue 16's targets and ratios for both databases; the
## shipped pool defaults, and on PostgreSQL the same load with a tuned pool (ratio printed).
## Knowledge (issue 18), both databases: recall@5 of the right ABCD procedure with the stand-in
## embedder, ingest chunks/s, retrieve p50/p99 at 1k and 10k chunks (200 retrievals each), and
## the vector search alone at 1k, 10k and 50k chunks (exact scan, sqlite-vec; docs/scaling.md).
## How cost grows (issue 16), both databases: merge writes at 1k/10k/100k stored states and at
## 200 B/4 KB/16 KB bodies, block reads at 10/100/500 notes, receipt verify at 1k/10k/100k
## receipts, one subject's erasure (1k states, 10k turns; needs bin/temporal).
## One working-memory request at a time through each handler (issue 16): CPU time and
## allocations per request, the API against the floor.
## Block reads during sustained note writes (issue 27, internal/notes BlockDuringWrites):
## reads right after a write of the reader's source against quiet reads, interleaved rounds.
bench:
	$(GO) test -run '^$$' -bench WM -benchtime 5000x -timeout 30m ./bench
	$(GO) test -run '^$$' -bench Request -benchmem -benchtime 5000x -timeout 30m ./bench
	$(GO) test -run '^$$' -bench Knowledge -benchtime 200x -timeout 30m ./bench
	$(GO) test -run '^$$' -bench Growth -benchtime 500x -timeout 60m ./bench
	$(GO) test -run '^$$' -bench ProofAvailability -benchtime 4000x ./internal/receipts
	$(GO) test -run '^$$' -bench . -benchtime 200x ./internal/notes
	$(GO) test -run '^$$' -bench VectorSearch -benchtime 10x -timeout 30m ./internal/knowledge

## gate-report: recall and false refusals of the local gate on the labelled sets of
## internal/redact/testdata/ (corpusSets in corpus_test.go), per set, per kind and per input
## part (title, body, tags, fields), with the failing cases.
gate-report:
	GATE_REPORT=1 $(GO) test -count=1 -run '^TestGateCorpus$$' -v ./internal/redact/

## demo: replay the ABCD sample conversations against a running `make run`.
demo: build
	ADDR=$(ADDR) DATA_DIR=$(DATA_DIR) ./scripts/demo.sh

## lint: gofmt -l, go vet, staticcheck (staticcheck.conf) and errcheck
## (scripts/errcheck-excludes.txt) over both modules, and every statement discarding an error
## (`_ = f()`) outside tests commented with why that is safe (scripts/lint.sh).
lint: staticcheck errcheck
	GO=$(GO) STATICCHECK=$(STATICCHECK) ERRCHECK=$(ERRCHECK) ./scripts/lint.sh

## staticcheck, errcheck: the linters in ./bin, installed once with go install at pinned versions.
staticcheck: $(STATICCHECK)
$(STATICCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
errcheck: $(ERRCHECK)
$(ERRCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/kisielk/errcheck@$(ERRCHECK_VERSION)

## postgres: start the local PostgreSQL cluster if it is down.
postgres:
	@pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
