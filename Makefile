# The whole test suite: `make test` (what .ci/run runs). Everything it needs
# beyond Go itself (the npm packages of the real-client end-to-end tests) is
# installed by the tests that use it, once per machine (docs/clients.md).
GO ?= go
FUZZTIME ?= 5s

.PHONY: test vet fmt race fuzz build bench image image-check helm-check bench-compare reliability

test: fmt vet race fuzz

build:
	$(GO) build -o bin/router ./cmd/router

fmt:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path '*/node_modules/*'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# vet also builds the binary for Windows (no tier 3) and macOS (no Linux
# sandbox): a Unix- or Linux-only call in a shared file fails here.
vet:
	$(GO) vet ./...
	GOOS=windows $(GO) build -o /dev/null ./cmd/router
	GOOS=darwin $(GO) build -o /dev/null ./cmd/router

race:
	$(GO) test -race -count=1 -timeout 20m ./...

fuzz:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The reliability suite in full (docs/reliability.md): the built binary
# against a fake upstream with fault modes, 600 slow sockets, a minute of
# reloads under load and a 10-minute soak; prints one table. Its short
# version runs in `make test`.
reliability:
	RELIABILITY=long $(GO) test -count=1 -timeout 40m -run TestReliability -v ./proxy/reliability

# Container image (Containerfile) with buildah, from a binary built here; not
# part of `make test` because it needs buildah (docs/deploy.md).
IMAGE ?= localhost/skillrouter:dev

image:
	bash scripts/image.sh --tag $(IMAGE)

# Builds the image and checks its entrypoint, user, port, environment and
# root filesystem; installs buildah with apt-get when it is missing.
image-check:
	bash scripts/image.sh --install --check --tag $(IMAGE)

# Helm chart: helm lint --strict and helm template with each values file,
# manifests and configuration checked by a Go test (also part of `make test`).
# The first run on a machine builds helm v3.22.0 into the user cache.
helm-check:
	$(GO) test -count=1 -run TestHelmChart -v ./cmd/router

# Cost per routed request side by side (docs/performance.md): the built
# router, two bare Go reverse proxies (Go's default transport and a pooled
# one) and the upstream called directly, in one run, alternating targets;
# not part of `make test` (minutes of load).
bench-compare:
	SKILLROUTER_SIDE_BY_SIDE=1 $(GO) test -count=1 -run TestSideBySide -v -timeout 60m ./proxy/e2e
