# fakelet: see README.md. Every target works on a fresh machine with Go and the Go module proxy.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
CONTROLPLANE_BINS := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(BIN)/etcd $(BIN)/kubemark
# The version the control plane reports (/version, kubectl version, reports), stamped as Kubernetes'
# own build stamps it; a plain go build would report v0.0.0-master.
KUBE_VERSION := $(shell awk '$$1=="require" && $$2=="k8s.io/kubernetes" {print $$3}' tools/kube/go.mod)
KUBE_VERSION_PARTS := $(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))
KUBE_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=$(word 1,$(KUBE_VERSION_PARTS)) \
	-X $(pkg).gitMinor=$(word 2,$(KUBE_VERSION_PARTS)) -X $(pkg).gitTreeState=clean -X $(pkg).gitCommit=)
RUN_ARGS ?= --profile stop-10pct
BENCH_ARGS ?= --sizes 1000,2000,5000,10000 --out docs/performance-table.md

.PHONY: build test unit run bench lint controlplane kwok clean

build:
	$(GO) build -o $(BIN)/fakelet ./cmd/fakelet

# The control plane binaries are rebuilt only when the pins in tools/*/go.mod (or go.sum) change.
controlplane: $(CONTROLPLANE_BINS)

$(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler &: tools/kube/go.mod tools/kube/go.sum
	@echo ">> building kube-apiserver, kube-controller-manager and kube-scheduler $(KUBE_VERSION) from the Go module proxy"
	@echo ">> the first build takes about 10 minutes on 2 cores; later builds use the Go build cache"
	@mkdir -p $(BIN)
	cd tools/kube && time $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(BIN)/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
	@touch $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler

# kubemark's hollow kubelet (the real kubelet over a fake runtime) is the reference fakelet's agents are
# compared with (fakelet bench --reference kubemark, docs/fidelity.md). After the control plane's
# build it takes about 2 more minutes on 2 cores: the kubelet's own packages are new to the cache.
$(BIN)/kubemark: tools/kube/go.mod tools/kube/go.sum
	@echo ">> building kubemark $(KUBE_VERSION) (the hollow kubelet of fakelet bench --reference kubemark)"
	@mkdir -p $(BIN)
	cd tools/kube && time $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(BIN)/kubemark k8s.io/kubernetes/cmd/kubemark
	@touch $(BIN)/kubemark

$(BIN)/etcd: tools/etcd/go.mod tools/etcd/go.sum
	@echo ">> building etcd $$(awk '$$1=="require" && $$2=="go.etcd.io/etcd/server/v3" {print $$3}' tools/etcd/go.mod) from the Go module proxy (about a minute)"
	@mkdir -p $(BIN)
	cd tools/etcd && time $(GO) build -trimpath -o $(BIN)/etcd go.etcd.io/etcd/server/v3
	@touch $(BIN)/etcd

# kwok, the peer `fakelet bench --peer kwok` measures fakelet against; neither `make test` nor
# `make controlplane` builds it, and plain `make bench` does not use it.
kwok: $(BIN)/kwok

$(BIN)/kwok: tools/kwok/go.mod tools/kwok/go.sum
	@echo ">> building kwok $$(awk '$$1=="require" && $$2=="sigs.k8s.io/kwok" {print $$3}' tools/kwok/go.mod) from the Go module proxy (a few minutes the first time)"
	@mkdir -p $(BIN)
	cd tools/kwok && time $(GO) build -trimpath -o $(BIN)/kwok sigs.k8s.io/kwok/cmd/kwok
	@touch $(BIN)/kwok

# unit tests only: no control plane needed.
unit:
	$(GO) test -short ./...

# all tests: unit and end-to-end against the real local control plane.
test: controlplane build
	$(GO) test -p 1 -count=1 -timeout 60m ./...

run: controlplane build
	$(BIN)/fakelet run $(RUN_ARGS)

# Measures fleets of several sizes in both footprints on fresh local control planes: a few minutes
# per size and footprint.
bench: controlplane build
	$(BIN)/fakelet bench $(BENCH_ARGS)

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf $(BIN) .fakelet
