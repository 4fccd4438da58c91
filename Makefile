# Outrigger build, test and benchmark entry points. Every tool a target needs
# is installed here (pinned), so a fresh machine needs only Go and make.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/tools
STATICCHECK_VERSION := v0.8.2
# Stamp the binary with the VCS revision and tree state that --version and
# /server_info report (the machine's GOFLAGS may turn this off).
BUILDFLAGS := -buildvcs=auto
CONFIG ?= examples/quickstart.yaml

.PHONY: plugin plugin-dist
.PHONY: all build run test test-unit test-e2e test-assets bench bench-go bench-peers bench-bodies bench-floods bench-tcpproxy bench-tls bench-idle bench-rss bench-dns bench-hc bench-resilience bench-hotrestart bench-instructions bench-tracing bench-xds lint fmt clean \
	manifests generate check-manifests test-cluster helm test-chart chart-crds test-browser image push test-image

all: build

build:
	$(GO) build $(BUILDFLAGS) -o $(BIN)/sidecar ./cmd/sidecar

# The kubectl plugin (kubectl-outrigger; docs/debugging.md).
plugin:
	$(GO) build $(BUILDFLAGS) -o $(BIN)/kubectl-outrigger ./cmd/kubectl-outrigger

# The plugin's release archives for linux and darwin, amd64 and arm64, and
# its krew manifest rendered from hack/krew/outrigger.yaml, in bin/dist/.
plugin-dist:
	GO="$(GO)" VERSION="$(VERSION)" hack/plugin-dist.sh

run: build
	$(BIN)/sidecar -c $(CONFIG)

test: lint check-manifests test-assets test-unit test-e2e test-cluster test-chart test-browser test-image

test-unit:
	hack/tls-tools.sh
	$(GO) test -count=1 ./pkg/... ./cmd/...

test-e2e: build test-capture
	hack/tls-tools.sh
	SIDECAR_BIN=$(BIN)/sidecar $(GO) test -count=1 -timeout 20m ./test/e2e/ -ginkgo.v=false

# Transparent capture for real, as root: network namespaces and a veth pair,
# `sidecar capture` rules, the sidecar as the proxy's user (test/e2e/capture;
# hack/netns-tools.sh installs ip and nsenter when missing); original_src
# with its policy routing across three namespaces. Without root the tests
# skip and say so. test-e2e runs it first.
.PHONY: test-capture
test-capture: build
	hack/netns-tools.sh
	SIDECAR_BIN=$(BIN)/sidecar $(GO) test -count=1 -v -timeout 5m ./test/e2e/capture/

# kube-apiserver and etcd for the cluster test tier, built from Go modules into
# bin/test-assets (skipped when already built); prints the folder for
# KUBEBUILDER_ASSETS.
test-assets:
	GO="$(GO)" hack/test-assets.sh

# controller-gen, pinned by go.mod's tool directive.
CONTROLLER_GEN := $(GO) tool controller-gen

# The CRDs (config/crd/bases), the controller's RBAC role (config/rbac) and
# the injection webhook's configuration (config/webhook) from the markers in
# pkg/apis and pkg/controller.
manifests:
	$(CONTROLLER_GEN) crd paths=./pkg/apis/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=outrigger-controller paths=./pkg/controller/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./pkg/controller/inject/... output:webhook:artifacts:config=config/webhook
	$(MAKE) --no-print-directory chart-crds

# The Helm chart ships the CRDs as they are in config/crd/bases (helm installs
# crds/ before the templates).
chart-crds:
	rm -f charts/outrigger/crds/*.yaml
	cp config/crd/bases/*.yaml charts/outrigger/crds/

# The API types' deepcopy code.
generate:
	$(CONTROLLER_GEN) object paths=./pkg/apis/...

# Fails when a generated file differs from what the markers give now.
check-manifests:
	GO="$(GO)" hack/check-manifests.sh

# The cluster tier: a real kube-apiserver and etcd, the controller binary,
# sidecar processes standing in for pods' proxies, and Contour (built from
# its Go module by hack/contour.sh) as a real control plane.
test-cluster: build plugin test-assets
	$(GO) build $(BUILDFLAGS) -o $(BIN)/controller ./cmd/controller
	GO="$(GO)" hack/contour.sh >/dev/null
	KUBEBUILDER_ASSETS=$(BIN)/test-assets SIDECAR_BIN=$(BIN)/sidecar CONTROLLER_BIN=$(BIN)/controller PLUGIN_BIN=$(BIN)/kubectl-outrigger CONTOUR_BIN=$(TOOLS)/contour \
		$(GO) test -count=1 -timeout 15m ./test/e2e/cluster/... -ginkgo.v=false

# The admin pages in headless Chromium (Debian's package, installed by
# hack/chromium.sh when missing): the active stats page, the HTML stats page,
# the home page's forms and a cross-site form. Screenshots go to
# bin/test-output/browser/.
test-browser: build
	CHROMIUM="$$(hack/chromium.sh)" SIDECAR_BIN=$(BIN)/sidecar TEST_OUTPUT_DIR=$(BIN)/test-output \
		$(GO) test -count=1 -timeout 5m ./test/browser/...

# helm v3, pinned in hack/helm.sh, built from its Go module into bin/tools/helm
# (skipped when already built).
helm:
	GO="$(GO)" hack/helm.sh >/dev/null

# The Helm chart: helm lint, the rendered manifests against golden files, the
# ClusterRole and CRDs against config/, and every rendered object created
# through a real kube-apiserver.
test-chart: helm test-assets
	HELM=$(TOOLS)/helm KUBEBUILDER_ASSETS=$(BIN)/test-assets $(GO) test -count=1 -timeout 5m ./test/chart/...

# OCI images of the sidecar and the controller (linux/amd64 and linux/arm64,
# from scratch, user 65532) built without a container engine by
# hack/imagebuild: bin/images/{sidecar,controller} are OCI image layouts.
# `make push REGISTRY=ghcr.io/you [TAG=...] [INSECURE=1]` builds them and
# pushes REGISTRY/sidecar:TAG and REGISTRY/controller:TAG; TAG defaults to
# the chart's appVersion, what the chart installs by default.
REGISTRY ?=
TAG ?=
INSECURE ?=
IMAGEBUILD := $(GO) run ./hack/imagebuild
IMAGEFLAGS = -out $(BIN)/images $(if $(TAG),-tag "$(TAG)")

image:
	$(IMAGEBUILD) build $(IMAGEFLAGS)

push:
	$(IMAGEBUILD) push $(IMAGEFLAGS) -registry "$(REGISTRY)" $(if $(filter 1 true yes,$(INSECURE)),-insecure)

# The images: built and pushed by hack/imagebuild to a registry started in
# the test, pulled back and checked (test/image).
test-image:
	$(GO) test -count=1 -timeout 15m ./hack/imagebuild/... ./test/image/...

# Go benchmarks, then the traffic benchmark beside haproxy and nginx
# (../shared/bench/peers.sh; it installs nginx, haproxy, wrk and h2load from
# Debian packages when missing and waits for a quiet machine).
bench: bench-go bench-peers bench-floods bench-hc bench-resilience bench-hotrestart bench-xds

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

PEERS ?= $(CURDIR)/../shared/bench/peers.sh
bench-peers: build
	OUTRIGGER=$(BIN)/sidecar TARGETS="direct haproxy nginx outrigger" REPS=$${REPS:-3} bash $(PEERS)

# Body sizes beside haproxy and nginx (issue #19): 128 B, 16 KiB, 64 KiB and
# 1 MiB responses and 64 KiB and 1 MiB POSTs (SIZES, POSTS), requests/s and
# the proxy's CPU per request, peers.sh's pinning (test/bench/bodies/run.sh;
# BASE=other/sidecar measures that binary too, interleaved in the same run).
bench-bodies: build
	command -v haproxy >/dev/null && command -v nginx >/dev/null && command -v wrk >/dev/null || { apt-get update && apt-get install -y haproxy nginx wrk; }
	REPS=$${REPS:-3} DUR=$${DUR:-5s} bash test/bench/bodies/run.sh $(BIN)/sidecar $(BASE)

# tcp_proxy beside haproxy in TCP mode (small messages, bulk upload and
# download), each proxy alone on CPU 0 with one worker, the clients and
# upstreams on CPU 1 (test/bench/tcpproxy; haproxy from Debian's package).
# TLS termination beside haproxy: keep-alive HTTPS, new and resumed
# handshakes, h2 over TLS beside h2c, memory per idle TLS connection
# (BENCHMARKS.md, issue #14).
bench-tls: build
	test/bench/tls/run.sh $(BIN)/sidecar

# What connections cost beside haproxy and nginx (issue #19): memory per
# idle keep-alive connection, HTTP/1.1 and h2c, and new connections/s with
# the proxy's CPU per connection (test/bench/idleconn; BASE=other/sidecar
# measures that binary too, in the same run).
bench-idle: build
	command -v haproxy >/dev/null && command -v nginx >/dev/null || { apt-get update && apt-get install -y haproxy nginx; }
	$(GO) build $(BUILDFLAGS) -o $(BIN)/idlebench ./test/bench/idleconn
	taskset -c 1 $(BIN)/idlebench -sidecar $(BIN)/sidecar $${BASE:+-baseline $$BASE} -conns $${CONNS:-5000} -reps $${REPS:-3} -dur $${DUR:-5s}

# Resident memory of the benchmark configuration beside haproxy and nginx
# (issue #19): at rest after start-up and after a bounded keep-alive load
# (64 connections, 128 B then 16 KiB bodies, DUR each), anonymous and file
# pages apart, and the sidecar's /memory (test/bench/idleconn -tests rss).
bench-rss: build
	command -v haproxy >/dev/null && command -v nginx >/dev/null || { apt-get update && apt-get install -y haproxy nginx; }
	$(GO) build $(BUILDFLAGS) -o $(BIN)/idlebench ./test/bench/idleconn
	taskset -c 1 $(BIN)/idlebench -tests rss -conns 1000 -sidecar $(BIN)/sidecar $${BASE:+-baseline $$BASE} -dur $${DUR:-5s}

bench-tcpproxy: build
	$(GO) build $(BUILDFLAGS) -o $(BIN)/tcpbench ./test/bench/tcpproxy
	taskset -c 1 $(BIN)/tcpbench -sidecar $(BIN)/sidecar -reps $${REPS:-3} -dur $${DUR:-5s}

# A STRICT_DNS cluster of 1,000 answers refreshed every second beside one
# resolved once: the requests' latency percentiles (test/bench/dnsrefresh).
bench-dns: build
	$(GO) build $(BUILDFLAGS) -o $(BIN)/dnsbench ./test/bench/dnsrefresh
	$(BIN)/dnsbench -sidecar $(BIN)/sidecar -reps $${REPS:-3} -dur $${DUR:-10s}

# Active health checking of 1,000 loopback HTTP hosts every second: the
# sidecar's CPU time beside a control without checks (test/bench/hcload).
bench-hc: build
	$(GO) run ./test/bench/hcload -sidecar $(BIN)/sidecar -reps $${REPS:-3} -dur $${DUR:-20s}

# Circuit breakers, outlier detection and retries configured beside the
# same config without them, interleaved: requests/s and the proxy's CPU
# per request (test/bench/resilience/run.sh; needs wrk).
bench-resilience: build
	ROUNDS=$${ROUNDS:-7} DURATION=$${DURATION:-5s} bash test/bench/resilience/run.sh $(BIN)/sidecar

# Two hot restarts in a row under steady keep-alive and
# connection-per-request load through the proxy: zero failed requests and
# zero refused connections, or the target fails (test/bench/hotrestart).
bench-hotrestart: build
	$(GO) run ./test/bench/hotrestart -sidecar $(BIN)/sidecar -restarts 2 -dur $${DUR:-3s}

# Instructions the sidecar executes per proxied HTTP/1.1 request, counted
# by valgrind's callgrind (test/bench/h1count): a figure the machine's load
# does not move. BASE=path/to/other/sidecar measures it too, interleaved;
# TRACING=off,1,100 measures each binary with tracing off and at 1% and 100%
# sampling (OTLP/HTTP to a collector outside the sidecar); CONFIG=minimal,typical
# measures the peers bootstrap and a typical sidecar's (access log, 20 routes,
# health_check, stats tags); BODY=16384 sets the upstream's response body size
# (128 bytes by default).
bench-instructions: build
	command -v valgrind >/dev/null || { apt-get update && apt-get install -y valgrind; }
	$(GO) run ./test/bench/h1count -reps $${REPS:-3} $${TRACING:+-tracing $$TRACING} $${CONFIG:+-config $$CONFIG} $${BODY:+-body $$BODY} $(BIN)/sidecar $(BASE)

# Requests/s with tracing off, at 1% and at 100% sampling (issue #12's
# budgets), exported over OTLP/HTTP to a receiver that discards the spans
# (test/bench/tracerps): the cases alternated ROUNDS times for DUR each under
# wrk, the ratios to tracing off printed per round (the machine's noise) and
# as medians, the receiver's CPU share apart. BASE=path/to/other/sidecar is
# measured in the same alternation.
bench-tracing: build
	command -v wrk >/dev/null || { apt-get update && apt-get install -y wrk; }
	$(GO) run ./test/bench/tracerps -rounds $${ROUNDS:-5} -dur $${DUR:-5s} $${CASES:+-cases $$CASES} $(BIN)/sidecar $(BASE)

# Dynamic configuration from go-control-plane's ADS server on loopback
# (test/bench/xds): 10,000 CDS clusters, a 10,000-endpoint EDS update, a
# 10,000-host RDS table, and 100 updates under load with no failed request
# (or the target fails).
bench-xds: build
	$(GO) run ./test/bench/xds -sidecar $(BIN)/sidecar -reps $${REPS:-3}

# The sidecar under each HTTP/2 flood it defends against: memory growth and
# another client's latency, beside a control (test/bench/floods).
bench-floods: build
	$(GO) run ./test/bench/floods -sidecar $(BIN)/sidecar

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(TOOLS)/staticcheck
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files -o --exclude-standard '*.go' 2>/dev/null)); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(TOOLS)/staticcheck ./...

fmt:
	gofmt -w $$(git ls-files '*.go'; git ls-files -o --exclude-standard '*.go')

clean:
	rm -rf $(BIN)
