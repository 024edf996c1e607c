# ringfire: make demo | make test | make bench
GO       ?= go
export PATH := $(PATH):/usr/local/go/bin
BIN      := bin
FUZZTIME ?= 10s
DEMO_RING ?= /dev/shm/ringfire-demo
DEMO_SECONDS ?= 10

.PHONY: all build demo test check unit fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN)/ringfire ./cmd/ringfire

# A synthetic producer writes a ring in /dev/shm at 1 M records/s while a
# validating reader (tail) and a rate monitor (top) read it.
demo: build
	@echo "== gen -> $(DEMO_RING) at 1,000,000 records/s for $(DEMO_SECONDS) s; tail validates, top reports"
	$(BIN)/ringfire gen $(DEMO_RING) --capacity 65536 --size 64 --rate 1000000 --count $$(( $(DEMO_SECONDS) * 1000000 )) --replace & gen=$$!; \
	sleep 0.3; \
	$(BIN)/ringfire top $(DEMO_RING) --interval-ms 1000 --iterations $(DEMO_SECONDS) & top=$$!; \
	$(BIN)/ringfire tail $(DEMO_RING) --from oldest --timeout 2s --quiet; rc=$$?; \
	wait $$gen $$top; \
	$(BIN)/ringfire stat $(DEMO_RING); rm -f $(DEMO_RING); exit $$rc

# The whole test suite: formatting, vet, race-enabled tests, short fuzz runs.
test: check unit fuzz

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 -timeout 15m ./...

fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./shm

clean:
	rm -rf $(BIN)
