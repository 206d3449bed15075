# hookjet — see README.md (reference in docs/). `make run` serves the example, `make test` tests.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/hookjet/hookjet/server.Version=$(VERSION)
TOOLS    := $(CURDIR)/bin/tools
GOLANGCI := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
PROMETHEUS := github.com/prometheus/prometheus@v0.310.0
NATSCLI  := github.com/nats-io/natscli/nats@v0.5.0

.PHONY: build install run listen test check fmt-check vet lint fuzz promtool walkthrough bench bench-ordered tools clean soak

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/hookjet ./cmd/hookjet

## install: install hookjet into $(go env GOBIN) or $(go env GOPATH)/bin, the
## `hookjet` that README.md and docs/ call
install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/hookjet

## run: serve examples/hookjet.yaml with the embedded NATS server
run: build
	./bin/hookjet serve --config examples/hookjet.yaml

## listen: a local receiver for the example endpoint
listen: build
	./bin/hookjet listen --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw --addr 127.0.0.1:9000

## test: every test, race detector on; then the allocation tests, which skip
## under -race (it makes sync.Pool drop items), without it
test:
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -run 'Alloc' ./signature ./deliver ./webhook ./dedupe ./breaker ./config ./tracing ./inbound

## check: formatting, vet, lint, short fuzzing, alert rules, the walkthrough of README.md and docs/, tests
check: fmt-check vet lint fuzz promtool walkthrough test

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

$(TOOLS)/golangci-lint:
	GOBIN=$(TOOLS) $(GO) install $(GOLANGCI)

# promtool cannot be `go install`ed (prometheus' go.mod has replace
# directives): build it inside its module in the module cache. Slow once.
$(TOOLS)/promtool:
	@mkdir -p $(TOOLS)
	dir=$$(cd / && GOFLAGS= $(GO) mod download -json $(PROMETHEUS) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	cd "$$dir" && GOWORK=off GOFLAGS=-mod=mod $(GO) build -o $(TOOLS)/promtool ./cmd/promtool

# The nats CLI the walkthrough uses, pinned.
$(TOOLS)/nats:
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install $(NATSCLI)

tools: $(TOOLS)/golangci-lint $(TOOLS)/promtool $(TOOLS)/nats

lint: $(TOOLS)/golangci-lint
	$(TOOLS)/golangci-lint run ./...

## fuzz: a short run of each fuzz target (seeds are in testdata/)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 10s ./config
	$(GO) test -run '^$$' -fuzz '^FuzzParseRetryAfter$$' -fuzztime 10s ./deliver
	$(GO) test -run '^$$' -fuzz '^FuzzSign$$' -fuzztime 10s ./signature
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime 10s ./webhook
	$(GO) test -run '^$$' -fuzz '^FuzzParseStripeSignature$$' -fuzztime 10s ./inbound
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeMAC$$' -fuzztime 10s ./inbound

## walkthrough: run the commands of README.md's walkthrough, then the checked
## commands of docs/*.md, against a started server (the built binary, a
## temporary data_dir, embedded NATS, the admin API and the inbound gateway on
## free ports) and fail when one of them no longer works or prints something
## else than the page shows (test/walkthrough)
walkthrough: build $(TOOLS)/nats
	$(GO) run ./test/walkthrough -readme README.md -readme 'docs/*.md' -makefile Makefile

promtool: $(TOOLS)/promtool
	$(TOOLS)/promtool check rules deploy/prometheus/alerts.yml
	$(TOOLS)/promtool test rules deploy/prometheus/alerts_test.yml

## bench: micro benchmarks (delivery with tracing off and on, hookjettest.Start), then the end-to-end harness against the raw HTTP ceiling and the JetStream-only floor (about 7 minutes)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./signature ./deliver ./backoff ./breaker ./dedupe ./webhook ./tracing ./hookjettest
	$(GO) run ./test/bench -out bench-results.json

## bench-ordered: the per-key ordering scenarios (test/bench/ordered.go), left out of `make bench` for its time budget
bench-ordered:
	$(GO) run ./test/bench -scenarios ordered -out bench-ordered.json

## bin/nats-server: the nats-server of go.mod's module, for the soak and the cluster3 benchmark
bin/nats-server: go.mod
	$(GO) build -o bin/nats-server github.com/nats-io/nats-server/v2

## soak: the fault campaign (docs/operations.md, "Fault campaign"): a 3-node cluster, 3 hookjet
## processes, steady load and SOAK_FAULTS seeded faults over SOAK_DURATION;
## SOAK_FLAGS adds flags (e.g. -seed N to reproduce a run)
SOAK_DURATION ?= 10m
SOAK_FAULTS   ?= 30
SOAK_FLAGS    ?=
soak: build bin/nats-server
	$(GO) run ./test/soak -duration $(SOAK_DURATION) -faults $(SOAK_FAULTS) $(SOAK_FLAGS)

clean:
	rm -rf bin data bench-results.json bench-ordered.json
