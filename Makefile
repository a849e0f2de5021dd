# Ferry's entry points. `make up` runs the local stack, `make test` everything CI runs.
SHELL := /bin/bash
export PATH := $(CURDIR)/.cache/bin:$(PATH)

.PHONY: up test install generate lint bench

up: install
	go run ./e2e/cmd/ferrystack -jaeger

test:
	bash tools/test.sh

install:
	bash tools/install.sh

generate: install
	buf generate

lint: install
	buf lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Ferry vs Apache Kafka vs the Fluss Java writer (e2e/bench/README.md); not part of `make test`.
# Extra flags: make bench BENCH_FLAGS="-records 1000000"
bench:
	go run ./e2e/bench $(BENCH_FLAGS)
