# Quick start (see README.md):
#   make run    install dependencies, build (release), plan the Atlas bundle (the release decision,
#               out/atlas/plan.json and plan.txt), then simulate the planned Atlas fleet
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

# The plan exits 1 when the release holds or fails (the Atlas canary holds at 1%): a decision, not an error.
AS_OF ?= 2026-12-01T00:00:00Z
run: build-release
	$(BIN_RELEASE) plan --as-of $(AS_OF) --out out/atlas || test $$? -eq 1
	$(BIN_RELEASE) simulate --quiet

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
