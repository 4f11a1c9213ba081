# kplan's build. `make demo` runs kplan's main job on a fresh machine;
# `make test` runs every test (lint, unit, fuzz seeds, integration against
# real Kafka brokers); `make acceptance` measures the statistical figures
# that gate nothing in `make test`. All fetch what they need themselves.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# The one place the Kafka version is pinned (build/kafka/pom.xml takes it).
KAFKA_VERSION := 4.3.1
GOLANGCI_LINT_VERSION := v2.15.0
# The Kubernetes control plane of the chaos-mesh integration tests: the
# versions build/k8s/go.mod and build/chaos-mesh/go.mod require.
K8S_VERSION := v1.35.4
CHAOS_MESH_VERSION := v0.9.1-0.20260902003049-47411975a8cb

CACHE := $(CURDIR)/.cache
BIN := $(CURDIR)/bin
KAFKA_JARS := $(CACHE)/kafka-$(KAFKA_VERSION)/libs
GOLANGCI_LINT := $(CACHE)/bin/golangci-lint-$(GOLANGCI_LINT_VERSION)
KPLAN := $(BIN)/kplan
LDFLAGS := -X github.com/kplan-dev/kplan/internal/app.version=$(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

K8S_DIR := $(CACHE)/k8s-$(K8S_VERSION)
CHAOS_MESH_DIR := $(CACHE)/chaos-mesh-$(CHAOS_MESH_VERSION)

export KPLAN_KAFKA_JARS := $(KAFKA_JARS)
export KPLAN_KUBE_APISERVER := $(K8S_DIR)/kube-apiserver
export KPLAN_CHAOS_MESH := $(CHAOS_MESH_DIR)

.PHONY: all build test unit integration acceptance acceptance-doc lint vet fmt kafka k8s etcd iptables tools demo bench fuzz soak clean golden

all: build

build:
	go build -ldflags '$(LDFLAGS)' -o $(KPLAN) ./cmd/kplan

## test: everything CI runs, each test once: lint, the unit tests (with every
## fuzz target's seed corpus, which `go test` runs as ordinary tests), then the
## integration tests. Fails (never skips) when Java, Maven or the jars are missing.
test: lint unit integration

## unit: fast in-process tests and fuzz seeds, with the race detector.
unit:
	go test -race -count=1 ./...

## integration: tests against real KRaft brokers started from Kafka's own jars,
## and against a real Kubernetes API server with Chaos Mesh's controller (k8s).
##
## The rule: an integration test is a Test function in a _test.go file built
## only under the `integration` tag (`//go:build integration`). This target
## runs exactly those functions and nothing else (`go test -tags integration
## ./...` would run every untagged test a second time): for each package
## holding such files it collects their Test function names and runs
## `go test -tags integration -run '^(A|B|...)$'` there; subtests run with
## their parent. Nothing to keep in step by hand: tag the file and the target
## finds its tests. Every package runs even when an earlier one fails; the
## target fails at the end if any did.
##
## Two lanes: the packages of INTEGRATION_LANE2 run one after another beside
## the others (their lines are prefixed "lane2: "). A package keeps less than
## one of the machine's two cores busy, JVMs included: most of its time is
## waiting (phases, failovers, restarts, the Kubernetes control plane and
## Chaos Mesh's controller). Measured alone (2026-11-26, user+sys CPU over
## wall): internal/chaos/chaosmesh 71 s in 148 s, internal/cli/chaos 109 s
## in 131 s. Lane 2 holds the Chaos Mesh packages, the secured labs' and the
## CLI ones on the shared 3-broker lab, about as long as lane 1 in all;
## internal/cli/chaos also runs the Kubernetes control plane for
## TestChaosWorkersKubernetes (--workers-on kubernetes, k8stest's JobAgent
## running the workers' pods), and fails, never skips, when etcd,
## kube-apiserver or Chaos Mesh's files are missing (`make k8s`).
## Their labs come from labtest's pool on ports from INTEGRATION_LANE2_PORT
## up ($$KPLAN_LABTEST_BASE_PORT; each binary also locks its port range),
## away from the fixed and pid-derived ports of the labs that lane 1's tests
## start without the pool (internal/cli/lab, internal/kafka's bandwidth and
## CPU labs, internal/cli/measure's), and below the ephemeral ports the
## Kubernetes control plane takes. Lane 2 takes no package whose tests start
## a lab of their own.
##
## -race: kept for every package. The code under test runs concurrently in
## process (producers, checking consumers, kill and restore, signal
## handling), and on the lab chaos package the detector cost 7% of the wall
## time (191 s against 179 s, 2026-11-26), most of the time being the JVMs'
## and the tests' own waits.
INTEGRATION_FILES = $(shell grep -rl --include='*_test.go' '^//go:build integration' cmd internal)
INTEGRATION_LANE2 := internal/chaos/chaosmesh internal/k8stest internal/e2e/secure \
  internal/cli/chaos internal/cli/audit internal/cli/reassign internal/cli/observe
INTEGRATION_LANE2_PORT := 30092
integration: kafka k8s iptables
	@failed=$$(mktemp); trap 'rm -f $$failed' EXIT; \
	run() { \
	  for dir; do \
	    tests=$$(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*\*testing\.T).*/\1/p' \
	      $$(grep -l '^//go:build integration' $$dir/*_test.go) | sort -u | paste -sd'|'); \
	    [ -n "$$tests" ] || continue; \
	    echo "go test -tags integration -run '^($$tests)\$$' ./$$dir"; \
	    go test -race -count=1 -p 1 -tags integration -timeout 20m -run "^($$tests)\$$" ./$$dir || echo " ./$$dir" >> $$failed; \
	  done; \
	}; \
	lane1=; lane2=; \
	for dir in $$(for f in $(INTEGRATION_FILES); do dirname $$f; done | sort -u); do \
	  case " $(INTEGRATION_LANE2) " in *" $$dir "*) lane2="$$lane2 $$dir";; *) lane1="$$lane1 $$dir";; esac; \
	done; \
	{ KPLAN_LABTEST_BASE_PORT=$(INTEGRATION_LANE2_PORT) run $$lane2 2>&1 | sed -u 's/^/lane2: /'; } & lane2pid=$$!; \
	run $$lane1; \
	wait $$lane2pid; \
	if [ -s $$failed ]; then echo "integration: failed in$$(tr -d '\n' < $$failed)" >&2; exit 1; fi

## acceptance: the statistical figures measured on real brokers (skews,
## shares within N points, a link's MB/s, a delay), which `make test` does
## not gate on. The rule mirrors integration's: an acceptance test is a Test
## function in a _test.go file built only under the `acceptance` tag
## (`//go:build acceptance`; neither `make unit` nor `make integration`
## builds those files). They are built with both tags, so that they share
## their package's integration helpers and TestMain, and only the acceptance
## functions run. Each figure is measured ACCEPT_REPEAT times; a test fails
## when the 95% confidence interval of the mean crosses the figure's bound
## (internal/acceptance). Every figure is written to ACCEPT_OUT as JSON, and
## acceptance-doc rewrites docs/BENCHMARKS.md's acceptance section from them,
## also when a figure failed. No -race: it would distort what is measured.
ACCEPT_REPEAT ?= 5
ACCEPT_OUT ?= $(CURDIR)/out/acceptance
ACCEPTANCE_FILES = $(shell grep -rl --include='*_test.go' '^//go:build acceptance' cmd internal)
acceptance: kafka k8s iptables
	@rm -rf $(ACCEPT_OUT); failed=; \
	for dir in $$(for f in $(ACCEPTANCE_FILES); do dirname $$f; done | sort -u); do \
	  tests=$$(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*\*testing\.T).*/\1/p' \
	    $$(grep -l '^//go:build acceptance' $$dir/*_test.go) | sort -u | paste -sd'|'); \
	  [ -n "$$tests" ] || continue; \
	  echo "ACCEPT_REPEAT=$(ACCEPT_REPEAT) go test -tags integration,acceptance -run '^($$tests)\$$' ./$$dir"; \
	  ACCEPT_REPEAT=$(ACCEPT_REPEAT) ACCEPT_OUT=$(ACCEPT_OUT) go test -count=1 -p 1 -tags integration,acceptance -timeout 90m -run "^($$tests)\$$" ./$$dir || failed="$$failed ./$$dir"; \
	done; \
	$(MAKE) --no-print-directory acceptance-doc; \
	if [ -n "$$failed" ]; then echo "acceptance: failed in$$failed" >&2; exit 1; fi

## acceptance-doc: docs/BENCHMARKS.md's acceptance section from ACCEPT_OUT.
acceptance-doc:
	go run ./internal/acceptance/acceptdoc $(ACCEPT_OUT) docs/BENCHMARKS.md

vet:
	go vet ./...
	go vet -tags integration ./...
	go vet -tags integration,acceptance ./...

## lint: vet, go.mod and go.sum exactly as `go mod tidy` leaves them (direct
## dependencies marked direct), and golangci-lint without tags and with both
## tags. No file is built only without a tag (no `!integration`), so the run
## with both tags lints every file of the integration run; what the
## integration run alone could add (a file that compiles only without the
## acceptance files) vet's integration run catches. The untagged run stays:
## `unused` there flags what only tagged tests use. The grep keeps it so.
lint: vet $(GOLANGCI_LINT)
	@! grep -rln --include='*.go' -E '^//go:build .*!(integration|acceptance)' cmd internal || \
	  { echo "lint: a file built only without a test tag: the run with both tags no longer covers every file" >&2; exit 1; }
	go mod tidy -diff
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags integration,acceptance ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

tools: $(GOLANGCI_LINT)

$(GOLANGCI_LINT):
	@mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/bin.tmp go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(CACHE)/bin.tmp/golangci-lint $@ && rmdir $(CACHE)/bin.tmp

## kafka: Apache Kafka's broker and tool jars from Maven Central into .cache/.
kafka: $(KAFKA_JARS)/.complete

$(KAFKA_JARS)/.complete: build/kafka/pom.xml
	@command -v java >/dev/null || { echo "make kafka: java is required (Java 17 or later) and was not found" >&2; exit 1; }
	@command -v mvn >/dev/null || { echo "make kafka: mvn (Maven) is required to fetch Kafka's jars and was not found" >&2; exit 1; }
	rm -rf $(KAFKA_JARS).tmp
	cd build/kafka && mvn -B -q -Dkafka.version=$(KAFKA_VERSION) \
	  org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
	  -DincludeScope=runtime -DoutputDirectory=$(KAFKA_JARS).tmp
	rm -rf $(KAFKA_JARS) && mv $(KAFKA_JARS).tmp $(KAFKA_JARS)
	touch $@

## k8s: the Kubernetes control plane of the integration tests (internal/k8stest):
## Debian's etcd-server (installed with apt-get when etcd is missing), and
## kube-apiserver and Chaos Mesh's chaos-controller-manager built from their Go
## modules (build/k8s, build/chaos-mesh) into .cache/ with Chaos Mesh's CRDs.
## A cold build takes several minutes; Go's build cache makes rebuilds fast.
## Fails (never skips) when something cannot be had.
k8s: etcd $(K8S_DIR)/.complete $(CHAOS_MESH_DIR)/.complete

## iptables: `kplan lab net`'s rules (loss, partition, the delay queue's
## NFQUEUE) and their integration tests need it; Debian's package is
## installed with apt-get when it is missing.
iptables:
	@command -v iptables >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "make iptables: iptables is required and was not found, and there is no apt-get to install it" >&2; exit 1; }; \
	  echo "make iptables: installing Debian's iptables (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iptables >/dev/null; } || \
	    { echo "make iptables: apt-get could not install iptables (run as root with Debian's archive reachable)" >&2; exit 1; }; }

etcd:
	@command -v etcd >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "make k8s: etcd is required and was not found, and there is no apt-get to install Debian's etcd-server" >&2; exit 1; }; \
	  echo "make k8s: installing Debian's etcd-server (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; } || \
	    { echo "make k8s: apt-get could not install etcd-server (etcd is required; run as root with Debian's archive reachable)" >&2; exit 1; }; \
	  command -v etcd >/dev/null || { echo "make k8s: etcd-server is installed but etcd is not on PATH" >&2; exit 1; }; }

$(K8S_DIR)/.complete: build/k8s/go.mod build/k8s/go.sum
	@mkdir -p $(K8S_DIR)
	cd build/k8s && GOWORK=off go build -o $(K8S_DIR)/kube-apiserver.tmp k8s.io/kubernetes/cmd/kube-apiserver
	mv $(K8S_DIR)/kube-apiserver.tmp $(K8S_DIR)/kube-apiserver
	touch $@

# github.com/chaos-mesh/fx-logr is served by the module proxy but unknown to
# the checksum database: GONOSUMDB for this build only.
$(CHAOS_MESH_DIR)/.complete: build/chaos-mesh/go.mod build/chaos-mesh/go.sum
	@mkdir -p $(CHAOS_MESH_DIR)
	cd build/chaos-mesh && GOWORK=off GONOSUMDB=github.com/chaos-mesh/fx-logr \
	  go build -o $(CHAOS_MESH_DIR)/chaos-controller-manager.tmp github.com/chaos-mesh/chaos-mesh/cmd/chaos-controller-manager
	cd build/chaos-mesh && cp "$$(GOWORK=off GONOSUMDB=github.com/chaos-mesh/fx-logr go list -m -f '{{.Dir}}' github.com/chaos-mesh/chaos-mesh)/manifests/crd.yaml" $(CHAOS_MESH_DIR)/crd.yaml.tmp
	mv $(CHAOS_MESH_DIR)/crd.yaml.tmp $(CHAOS_MESH_DIR)/crd.yaml
	mv $(CHAOS_MESH_DIR)/chaos-controller-manager.tmp $(CHAOS_MESH_DIR)/chaos-controller-manager
	touch $@

DEMO_LAB := $(CACHE)/demo-lab

## demo: kplan's main job on a fresh machine.
demo: build kafka
	@echo '$$ kplan size --plan plans/raptis-prototype.yaml'
	@$(KPLAN) size --plan plans/raptis-prototype.yaml
	@echo
	@echo '$$ kplan size --plan plans/raptis-prototype.yaml --replication-factor 5 --strategy bromax -o json'
	@$(KPLAN) size --plan plans/raptis-prototype.yaml --replication-factor 5 --strategy bromax -o json
	@echo
	@echo '$$ kplan audit --from testdata/layouts/thesis-fig3.3.json'
	@$(KPLAN) audit --from testdata/layouts/thesis-fig3.3.json
	@echo
	@echo '$$ kplan audit --from testdata/layouts/kafkakit-optimize-input.json   # a real production map'
	@$(KPLAN) audit --from testdata/layouts/kafkakit-optimize-input.json | tail -6
	@echo
	@echo '$$ kplan chaos --kill broker-3 --report out/chaos   # embedded (simulated) cluster'
	@$(KPLAN) chaos --kill broker-3 --report out/chaos
	@echo '(report: out/chaos/report.md, result.json and PNG plots)'
	@echo
	@echo '$$ kplan lab up --brokers 3'
	@trap '$(KPLAN) lab down --dir $(DEMO_LAB)' EXIT; \
	  $(KPLAN) lab up --brokers 3 --dir $(DEMO_LAB) && \
	  echo && echo '$$ kplan chaos --cluster lab --workload chaos/thesis-6-4.yaml --restore --report out/thesis-6-4   # §6.4 at A:B = 2:1, busiest broker killed' && \
	  $(KPLAN) chaos --cluster lab --lab-dir $(DEMO_LAB) --workload chaos/thesis-6-4.yaml --restore --report out/thesis-6-4 && \
	  echo '(report: out/thesis-6-4/report.md, result.json and PNG plots of predicted and measured shares)' && \
	  echo && echo '$$ kplan lab down'

## bench: the performance targets of docs/BENCHMARKS.md.
bench:
	go test -run '^$$' -bench . -benchmem ./...

## fuzz: each fuzz target for FUZZTIME (default 20s), one after another; the
## issue's figures in docs/BENCHMARKS.md come from FUZZTIME=60s (and 10m).
## `make unit` already runs every target's seed corpus and testdata/fuzz
## regression cases as ordinary tests. A crash stops the run and leaves the
## input in the package's testdata/fuzz/FuzzXxx: keep it there as a
## regression case once fixed.
## FUZZMINIMIZETIME bounds the minimizing of each new interesting input:
## Go's default (60s) stalls the targets that run a whole command (their
## inputs are whole files) for most of a short run.
FUZZTIME ?= 20s
FUZZMINIMIZETIME ?= 1000x
FUZZ_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' '^func Fuzz' cmd internal)))
## soak: the full soak of docs/BENCHMARKS.md on a 3-broker lab of its own:
## SOAK_CYCLES kill and restart cycles of the busiest broker while producing
## with acks=all and idempotence. It fails when a cycle lost or duplicated an
## acknowledged record, or when a broker is not back in every ISR at the end
## (kplan chaos checks that itself). The result goes to $(SOAK_DIR)/soak.json.
## SOAK_SECURITY=sasl_ssl runs it on the secured lab once `kplan lab up
## --security` exists.
SOAK_CYCLES ?= 20
SOAK_PHASE ?= 2s
SOAK_DIR ?= $(CACHE)/soak-lab
SOAK_PORT ?= 39092
SOAK_SECURITY ?=
soak: build kafka
	$(KPLAN) lab up --dir $(SOAK_DIR) --base-port $(SOAK_PORT) $(if $(SOAK_SECURITY),--security $(SOAK_SECURITY))
	trap '$(KPLAN) lab down --dir $(SOAK_DIR)' EXIT; \
	$(KPLAN) chaos --cluster lab --lab-dir $(SOAK_DIR) \
	  $(if $(SOAK_SECURITY),--command-config $(SOAK_DIR)/client.properties) \
	  --kill busiest --restore --repeat $(SOAK_CYCLES) \
	  --warmup 1s --phase-duration $(SOAK_PHASE) -o json > $(SOAK_DIR)/soak.json; \
	jq -e '[.runs[].partitioners[] | .lost + .duplicates] | add == 0' $(SOAK_DIR)/soak.json > /dev/null || \
	  { echo "soak: acknowledged records lost or duplicated (see $(SOAK_DIR)/soak.json)" >&2; exit 1; }

## golden: rewrite every golden file from what the code prints today
## (internal/testutil/golden; review the diff before committing it).
golden:
	KPLAN_UPDATE_GOLDEN=1 go test -count=1 ./...

fuzz:
	@for dir in $(FUZZ_PKGS); do \
	  for f in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' $$dir*_test.go | sort -u); do \
	    echo "go test -run '^$$' -fuzz '^$$f\$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$dir"; \
	    go test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$dir; \
	  done; \
	done

clean:
	rm -rf $(BIN)
