# fieldrelay: one static binary.

BINARY  := bin/fieldrelay
PKG     := github.com/fieldrelay/fieldrelay
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X $(PKG)/cli.version=$(VERSION) -X $(PKG)/cli.commit=$(COMMIT) -X $(PKG)/cli.date=$(DATE)

.PHONY: build run test bench clean

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BINARY) .

run: build
	$(BINARY) serve --demo --data .demo

test:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go test -race -count=1 ./...

bench:
	go test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
