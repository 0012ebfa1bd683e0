# coordhost — see README.md. Every target works on a fresh clone.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PLUGIN_DIR  ?= build/plugins
CLANG       ?= clang
# Main packages that build to .wasm plugins: plugins/<name>/wasm.
WASM_MAINS  := $(patsubst %/,%,$(dir $(wildcard plugins/*/wasm/main.go)))
# The sticky and HA algorithm packages are compiled without bounds checks
# in their wasm builds only (docs/BENCHMARKS.md, "Plugins" and "HA
# assignor"): up to 25 % of the call. Keep in step with
# host/plugin/plugintest.WasmGCFlags.
WASM_GCFLAGS := -gcflags=github.com/coordhost/coordhost/plugins/assignor-sticky=-B -gcflags=github.com/coordhost/coordhost/plugins/assignor-ha=-B

.PHONY: all build plugins plugin-check run test verify bench fuzz-ci clean

all: build

build:
	$(GO) build ./...

## plugins: build every plugins/<name>/wasm main package to $(PLUGIN_DIR)/<name>.wasm
plugins:
	@mkdir -p $(PLUGIN_DIR)
	@for pkg in $(WASM_MAINS); do \
		name=$$(basename $$(dirname $$pkg)); \
		echo "wasm  $$pkg -> $(PLUGIN_DIR)/$$name.wasm"; \
		GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath $(WASM_GCFLAGS) -o $(PLUGIN_DIR)/$$name.wasm ./$$pkg || exit 1; \
	done
	@if command -v $(CLANG) >/dev/null 2>&1; then \
		echo "wasm  testdata/plugins/c/assignor.c -> $(PLUGIN_DIR)/c-assignor.wasm"; \
		$(CLANG) --target=wasm32-wasi -O2 -mexec-model=reactor -o $(PLUGIN_DIR)/c-assignor.wasm testdata/plugins/c/assignor.c || exit 1; \
		echo "wasm  plugins/assignor-sticky/c/sticky.c -> $(PLUGIN_DIR)/assignor-sticky-c.wasm"; \
		$(CLANG) --target=wasm32-wasi -O2 -mexec-model=reactor -o $(PLUGIN_DIR)/assignor-sticky-c.wasm plugins/assignor-sticky/c/sticky.c || exit 1; \
		echo "wasm  plugins/assignor-ha/c/ha.c -> $(PLUGIN_DIR)/assignor-ha-c.wasm"; \
		$(CLANG) --target=wasm32-wasi -O2 -mexec-model=reactor -o $(PLUGIN_DIR)/assignor-ha-c.wasm plugins/assignor-ha/c/ha.c || exit 1; \
	else echo "skip  C plugins: $(CLANG) not found (needs clang lld wasi-libc libclang-rt-14-dev-wasm32)"; fi

## plugin-check: build the plugins and run the conformance kit on each
plugin-check: plugins
	@for f in $(PLUGIN_DIR)/*.wasm; do $(GO) run ./cmd/coordhost plugin check -short $$f || exit 1; done

## run: build the plugins, then run coordhost on its embedded defaults
run: plugins
	$(GO) run ./cmd/coordhost

## test: go test ./... (the README's test command); .ci/run adds verify, fuzz-ci and the serial interop and load steps
test:
	$(GO) test -count=1 ./...

verify:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '/testdata/')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff
	$(GO) test -count=1 ./internal/archtest
	GOOS=wasip1 GOARCH=wasm $(GO) build ./abi/... ./plugins/...

## fuzz-ci: every fuzz target for FUZZTIME (default 5s) each
fuzz-ci:
	bash .ci/fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf build

.PHONY: interop-compare interop-restart interop-authz-variants soak soak-embedded

## interop-compare: the fair comparison table of docs/INTEROP.md (both apps, each close mode, plain rolls on real Kafka 4.4, RUNS runs each; about 20 minutes a run) -> build/interop-compare.md
RUNS ?= 3
interop-compare:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_RUNS=$(RUNS) COORDHOST_INTEROP_COMPARE_OUT=$(CURDIR)/build/interop-compare.md \
		$(GO) test -count=1 -v -timeout 240m -run 'TestInteropCompare' ./interop

## interop-restart: coordhost SIGTERM and SIGKILL restarts under the exactly-once orders app, in each group state, on the embedded data plane and in front of real Kafka 4.4 (docs/INTEROP.md)
interop-restart:
	COORDHOST_INTEROP=1 $(GO) test -count=1 -v -timeout 40m -run 'TestInteropRestart' ./interop

## soak: KILLS kill -9s of coordhost at moments drawn from SEED during a classic -> streams -> classic roll of the exactly-once orders app, in front of real Kafka 4.4 (CI runs 5; docs/INTEROP.md)
KILLS ?= 20
SEED  ?= 1
soak:
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_SOAK_KILLS=$(KILLS) COORDHOST_INTEROP_SOAK_SEED=$(SEED) \
		$(GO) test -count=1 -v -timeout 60m -run 'TestInteropSoak$$' ./interop

## soak-embedded: the same soak on the embedded data plane: measures how many kills break exactly-once there (docs/RELIABILITY.md)
soak-embedded:
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_SOAK_KILLS=$(KILLS) COORDHOST_INTEROP_SOAK_SEED=$(SEED) \
		$(GO) test -count=1 -v -timeout 90m -run 'TestInteropSoakEmbedded$$' ./interop

## interop-authz-variants: the authorization table against a broker with allow.everyone.if.no.acl.found=true and one with a custom Authorizer class, and against the embedded data plane's users and ACLs (four broker starts; docs/SECURITY.md)
interop-authz-variants:
	COORDHOST_INTEROP=1 $(GO) test -count=1 -v -timeout 20m -run 'TestInteropAuthorizerVariants|TestInteropEmbeddedAuthorization' ./interop

.PHONY: dst
## dst: the deterministic simulation over SEEDS seeds (default 100000; about 16 minutes of CPU time, 21 minutes of wall time on a shared 2-core machine at load 4-18; CI runs 2,000 inside go test under CI=true) — docs/RELIABILITY.md
SEEDS ?= 100000
dst:
	COORDHOST_DST_SEEDS=$(SEEDS) $(GO) test -count=1 -v -timeout 5h -run 'TestDST$$' ./internal/dst

.PHONY: consumer-roll-compare
## consumer-roll-compare: TestInteropConsumerMigrationRoll's paired classic -> consumer -> classic roll of real Java 4.4 consumers, on real Kafka 4.4 and through coordhost at once, RUNS times on one broker (default 3): per run and as medians the rebalance callbacks, longest processing gap and median handover (and its parts: to the assignment, then to the first commit) of each side, where each run's longest gap was (step, partition, old and new owner, their callbacks), then each step's callbacks per consumer (docs/CONSUMER.md) -> build/consumer-roll-compare.md
consumer-roll-compare:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_ROLL_RUNS=$(RUNS) COORDHOST_INTEROP_ROLL_OUT=$(CURDIR)/build/consumer-roll-compare.md \
		$(GO) test -count=1 -v -timeout 180m -run 'TestInteropConsumerRollCompare$$' ./interop

.PHONY: bench-compare

## bench-compare: streams heartbeats over the wire, coordhost (2 and 1 runtime workers) vs a real Kafka 4.4 broker, each in its own process, loaded by interop/hbload; RUNS alternating runs (docs/BENCHMARKS.md; about 11 minutes a run) -> build/bench-compare.md
bench-compare:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_BENCH_RUNS=$(RUNS) COORDHOST_INTEROP_BENCH_OUT=$(CURDIR)/build/bench-compare.md \
		$(GO) test -count=1 -v -timeout 120m -run 'TestBenchCompare$$' ./interop

.PHONY: scaleout
## scaleout: three coordhost processes of one cluster on real Kafka 4.4, SIGKILL of the busiest partition's owner mid-rebalance, a SIGSTOP/SIGCONT zombie owner, and the interop Streams app across a SIGKILL of its group's owner (classic, streams, mid online migration) (docs/SCALE-OUT.md; three broker starts, about 10 minutes)
scaleout:
	COORDHOST_INTEROP=1 $(GO) test -count=1 -v -timeout 30m -run 'TestScaleOut' ./interop

.PHONY: sim-validate

## sim-validate: `coordhost simulate` against real runs: the online roll and a 3 -> 6 scale-out of the interop app on real Kafka 4.4, each with the sticky and the HA plugin, RUNS times (default 3), compared with the simulator's replay of each (docs/AB-TESTING.md; 14 to 21 minutes a repetition on the shared machine) -> build/sim-validate.md and its recordings in build/sim-validate
sim-validate:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_SIMVALIDATE_OUT=$(CURDIR)/build/sim-validate.md COORDHOST_INTEROP_SIMVALIDATE_RUNS=$(or $(RUNS),3) \
		$(GO) test -count=1 -v -timeout 60m -run 'TestSimValidate$$' ./interop

.PHONY: bench-gateway
## bench-gateway: the data path through coordhost's gateway vs directly to the same real Kafka 4.4 broker, with kgo and with Kafka's Java client (1 KiB incompressible records sent uncompressed, acks=all, 6 partitions): produce and fetch throughput, end-to-end p50/p99 at 2,000 records/s and the gateway's CPU per GiB and per 10,000 records of that phase; then the interop Streams app's end-to-end latency (exactly-once, streams protocol); each client a series of RUNS alternating runs per side (default 3; COORDHOST_INTEROP_BENCH_GW_CLIENTS=kgo,java,app picks them; COORDHOST_INTEROP_BENCH_PIN=1 gives the gateway half the CPUs to itself, the broker and clients the other half; docs/BENCHMARKS.md; about 20 minutes, 4 with kgo alone) -> build/bench-gateway.md
bench-gateway:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_BENCH_RUNS=$(RUNS) COORDHOST_INTEROP_BENCH_GW_OUT=$(CURDIR)/build/bench-gateway.md \
		$(GO) test -count=1 -v -timeout 90m -run 'TestBenchGateway$$' ./interop

.PHONY: bench-replay
## bench-replay: Replay of one partition of RECORDS records (default 1000000) from the state topic on a real Kafka 4.4 broker and from the bbolt store, RUNS alternating replays each; then STATE group-state records (default 1000000: streams, consumer and classic groups) loaded by a restarted Kafka 4.4 broker and by a starting coordhost, RUNS runs (docs/BENCHMARKS.md; WHICH=state or WHICH=topic runs one; SIDE=kafka or SIDE=coordhost one side of the group-state run) -> build/bench-replay.md, build/bench-replay-state.md
bench-replay:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_BENCH=1 COORDHOST_INTEROP_BENCH_RUNS=$(RUNS) COORDHOST_INTEROP_BENCH_RECORDS=$(or $(RECORDS),1000000) COORDHOST_INTEROP_BENCH_STATE_RECORDS=$(or $(STATE),1000000) COORDHOST_INTEROP_BENCH_STATE_SIDE=$(SIDE) COORDHOST_INTEROP_BENCH_REPLAY_OUT=$(CURDIR)/build/bench-replay.md \
		$(GO) test -count=1 -v -timeout 60m -run '$(if $(filter state,$(WHICH)),,TestStateTopicReplayRealKafka$$)$(if $(WHICH),,|)$(if $(filter topic,$(WHICH)),,TestGroupStateReplayRealKafka$$)' ./interop

.PHONY: bench-jmh
## bench-jmh: Kafka 4.4's StickyTaskAssignor and HighAvailabilityTaskAssignor under JMH (-f 1 -wi 3 -i 5) beside the Go ports on the same inputs, each checked to give the same assignment first: sticky on eight inputs (100/1000 members x 1k/10k tasks x 0/1 standby; about 12 minutes), HA on BenchmarkRatios' three (up to 1,000 members x 10,004 tasks x 2 standbys; Kafka's assignor takes 0.2 s per run on 100 members, 4 s on 1,000 members x 1k tasks, far longer on the largest) (docs/BENCHMARKS.md) -> build/bench-jmh.txt
bench-jmh:
	@mkdir -p build
	COORDHOST_JMH=1 $(GO) test -count=1 -v -timeout 40m -run 'TestJMH$$' ./plugins/assignor-sticky | tee build/bench-jmh.txt
	COORDHOST_JMH=1 $(GO) test -count=1 -v -timeout 240m -run 'TestJMH$$' ./plugins/assignor-ha | tee -a build/bench-jmh.txt

.PHONY: bench-memory
## bench-memory: live heap growth with 1,000 streams groups × 10 members and replay of KEYS committed offsets (default 100000; 1000000 is the full size, whose writing on coordhost takes far longer), coordhost vs a real Kafka 4.4 broker, RUNS runs (docs/BENCHMARKS.md, about 5 minutes a run) -> build/bench-memory.md
bench-memory:
	@mkdir -p build
	COORDHOST_INTEROP=1 COORDHOST_INTEROP_BENCH=1 COORDHOST_INTEROP_BENCH_RUNS=$(RUNS) COORDHOST_INTEROP_BENCH_KEYS=$(or $(KEYS),100000) COORDHOST_INTEROP_BENCH_MEM_OUT=$(CURDIR)/build/bench-memory.md \
		$(GO) test -count=1 -v -timeout 90m -run 'TestBenchMemoryReplay$$' ./interop
