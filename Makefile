# fieldrelay: one static binary.

BINARY  := bin/fieldrelay
PKG     := github.com/fieldrelay/fieldrelay
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
# The build date is the commit's date, not the clock's: two builds of one commit are
# byte-identical (docs/decisions/0066-supply-chain.md).
DATE    ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
LDFLAGS := -s -w -buildid= -X $(PKG)/cli.version=$(VERSION) -X $(PKG)/cli.commit=$(COMMIT) -X $(PKG)/cli.date=$(DATE)

# Pinned tools, installed from the Go module proxy into bin/tools (gitignored).
STATICCHECK_VERSION := v0.8.2
GOVULNCHECK_VERSION := v1.9.0
TOOLS := $(CURDIR)/bin/tools
# VULNDB: govulncheck's database (-db), e.g. file:///srv/vulndb for a local mirror.
VULNDB ?= https://vuln.go.dev
FUZZTIME ?= 30s

.PHONY: build run run-central central-bench citus-test axe unit e2e test lint lint-openapi fuzz hostile bench bench-node sse-bench crash soak footprint delivery-rate upstream-bench bench-event-lists clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BINARY) .
	@sha256sum $(BINARY)

run: build
	$(BINARY) serve --demo --data .demo

# run-central: the central tier on this machine, to try it: a PostgreSQL cluster in .central/
# migrated by its owner, and two `serve --database` processes on 127.0.0.1:8081 and :8082 as
# the serving role fieldrelay_app, with a generated key file (.ci/run-central; needs Debian's
# postgresql package). It prints what to curl; Ctrl-C stops everything.
run-central: build
	BIN=$(BINARY) .ci/run-central

# central-bench: the central tier's figures in one run on this machine (.ci/central-bench:
# a PostgreSQL cluster of its own with fsync on; ingest through one and two processes,
# pgbench of one event's statements, the score over 1,000 teams, 1,000-item sync batches).
# DUR sets each run's length (default 15s). Needs Debian's postgresql package and python3.
# CITUS=1: the two ingest runs on a Citus coordinator and two workers of its own on this
# machine (the extension built by .ci/build-citus; docs/bench.md has the figure).
central-bench: build
	BIN=$(BINARY) DUR=$(or $(DUR),15s) CITUS=$(CITUS) .ci/central-bench

# citus-test: the central tier's end-to-end suite (e2e TestCentral_*) on Citus: pgtest
# (PGTEST_CITUS=1) starts a coordinator and two workers on loopback ports, and the
# migration distributes the schema by tenant (docs/decisions/0241-citus-test.md). The two
# cases that stop a cluster of their own (DatabaseRestart, StartsBeforeDatabase) run on
# plain PostgreSQL in make e2e and are skipped here. Never part of make test (CI cannot
# fetch Citus): the extension is built by .ci/build-citus; without it every case skips
# with the reason. The routing of the hot statements is reported by TestCitusRouting.
citus-test:
	PGTEST_CITUS=1 go test -count=1 -timeout 60m -v ./store/postgres -run 'TestCitusRouting'
	PGTEST_CITUS=1 go test -count=1 -timeout 60m ./e2e -run 'TestCentral_' -skip 'TestCentral_(DatabaseRestart|StartsBeforeDatabase)'

# axe: axe-core for the console's accessibility checks in Chromium (e2e/console_views_test.go),
# at the version .ci/axe/package-lock.json pins, installed by `npm ci` into .ci/axe/node_modules
# (gitignored): loaded by the test only, never part of the console. Without npm the checks
# are skipped (and fail under CI=true).
axe:
	@if ! command -v npm >/dev/null; then echo "axe: npm is absent: the accessibility checks will be skipped" >&2; \
	elif [ -d .ci/axe/node_modules/axe-core ]; then :; \
	elif ! (cd .ci/axe && npm ci --no-audit --no-fund); then echo "axe: npm ci failed (no registry?): the accessibility checks will be skipped" >&2; fi

# unit: the fast loop: the gofmt check, go vet, then the tests of every package but the
# end-to-end suite, under -race.
# e2e: the end-to-end suite (e2e/: the real binary, built once, driven through its command
# line, its API, headless Chromium and PostgreSQL). -timeout 30m: it runs past go test's
# default 10 minutes under -race on a loaded 2-core machine.
# test: everything CI runs (.ci/run): unit, then e2e; go test's summary closes the output.
E2E_TEST := go test -race -count=1 -timeout 30m ./e2e

unit:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go test -race -count=1 $$(go list ./... | grep -v '^$(PKG)/e2e$$')

e2e: axe
	$(E2E_TEST)

test: unit axe
	$(E2E_TEST)

# lint: the API reference (lint-openapi, below), then staticcheck and govulncheck at pinned
# versions. Redocly and staticcheck must be clean.
# govulncheck fails on a vulnerability that the code reaches (exit 3); when its database
# cannot be reached (no network), it says so and does not fail
# (docs/decisions/0066-supply-chain.md).
$(TOOLS)/staticcheck-$(STATICCHECK_VERSION):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@touch $@

$(TOOLS)/govulncheck-$(GOVULNCHECK_VERSION):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) go install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)
	@touch $@

# lint-openapi: Redocly CLI, at the version .ci/redocly/package-lock.json pins (installed by
# `npm ci` into .ci/redocly/node_modules, gitignored; needs Node.js 20.19+ and npm), lints
# docs/openapi.yaml with .ci/redocly/redocly.yaml: any finding fails
# (docs/decisions/0074-redocly-lint.md).
REDOCLY_DIR   := .ci/redocly
REDOCLY_STAMP := $(REDOCLY_DIR)/node_modules/.installed
$(REDOCLY_STAMP): $(REDOCLY_DIR)/package.json $(REDOCLY_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "lint-openapi: npm is needed to install Redocly CLI (Node.js 20.19+)" >&2; exit 1; }
	cd $(REDOCLY_DIR) && npm ci --no-audit --no-fund
	@touch $@

lint-openapi: $(REDOCLY_STAMP)
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY_DIR)/node_modules/.bin/redocly lint \
		--config $(REDOCLY_DIR)/redocly.yaml docs/openapi.yaml

lint: $(TOOLS)/staticcheck-$(STATICCHECK_VERSION) $(TOOLS)/govulncheck-$(GOVULNCHECK_VERSION) lint-openapi
	$(TOOLS)/staticcheck ./...
	@echo "staticcheck $(STATICCHECK_VERSION): clean"
	@out=$$(mktemp); status=0; $(TOOLS)/govulncheck -db '$(VULNDB)' ./... >"$$out" 2>&1 || status=$$?; \
	cat "$$out"; \
	if [ $$status -eq 0 ]; then echo "govulncheck $(GOVULNCHECK_VERSION): no known vulnerability reached"; \
	elif [ $$status -ne 3 ] && grep -q 'fetching vulnerabilities' "$$out"; then \
		echo "govulncheck $(GOVULNCHECK_VERSION): SKIPPED: the vulnerability database $(VULNDB) cannot be reached from here;"; \
		echo "  nothing was checked. Run make lint where it can be reached, or VULNDB=file:///path/to/a/mirror."; \
	else rm -f "$$out"; exit $$status; fi; rm -f "$$out"

# fuzz: every Fuzz target of the module for FUZZTIME each (.ci/fuzz; FUZZPKG narrows it).
FUZZPKG ?= ./...
fuzz:
	FUZZTIME=$(FUZZTIME) .ci/fuzz $(FUZZPKG)

# hostile: slow and hostile clients against a real socket (slowloris, 100 MB bodies),
# then the bad-key flood measurement: p99 of good requests alone and under 10,000
# bad-key requests (about 25 s; FIELDRELAY_BADKEY_* vary it, see server/hostile_test.go),
# and the connection flood: p99 of a good client while one address opens 20,000
# connections (about 30 s; FIELDRELAY_CONNFLOOD_*, see server/conns_flood_test.go).
hostile:
	FIELDRELAY_HOSTILE=1 go test -count=1 -v -run '^(TestSlowloris|TestHugeBody|TestBadKeyFlood|TestConnFlood)$$' ./server

bench:
	go test -run '^$$' -bench . -benchmem ./...

# sse-bench: GET /v1/stream fan-out, SSE_CLIENTS stream clients while SSE_RATE events/s are
# posted for SSE_SECONDS; prints p50/p90/p99/max event-to-client latency (docs/bench.md).
SSE_CLIENTS ?= 200
SSE_RATE    ?= 1000
SSE_SECONDS ?= 10
sse-bench:
	FIELDRELAY_SSE_BENCH=1 FIELDRELAY_SSE_CLIENTS=$(SSE_CLIENTS) FIELDRELAY_SSE_RATE=$(SSE_RATE) \
	FIELDRELAY_SSE_SECONDS=$(SSE_SECONDS) go test -count=1 -run '^TestStreamFanout$$' -v ./server

# crash: the crash loop (e2e/crash_test.go): CRASH_CLIENTS clients post events, sync batches
# and device syncs while the node is killed with SIGKILL CRASH_ROUNDS times and restarted; then
# every acknowledged write must be there once and `fieldrelay check` clean. Prints lost=0/N,
# duplicates, restart time p50/p99 and the run time.
CRASH_ROUNDS  ?= 20
CRASH_CLIENTS ?= 8
crash:
	FIELDRELAY_CRASH=1 FIELDRELAY_CRASH_ROUNDS=$(CRASH_ROUNDS) FIELDRELAY_CRASH_CLIENTS=$(CRASH_CLIENTS) \
	go test -count=1 -timeout 10m -run '^TestCrashLoop$$' -v ./e2e
# soak: the node under a steady mixed load for SOAK_DURATION (e2e/soak_test.go): events, sync
# batches, device syncs, the dispatch lifecycle, webhooks to a flaky receiver, 50 stream clients,
# the retention sweep and a backup every 10 minutes; samples anonymous RSS, heap, goroutines, open files,
# bbolt bytes per event, outbox depth and p99 every SOAK_SAMPLE and fails on an upward trend, a
# missing acknowledged event or an unclean check. Never part of make test.
SOAK_DURATION ?= 1h
SOAK_SAMPLE   ?= 1m
soak:
	FIELDRELAY_SOAK=1 FIELDRELAY_SOAK_DURATION=$(SOAK_DURATION) FIELDRELAY_SOAK_SAMPLE=$(SOAK_SAMPLE) \
	go test -count=1 -timeout 0 -run '^TestSoak$$' -v ./e2e

# footprint: FOOTPRINT_EVENTS events (default 1,000,000) of about 300 bytes of payload, 10 tenants,
# through POST /v1/sync/batch into the real binary on a fresh data directory (fsync on; under
# $$TMPDIR, which must be a disk, not tmpfs), then the file's bytes per event, `check --stats`,
# the time from a restart to /readyz 200 and the private memory once ready (e2e/footprint_test.go).
# FOOTPRINT_REPORT names a file the report is also written to. Never part of make test.
FOOTPRINT_EVENTS ?= 1000000
FOOTPRINT_REPORT ?=
footprint:
	FIELDRELAY_FOOTPRINT=1 FIELDRELAY_FOOTPRINT_EVENTS=$(FOOTPRINT_EVENTS) FIELDRELAY_FOOTPRINT_REPORT=$(FOOTPRINT_REPORT) \
	go test -count=1 -timeout 0 -run '^TestFootprint$$' -v ./e2e

# delivery-rate: 10,000 events posted from 64 connections to a node of DELIVERY_TENANTS
# tenants, each with DELIVERY_SUBS HTTPS subscriptions (0: the bare node), and an SMS
# gateway when DELIVERY_SMS=1 (e2e/delivery_rate_test.go); prints the ingest rate, when the
# last message arrived and the outbox depth was back to its start, and the node's CPU per
# event and per message; fails on a message lost or delivered twice (docs/bench.md). The
# realistic node of the side-by-side: DELIVERY_TENANTS=10 DELIVERY_SUBS=1 DELIVERY_SMS=1.
# Never part of make test.
DELIVERY_SUBS    ?= 1
DELIVERY_TENANTS ?= 1
DELIVERY_SMS     ?= 0
delivery-rate:
	FIELDRELAY_DELIVERY_RATE=1 FIELDRELAY_DELIVERY_SUBS=$(DELIVERY_SUBS) FIELDRELAY_DELIVERY_TENANTS=$(DELIVERY_TENANTS) FIELDRELAY_DELIVERY_SMS=$(DELIVERY_SMS) \
	go test -count=1 -run '^TestDeliveryRate$$' -v ./e2e

# upstream-bench: an edge records 50,000 changes with its link paused, then drains them into a
# central node over HTTP on 127.0.0.1 (real stores, fsync on): drain time and changes/s, 3 runs.
upstream-bench:
	go test ./server -run '^$$' -bench 'UpstreamDrain$$' -benchtime 1x -count 3 -timeout 15m

# bench-event-lists: first-page latency (p50, p99 over 100 reads) of GET /v1/events?open=true
# and ?q= on 1,000,000 bbolt events of which 2,000 open (docs/bench.md). BENCH_EVENTS_DIR
# keeps the built store between runs. Never part of make test.
bench-event-lists:
	go test ./store -run '^$$' -bench 'EventLists1M' -benchtime 1x -timeout 60m -v

# bench-node: build, start a node on a fresh data directory, load it with `fieldrelay bench`
# (which also reports the node's CPU and disk writes per event), then stop the node and remove
# the directory, whatever bench did. BENCH_DATA names the directory (it must not exist: put it
# on the disk to measure, /tmp may be tmpfs); by default it is a new one under $TMPDIR or /tmp.
#   make bench-node TENANTS=100 CONNS=128 DURATION=60s BENCH_DATA=/var/tmp/frbench
TENANTS    ?= 10
CONNS      ?= 64
DURATION   ?= 20s
BENCH_ADDR ?= 127.0.0.1:18443
BENCH_DATA ?=

bench-node: build
	@data='$(BENCH_DATA)'; \
	if [ -z "$$data" ]; then data=$$(mktemp -d "$${TMPDIR:-/tmp}/fieldrelay-bench.XXXXXX") || exit 1; \
	else mkdir "$$data" || { echo "bench-node: BENCH_DATA=$$data must be a directory that does not exist yet" >&2; exit 1; }; fi; \
	log=$$(mktemp "$${TMPDIR:-/tmp}/fieldrelay-bench-serve.XXXXXX") || { rm -rf "$$data"; exit 1; }; \
	pid=; \
	cleanup() { \
		if [ -n "$$pid" ] && kill -TERM "$$pid" 2>/dev/null; then \
			i=0; while kill -0 "$$pid" 2>/dev/null && [ $$i -lt 100 ]; do sleep 0.1; i=$$((i+1)); done; \
			kill -KILL "$$pid" 2>/dev/null; wait "$$pid" 2>/dev/null; \
		fi; \
		rm -rf "$$data" "$$log"; \
	}; \
	trap cleanup EXIT; trap 'exit 130' INT TERM; \
	if curl -fsS -o /dev/null --max-time 1 "http://$(BENCH_ADDR)/healthz" 2>/dev/null; then \
		echo "bench-node: something already answers on $(BENCH_ADDR): stop it or set BENCH_ADDR" >&2; exit 1; fi; \
	echo "bench-node: serve --plain-http --addr $(BENCH_ADDR) --data $$data (log: $$log)"; \
	$(BINARY) serve --plain-http --addr $(BENCH_ADDR) --data "$$data" >"$$log" 2>&1 & pid=$$!; \
	i=0; until curl -fsS -o /dev/null --max-time 1 "http://$(BENCH_ADDR)/healthz" 2>/dev/null; do \
		if ! kill -0 "$$pid" 2>/dev/null || [ $$i -ge 300 ]; then \
			echo "bench-node: the node did not answer /healthz within 30s:" >&2; cat "$$log" >&2; exit 1; fi; \
		sleep 0.1; i=$$((i+1)); done; \
	status=0; \
	$(BINARY) bench --url "http://$(BENCH_ADDR)" --data "$$data" --tenants $(TENANTS) --conns $(CONNS) --duration $(DURATION) || status=$$?; \
	exit $$status

clean:
	rm -rf bin $(REDOCLY_DIR)/node_modules
