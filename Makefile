# Ferry's entry points. `make up` runs the local stack, `make test` everything CI runs.
SHELL := /bin/bash
export PATH := $(CURDIR)/.cache/bin:$(PATH)

.PHONY: up test install generate lint

up: install
	go run ./e2e/cmd/ferrystack

test:
	bash tools/test.sh

install:
	bash tools/install.sh

generate: install
	buf generate

lint: install
	buf lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
