# stormdrill — `make` lists the targets.
GO       ?= go
BIN      ?= bin/stormdrill
# Packages that run goroutines get -race; the rest run plain (faster).
RACE_PKGS = ./fakepartner/... ./reports/ ./reports/render/ ./model/runtime/... ./cmd/... ./experiments/... ./drills/live/... ./drills/external/...

.PHONY: help build test check cross-build vet fmt demo bench pgo fuzz clean

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/stormdrill
	$(GO) build -o $(BIN) ./cmd/stormdrill

vet: ## go vet and gofmt check (cmd/river-sender and deploy are modules of their own)
	$(GO) vet ./...
	$(GO) -C cmd/river-sender vet ./...
	$(GO) -C deploy vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# Tests build without the profile (cmd/stormdrill/default.pgo): it changes
# what the compiler inlines, not what the code does, and it would compile
# every package once more.
# Each tier prints one line at the end naming the tests that could not run
# for want of PostgreSQL or Chromium (in CI those fail instead).
NOT_RUN_SUMMARY = if [ -s "$$STORMDRILL_TEST_NOT_RUN" ]; then \
	sort -u "$$STORMDRILL_TEST_NOT_RUN" | awk -F'\t' '{n[$$1]++} END {s=""; for (k in n) s=s (s?"; ":"") "for want of " k ": " n[k] (n[k]==1?" test":" tests"); print "NOT RUN " s " (see docs/testing.md)"}'; fi

test: export GOFLAGS += -pgo=off
test: vet ## the quick tier: every package once, -race where there are goroutines
	@set -e; export STORMDRILL_TEST_NOT_RUN=$$(mktemp); trap 'rm -f "$$STORMDRILL_TEST_NOT_RUN"' EXIT; \
	plain=$$($(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS))"); status=0; \
	echo "$(GO) test -count=1 -p 2 (packages without goroutines)"; \
	$(GO) test -count=1 -p 2 -timeout 10m $$plain || status=1; \
	echo "$(GO) test -count=1 -p 2 -race $(RACE_PKGS)"; \
	$(GO) test -count=1 -p 2 -timeout 15m -race $(RACE_PKGS) || status=1; \
	echo "$(GO) -C cmd/river-sender test -count=1 -race ./..."; \
	$(GO) -C cmd/river-sender test -count=1 -timeout 10m -race ./... || status=1; \
	echo "$(GO) -C deploy test -count=1 ./... (the deployment files, by compose-spec's and Kubernetes' parsers)"; \
	$(GO) -C deploy test -count=1 -timeout 10m ./... || status=1; \
	$(NOT_RUN_SUMMARY); exit $$status

# The full tier: a plain pass of every package with STORMDRILL_TEST_FULL=1
# (long simulations, timed live drills, PostgreSQL, the browser), one
# package at a time since the timed live drills measure the wall clock;
# the quick race pass; then the release cross-build.
check: export GOFLAGS += -pgo=off
check: vet ## the full tier (CI): every test, long and timed ones included, then the release cross-build
	@set -e; export STORMDRILL_TEST_NOT_RUN=$$(mktemp); trap 'rm -f "$$STORMDRILL_TEST_NOT_RUN"' EXIT; status=0; \
	echo "STORMDRILL_TEST_FULL=1 $(GO) test -count=1 -p 1 ./..."; \
	STORMDRILL_TEST_FULL=1 $(GO) test -count=1 -p 1 -timeout 30m ./... || status=1; \
	echo "$(GO) test -count=1 -p 2 -race $(RACE_PKGS)"; \
	$(GO) test -count=1 -p 2 -timeout 15m -race $(RACE_PKGS) || status=1; \
	echo "$(GO) -C cmd/river-sender test -count=1 -race ./..."; \
	$(GO) -C cmd/river-sender test -count=1 -timeout 10m -race ./... || status=1; \
	echo "$(GO) -C deploy test -count=1 ./... (the deployment files, by compose-spec's and Kubernetes' parsers)"; \
	$(GO) -C deploy test -count=1 -timeout 10m ./... || status=1; \
	$(NOT_RUN_SUMMARY); [ $$status = 0 ] || exit $$status; \
	$(MAKE) --no-print-directory cross-build

cross-build: ## release check: build the binary for every release target (CGO off)
	STORMDRILL_CROSS_BUILD=1 $(GO) test -count=1 -timeout 30m -run '^TestCrossBuildReleaseTargets$$' ./cmd/stormdrill/

demo: build ## run the flagship drill (simulated, the copy bundled in the binary) and write out/fanout-outage/
	./$(BIN) run fanout-outage

# The benchmarks run test binaries built with the profile the stormdrill
# binary is built with (go build picks cmd/stormdrill/default.pgo itself),
# so they measure the code that ships.
PGO_FLAG = -pgo=$(CURDIR)/cmd/stormdrill/default.pgo

bench: build ## benchmarks: policy core, dispatcher, simulator, stores, live end to end
	$(GO) test $(PGO_FLAG) -run '^$$' -bench . -benchmem ./model/ ./model/dispatchcore/ ./fakepartner/
	$(GO) test $(PGO_FLAG) -run '^$$' -bench 'SQLite|Postgres' -benchmem ./model/runtime/queue/  # Postgres needs STORMDRILL_TEST_POSTGRES
	$(GO) test $(PGO_FLAG) -run '^$$' -bench 'Live' -benchtime 1x ./drills/live/  # prints the live ceiling table; its PostgreSQL row needs STORMDRILL_TEST_POSTGRES
	./$(BIN) bench

pgo: ## rewrite cmd/stormdrill/default.pgo: CPU profiles of stormdrill bench and of a live drill, built without a profile
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	$(GO) build -pgo=off -o $$d/stormdrill ./cmd/stormdrill; \
	$$d/stormdrill bench --scale 1,10 --cpuprofile $$d/bench.pprof; \
	STORMDRILL_DISPATCH_CPUPROFILE=$$d/live-dispatch $(GO) test -pgo=off -run '^$$' -bench '^BenchmarkLive$$' -benchtime 1x \
		-cpuprofile $$d/live-run.pprof -o $$d/live.test ./drills/live/; \
	$(GO) tool pprof -proto $$d/bench.pprof $$d/live-run.pprof $$d/live-dispatch-* > cmd/stormdrill/default.pgo; \
	ls -l cmd/stormdrill/default.pgo

FUZZTIME ?= 30s

fuzz: ## run every fuzz target of every package for FUZZTIME (30s) each
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$(dirname $$f) $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f)/; \
		done; \
	done

clean: ## remove build and run outputs
	rm -rf bin out
