# Quick start (see README.md):
#   make run    install dependencies, build (release), explain the Atlas fit, simulate Atlas
#   make test   install dependencies, build (relassert), run every test
# Other targets: make dev (ASan+UBSan build and tests), make bench, make fuzz, make format.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BIN_RELEASE := build/release/fleetplan

.PHONY: deps run test dev bench fuzz format tidy clean

deps:
	@bash scripts/install-deps.sh

.PHONY: build-release
build-release: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS) --target fleetplan

run: build-release
	$(BIN_RELEASE) fit --model atlas-70b --gpu h100-sxm-80g --tp 4 --context 32768 --concurrency 64 || test $$? -eq 1
	$(BIN_RELEASE) simulate

test: deps
	cmake --preset relassert >/dev/null
	cmake --build --preset relassert -j $(JOBS)
	ctest --preset relassert

dev: deps
	cmake --preset dev >/dev/null
	cmake --build --preset dev -j $(JOBS)
	ctest --preset dev

bench: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)
	@for b in build/release/*_bench; do echo "== $$b"; $$b; done

fuzz: deps
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)

format:
	find src include tests bench -name '*.cc' -o -name '*.h' | xargs clang-format -i

tidy:
	cmake --preset relassert >/dev/null
	find src -name '*.cc' | xargs clang-tidy -p build/relassert --quiet

clean:
	rm -rf build
