# hookjet — see README.md (reference in docs/). `make run` serves the example, `make test` tests.
GO       ?= go
# The version is the semantic version tag (vX.Y.Z; docs/deploy.md, "Releases"),
# or git describe past it; a tree without a tag says v0.0.0-g<commit>.
VERSION  ?= $(or $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null | sed '/^v[0-9]/!s/^/v0.0.0-g/'),v0.0.0-dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# Evaluated once, so that every binary of one make says the same.
VERSION  := $(VERSION)
COMMIT   := $(COMMIT)
BUILD_DATE := $(BUILD_DATE)
LDFLAGS  := -X github.com/hookjet/hookjet/server.Version=$(VERSION) -X github.com/hookjet/hookjet/server.Commit=$(COMMIT) -X github.com/hookjet/hookjet/server.BuildDate=$(BUILD_DATE)
TOOLS    := $(CURDIR)/bin/tools
GOLANGCI := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
PROMETHEUS := github.com/prometheus/prometheus@v0.310.0
NATSCLI  := github.com/nats-io/natscli/nats@v0.5.0

.PHONY: build install run listen test check fmt-check vet lint fuzz promtool walkthrough bench bench-ordered tools clean soak image image-offline image-test helm-test helm-lint release

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

## bench: micro benchmarks (delivery with tracing off and on, OAuth2 and proxied deliveries, filters per evaluation and per event of 10,000 endpoints, a transform run, a 1 KB payload validated against its event type's schema, hookjettest.Start), then the end-to-end harness against the raw HTTP ceiling and the JetStream-only floor, filters, transform, destinations and validation included, and the event list at a million stored events (events1m; about 15 minutes)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./signature ./deliver ./backoff ./breaker ./dedupe ./webhook ./tracing ./filter ./transform ./catalog ./hookjettest
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

## image: the container image (Dockerfile) as $(IMAGE), built with podman or
## docker, whichever is present (podman first); IMAGE_FLAGS adds build flags
GO_VERSION := $(shell sed -n 's/^go //p' go.mod)
IMAGE_TOOL ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE      ?= localhost/hookjet:$(VERSION)
GO_IMAGE   ?= docker.io/library/golang:$(GO_VERSION)-bookworm
IMAGE_FLAGS ?=
image:
	@test -n "$(IMAGE_TOOL)" || { echo "make image: neither podman nor docker is installed"; exit 1; }
	$(IMAGE_TOOL) build $(IMAGE_FLAGS) --build-arg GO_IMAGE=$(GO_IMAGE) \
	  --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) \
	  -t $(IMAGE) .

## image-offline: `make image` on a machine that reaches no image registry
## (CI): the build stage runs on a stand-in for the golang image made from
## this machine's Go (deploy/image/offline-builder.sh), with podman's chroot
## isolation (no container runtime needed) and the host's module and build
## caches mounted
OFFLINE_GO_IMAGE := localhost/hookjet-go:$(GO_VERSION)
image-offline:
	@test -n "$(IMAGE_TOOL)" || { echo "make image-offline: podman is not installed"; exit 1; }
	deploy/image/offline-builder.sh $(OFFLINE_GO_IMAGE) $(IMAGE_TOOL)
	$(MAKE) image GO_IMAGE=$(OFFLINE_GO_IMAGE) VERSION=$(VERSION) COMMIT=$(COMMIT) BUILD_DATE=$(BUILD_DATE) IMAGE=$(IMAGE) \
	  IMAGE_FLAGS="--pull=never --isolation=chroot -v $$(go env GOMODCACHE):/go/pkg/mod -v $$(go env GOCACHE):/root/.cache/go-build $(IMAGE_FLAGS)"

## image-test: inspect $(IMAGE) (build it first): its user, entrypoint,
## files, labels, and that its binary is static and of this commit
image-test:
	TEST_IMAGE=$(IMAGE) TEST_IMAGE_TOOL=$(IMAGE_TOOL) $(GO) test -count=1 -run '^TestImage' -v ./deploy

## helm-lint, helm-test: the chart (deploy/helm/hookjet): helm lint with each
## values example, then every manifest rendered from each decodes strictly
## into the Kubernetes API types (deploy/helmtest, a module of its own so the
## main module gains no Kubernetes dependency)
$(TOOLS)/helm: deploy/helmtest/go.mod
	cd deploy/helmtest && GOFLAGS=-mod=mod $(GO) build -o $(TOOLS)/helm helm.sh/helm/v4/cmd/helm

helm-lint: $(TOOLS)/helm
	$(TOOLS)/helm lint --strict deploy/helm/hookjet
	for f in deploy/helm/hookjet/examples/*.yaml; do $(TOOLS)/helm lint --strict deploy/helm/hookjet -f $$f || exit 1; done

# -mod=mod: the module follows hookjet's go.mod (replace ../..), so that a
# requirement hookjet gains needs no edit here first (go mod tidy in
# deploy/helmtest records it).
helm-test: helm-lint
	cd deploy/helmtest && GOFLAGS=-mod=mod $(GO) test -count=1 ./...

## release: static binaries for linux and darwin, amd64 and arm64, and
## SHA256SUMS naming them relative to itself, into dist/ (docs/deploy.md,
## "Releases"; run it on a checkout of the tag)
RELEASE_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	rm -rf dist && mkdir -p dist
	for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=false -ldflags "-s -w $(LDFLAGS)" \
	    -o dist/hookjet-$(VERSION)-$$os-$$arch ./cmd/hookjet || exit 1; \
	done
	cd dist && sha256sum hookjet-* >SHA256SUMS && cat SHA256SUMS

clean:
	rm -rf bin data dist bench-results.json bench-ordered.json
