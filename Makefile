# ringfire: make demo | make test | make bench
GO       ?= go
export PATH := $(PATH):/usr/local/go/bin
BIN      := bin
FUZZTIME ?= 10s
DEMO_SECONDS ?= 10

.PHONY: all build demo test check unit fuzz bench clean deps-demo deps-test deps-vmtest

all: build

build:
	$(GO) build -o $(BIN)/ringfire ./cmd/ringfire
	$(GO) build -o $(BIN)/xdpctl ./cmd/xdpctl
	$(GO) build -o $(BIN)/ringfire-bench ./cmd/ringfire-bench

# A synthetic producer writes a ring; serve multicasts it over AF_XDP from
# one network namespace to a mirror in another (falling back to kernel UDP
# with the reason logged), where tail validates every record and top prints
# the rates (about ten seconds; needs root). DEMO_XDP= uses kernel UDP.
demo: deps-demo build
	BIN=$(BIN)/ringfire DEMO_SECONDS=$(DEMO_SECONDS) scripts/demo.sh

# The whole test suite: formatting, vet, race-enabled tests, short fuzz runs.
test: check unit fuzz

# The Debian packages each target needs, installed when missing (as root;
# otherwise one line names them). scripts/deps.sh holds the only list.
deps-demo deps-test deps-vmtest:
	@scripts/deps.sh $(@:deps-%=%)

check: deps-test check-generate
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Regenerate the XDP program's bpf2go output (bpf/steer_bpfel.{go,o}) from
# bpf/steer.c; check-generate fails if the committed output is stale.
.PHONY: generate check-generate
generate: deps-test
	$(GO) generate ./bpf

check-generate: generate
	git diff --exit-code -- 'bpf/*_bpfel.go' 'bpf/*_bpfel.o'

unit: deps-test
	$(GO) test -race -count=1 -timeout 15m ./...

fuzz: deps-test
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# Every transport side by side in two namespaces (root): tables on the
# terminal; the JSON report and SVG charts in docs/bench, and the page
# docs/benchmarks.md rendered from them (ringfire-bench --render
# docs/bench/bench.json --out docs/bench --markdown docs/benchmarks.md
# renders it again without measuring). Then the ring's own
# microbenchmarks. --trace adds where the slowest round trips went (the
# processes' stamps and the kernel's scheduler trace) to the deployed
# section; the rings section measures a thread per unit and a loop.
BENCH_FLAGS ?= --waits adaptive,yield,loop-yield --stage-rates 20000,200000 --deployed-for 30s --trace --rings-waits yield,loop-yield
bench: build
	$(BIN)/ringfire-bench --out docs/bench --markdown docs/benchmarks.md $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./shm

clean:
	rm -rf $(BIN)

# The kernel-facing tests again inside a QEMU guest (TCG): Debian 12's 6.1
# kernel, two virtio-net NICs in two namespaces, netem. Needs qemu-system-x86
# and busybox-static; fetches the kernel .deb with apt-get download into
# /var/cache/ringfire-vmtest. See test/vmtest/README.md.
VMTEST_PKGS  ?= ./shm ./replica ./xdp ./bpf ./transport ./afpacket ./test/vmtest
VMTEST_FLAGS ?=
.PHONY: vmtest
vmtest: deps-vmtest
	$(GO) run ./test/vmtest/cmd/vmtest -pkgs "$(VMTEST_PKGS)" $(VMTEST_FLAGS)
