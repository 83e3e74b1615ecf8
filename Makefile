# stormdrill — `make` lists the targets.
GO       ?= go
BIN      ?= bin/stormdrill
# Packages that run goroutines get -race; the rest run plain (faster).
RACE_PKGS = ./fakepartner/... ./reports/ ./model/runtime/... ./cmd/... ./experiments/... ./drills/live/... ./drills/external/...

.PHONY: help build test test-race vet fmt demo bench pgo fuzz clean

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/stormdrill
	$(GO) build -o $(BIN) ./cmd/stormdrill

vet: ## go vet and gofmt check
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# Both passes run one package at a time (-p 1): the live tests measure
# latency and lease timing, and another package's simulations on the same two
# cores (the race detector's above all) would skew them. The cross-build of
# the release targets (minutes of CPU, cold) runs beside them at the lowest
# CPU priority (nice 19): it takes the CPU the live tests leave idle while
# they wait on the wall clock, and yields it whenever they need it. Its
# output comes at the end; a failed pass stops it. setsid gives it a process
# group to stop, and a session of its own, which Linux schedules as a group
# (autogroup) at the group's weight, whatever the nice of its processes:
# the group's own nice is set to 19 too (where /proc has it).
# Tests build without the profile (cmd/stormdrill/default.pgo): it changes
# what the compiler inlines, not what the code does, and building every
# package again with it, for each release target, took the cross-build
# from minutes to a quarter of an hour on 2 cores.
test: export GOFLAGS += -pgo=off
test: vet ## vet, then every test (-race where there are goroutines), with a cross-build of the release targets beside them
	@set -e; log=$$(mktemp); \
	STORMDRILL_CROSS_BUILD=1 setsid -w sh -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null; exec nice -n 19 "$$@"' sh \
		$(GO) test -count=1 -timeout 30m -run '^TestCrossBuildReleaseTargets$$' ./cmd/stormdrill/ >"$$log" 2>&1 & cross=$$!; \
	trap 'kill -- -$$cross 2>/dev/null || true; rm -f "$$log"' EXIT; \
	echo "$(GO) test -count=1 -timeout 20m -p 1 ./..."; \
	$(GO) test -count=1 -timeout 20m -p 1 ./...; \
	echo "$(GO) test -count=1 -timeout 30m -race -p 1 $(RACE_PKGS)"; \
	$(GO) test -count=1 -timeout 30m -race -p 1 $(RACE_PKGS); \
	echo "STORMDRILL_CROSS_BUILD=1 $(GO) test -run '^TestCrossBuildReleaseTargets$$' ./cmd/stormdrill/ (beside the passes)"; \
	status=0; wait $$cross || status=$$?; trap - EXIT; cat "$$log"; rm -f "$$log"; exit $$status

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
