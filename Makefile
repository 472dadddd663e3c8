# The whole test suite: `make test` (what .ci/run runs). Everything it needs
# beyond Go itself (the npm packages of the real-client end-to-end tests) is
# installed by the tests that use it, once per machine (docs/clients.md).
GO ?= go
FUZZTIME ?= 5s

.PHONY: test vet fmt race fuzz build bench

test: fmt vet race fuzz

build:
	$(GO) build -o bin/router ./cmd/router

fmt:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './proxy/e2e/node_modules/*'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

race:
	$(GO) test -race -count=1 -timeout 20m ./...

fuzz:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
