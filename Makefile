# taskactions: `make run` starts the server on its embedded control plane,
# `make test` runs every test. Nothing needs installing by hand: Go tools
# are pinned in go.mod (`go tool ...`), and the browser tests' Chromium and
# the history tests' PostgreSQL are installed by `make test-deps` when
# missing.

GO        ?= go
BIN       := bin/taskactions
PKGS      := ./...
# Arguments for `make run`, e.g. make run ARGS='--listen 127.0.0.1:9090'.
ARGS      ?=
TESTFLAGS ?= -timeout 30m
FUZZTIME  ?= 10000x
BENCHTIME ?= 1s

.PHONY: all build run test test-deps test-go test-cluster cluster-bins chart-generated fuzz generate check-generate bench soak chaos lint lint-web lint-openapi screenshot clean kubectl

all: build

# No -trimpath: it would keep a second copy of every compiled package, and
# the tests would compile the Kubernetes libraries again.
build:
	$(GO) build -ldflags "-s -w" -o $(BIN) ./cmd/server

# The genuine kubectl, built from the Kubernetes libraries in go.mod (its
# version stamped in, as releases are: kubectl refuses its own version
# otherwise), for the tests that drive the embedded control plane with it.
KUBE_VERSION = $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubectl | sed 's/^v0\./v1./')
KUBE_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))
kubectl:
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o bin/kubectl ./hack/kubectl

# The embedded control plane is the default; an inherited KUBECONFIG would
# point the server at some other cluster, so run ignores it.
run: build
	env -u KUBECONFIG ./$(BIN) $(ARGS)

test: lint lint-openapi build kubectl test-deps test-go fuzz test-cluster

# The real-cluster tests (test/cluster, a Go module of its own so that the
# product does not depend on k8s.io/kubernetes): etcd, kube-apiserver and
# kube-controller-manager built from k8s.io/kubernetes, and Helm, pinned by
# a tool line in test/cluster/go.mod. About 10 minutes to build cold.
CLUSTER_GO = cd test/cluster && $(GO)
cluster-bins:
	$(CLUSTER_GO) build -ldflags "$(KUBE_LDFLAGS)" -o ../../bin/cluster/ ./cmd/...

# -count=1: these tests run bin/taskactions, which Go's test cache does
# not see, so a changed server would otherwise get the last pass again.
test-cluster: build kubectl cluster-bins bin/helm
	$(CLUSTER_GO) vet ./...
	$(CLUSTER_GO) test -count=1 $(TESTFLAGS) ./...

test-go:
	$(GO) test $(TESTFLAGS) $(PKGS)

# Short fuzz runs of the request bodies against bin/taskactions; run longer
# by hand with FUZZTIME=1000000x make fuzz. A count, not a duration: Go
# 1.26's fuzz coordinator can fail a duration run at its deadline with
# "context deadline exceeded" and no crasher (golang/go#75804, fixed in 1.27).
fuzz: build
	$(GO) test -run '^$$' -fuzz '^FuzzEnqueueBody$$' -fuzztime $(FUZZTIME) -parallel 1 ./test/fuzz
	$(GO) test -run '^$$' -fuzz '^FuzzStatusBody$$' -fuzztime $(FUZZTIME) -parallel 1 ./test/fuzz
	$(GO) test -run '^$$' -fuzz '^FuzzStageYAMLBody$$' -fuzztime $(FUZZTIME) -parallel 1 ./test/fuzz

# Debian's git for the git promotion steps (the server runs git, as Kargo
# does), Debian's Chromium for the browser tests, and Debian's PostgreSQL for the
# history store's tests (they initdb a throwaway cluster in a temp dir; the
# package's own cluster is not used).
test-deps:
	@command -v git >/dev/null 2>&1 || { \
	  echo "installing git (the git promotion steps run it)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq git >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (browser tests)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "installing postgresql (history store tests)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; }

generate:
	$(GO) tool controller-gen object paths=./api/... crd:crdVersions=v1 output:crd:dir=config/crd
	./hack/gen-kube.sh
	$(GO) tool oapi-codegen -config api/oapi-server.yaml api/openapi.yaml
	$(GO) tool oapi-codegen -config api/oapi-client.yaml api/openapi.yaml
	gofmt -w api internal pkg
	$(MAKE) chart-generated

# The chart's CRDs are config/crd's, marked as this server's (it updates
# only CRDs it installed); config/rbac is the chart's RBAC for those who
# apply plain manifests.
chart-generated: bin/helm
	for f in config/crd/*.yaml; do sed '/^  annotations:$$/a\    taskactions.dev/installed-by: taskactions' $$f > charts/taskactions/crds/$$(basename $$f); done
	mkdir -p config/rbac
	{ echo "# Generated from charts/taskactions by make generate: the chart's ServiceAccount and RBAC"; \
	  echo "# for release taskactions in namespace taskactions-system. Create the namespace, then"; \
	  echo "# kubectl apply -f charts/taskactions/crds -f config/rbac (the chart's CRDs carry the"; \
	  echo "# annotation that marks them as this server's; config/crd's do not)."; \
	  bin/helm template taskactions charts/taskactions --namespace taskactions-system \
	    --show-only templates/serviceaccount.yaml --show-only templates/rbac.yaml \
	  | grep -v -e '^# Source:' -e 'helm.sh/chart:' -e 'app.kubernetes.io/managed-by:'; } > config/rbac/rbac.yaml

bin/helm: test/cluster/go.mod
	$(CLUSTER_GO) build -o ../../bin/helm helm.sh/helm/v4/cmd/helm

# Fails when the committed generated code is not what `make generate` makes.
check-generate: generate
	@git diff --exit-code -- api charts config internal pkg || { echo "generated code is stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api charts config internal pkg)" || { git status --porcelain -- api charts config internal pkg; echo "make generate created files: commit them"; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy and commit"; exit 1; }
	@cd test/cluster && $(GO) mod tidy -diff || { echo "test/cluster's go.mod or go.sum is not tidy: run go mod tidy there and commit"; exit 1; }

# The durable-history soak (docs/development.md, docs/performance.md); about 75 minutes.
SOAK_ARGS ?=
soak: build
	$(GO) run ./hack/soak -bin $(BIN) $(SOAK_ARGS)

# kill -9s during a run of process tasks, and the descriptor budget
# (docs/performance.md); a few minutes. CHAOS_ARGS='-n 100 -kills 4' for a quick one.
CHAOS_ARGS ?=
chaos: build
	$(GO) run ./hack/chaos -bin $(BIN) $(CHAOS_ARGS)

# test-deps: BenchmarkRunPage (test/browser) measures the run page in
# Chromium, at 50, 10,000 and 50,000 actions (RUNPAGE_SIZES=50,10000 for
# fewer; docs/performance.md).
bench: test-deps
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -timeout 60m $(PKGS)

# The OpenAPI document as outside tools see it: Redocly's recommended rules
# (redocly.yaml says which are off and why), and the TypeScript SDKs that
# openapi-typescript (with openapi-fetch) and @hey-api/openapi-ts generate
# from it, with hack/openapi/e2e compiled against them (tsc --strict, which
# also checks that each SDK types its streams as what it yields). test/e2e's
# TestTypeScriptSDKs runs that build against a real server. The tools are
# pinned in hack/openapi (npm).
OPENAPI_TOOLS := hack/openapi/node_modules/.bin
lint-openapi:
	cd hack/openapi && npm ci --no-audit --no-fund --loglevel=error
	$(OPENAPI_TOOLS)/redocly lint --config redocly.yaml api/openapi.yaml
	cd hack/openapi && rm -rf gen build && node_modules/.bin/openapi-typescript ../../api/openapi.yaml -o gen/openapi-typescript.ts \
	  && node_modules/.bin/openapi-ts -i ../../api/openapi.yaml -o gen/hey-api >/dev/null && node_modules/.bin/tsc -p tsconfig.json

# The dashboard's JavaScript: every module is // @ts-check, and tsc
# --checkJs --noEmit (web/tsconfig.json) checks them against the types of
# the TypeScript SDK that openapi-typescript generates from
# api/openapi.yaml, the stream events included. Both tools are pinned in
# hack/openapi (npm).
lint-web:
	cd hack/openapi && npm ci --no-audit --no-fund --loglevel=error
	cd hack/openapi && node_modules/.bin/openapi-typescript ../../api/openapi.yaml -o gen/openapi-typescript.ts >/dev/null
	@missing=$$(grep -L '^// @ts-check' web/static/js/*.js); test -z "$$missing" || { echo "$$missing: no // @ts-check"; exit 1; }
	$(OPENAPI_TOOLS)/tsc -p web/tsconfig.json

lint: lint-web
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet $(PKGS)

# Refresh docs/dashboard.png, docs/dashboard.md's picture of the run page.
screenshot: test-deps
	$(GO) test -count=1 -run '^TestLayoutAndScreenshot$$' ./test/browser -args -update-screenshot

clean:
	rm -rf bin
