# Ferry's entry points. `make up` runs the local stack, `make test` everything CI runs.
# `make up MODE=single` runs the services in one process (cmd/ferry) instead of one process each.
SHELL := /bin/bash
export PATH := $(CURDIR)/.cache/bin:$(PATH)

.PHONY: up test install generate lint bench

MODE ?= micro
up: install
	@case "$(MODE)" in micro|single) ;; *) echo "make up: MODE=$(MODE): want micro or single" >&2; exit 2;; esac
	go run ./e2e/cmd/ferrystack -jaeger $(if $(filter single,$(MODE)),-single,)

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
