# SPDX-License-Identifier: Apache-2.0
# Wharf's entry points. `make demo` and `make test` each do all the set-up (Debian packages,
# configure, build) and then run. Everything builds in build/ (CUDA if nvcc is found).
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=
WHARF_WITH_CUDA ?= AUTO
WHARF := $(BUILD)/wharf

.PHONY: all deps configure build demo test test-unit test-c test-gpu bench gpu-bundle \
        fuzz asan tsan abi-baseline install clean test-go test-rust test-java jar

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DWHARF_WITH_CUDA=$(WHARF_WITH_CUDA) $(CMAKE_FLAGS)

# deps on every build: after `make demo` (build dependencies only) the test dependencies are
# still missing; it asks apt only for what is. A folder `make demo` configured without tests
# and benchmarks gets them back here.
configure: $(BUILD)/CMakeCache.txt | deps
	@if grep -qE '^WHARF_BUILD_(TESTS|BENCH):BOOL=OFF' $(BUILD)/CMakeCache.txt; then \
	  cmake -S . -B $(BUILD) -DWHARF_BUILD_TESTS=ON -DWHARF_BUILD_BENCH=ON; fi

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Only what the demo needs: the build dependencies (install-deps.sh build), and the library,
# the AOTInductor shim and the `wharf` program (target wharf_demo), no tests or benchmarks.
demo:
	@bash scripts/install-deps.sh build
	@[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) -DWHARF_WITH_CUDA=$(WHARF_WITH_CUDA) \
	  -DWHARF_BUILD_TESTS=OFF -DWHARF_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS) --target wharf_demo
	$(WHARF) demo

# Every suite that runs without a GPU: unit (host backend; CUDA tests skip with a reason),
# C99/ABI checks, the language bindings, then clang's thread-safety analysis (build-tsa), the
# unit tests under ASan+UBSan (build-asan) and under TSan (build-tsan), a 60 s fuzz run.
test: build
	cd $(BUILD) && ctest --output-on-failure
	@bash scripts/run-binding-tests.sh $(BUILD)
	@JOBS=$(JOBS) bash scripts/sanitizer-tests.sh all

test-unit: build
	$(BUILD)/tests/wharf_unit_tests

# On a machine with a GPU: the CUDA suites plus compute-sanitizer.
test-gpu: build
	bash scripts/gpu-run.sh $(BUILD) tests

bench: build
	bash scripts/bench.sh $(BUILD)

# A small folder to carry to the lent GPU machine: test/bench binaries, libwharf.so, scripts.
gpu-bundle:
	$(MAKE) build WHARF_WITH_CUDA=ON
	bash scripts/gpu-bundle.sh $(BUILD) gpu-bundle

fuzz:
	bash tests/fuzz/run.sh $${FUZZ_SECONDS:-60}

# The whole unit-test binary under ASan+UBSan (build-asan), and under TSan (build-tsan); `make
# test` runs both; WHARF_DCHECKs are on in both.
asan: deps
	@JOBS=$(JOBS) bash scripts/sanitizer-tests.sh asan

tsan: deps
	@JOBS=$(JOBS) bash scripts/sanitizer-tests.sh tsan

# Clang's thread-safety analysis of the library's lock annotations (build-tsa, objects only).
.PHONY: tsa sanitizer-tests
tsa: deps
	@JOBS=$(JOBS) bash scripts/sanitizer-tests.sh tsa

# What `make test` runs after ctest and the bindings: tsa, asan, then tsan (the whole unit suite).
sanitizer-tests: deps
	@JOBS=$(JOBS) bash scripts/sanitizer-tests.sh all

# Regenerates the committed ABI baseline: only on purpose, with a CHANGELOG.md entry.
abi-baseline: build
	bash tests/abi/make_baseline.sh $(BUILD)

# For packagers and users: only the build dependencies, no tests or benchmarks, a release
# build in its own folder, installed stripped (PREFIX defaults to /usr/local). The Java
# binding's jar goes to PREFIX/share/java/wharf-VERSION.jar (and the link wharf.jar) when
# javac and swig are found; neither is required (INSTALL_JAR=0: never build the jar).
INSTALL_BUILD ?= build-install
INSTALL_JAR ?= auto
install: release-build
	cmake --install $(INSTALL_BUILD) --strip $(if $(PREFIX),--prefix $(PREFIX))

# The release build `make install` and `make dist` share (INSTALL_JAR=1: the jar is required).
.PHONY: release-build dist test-dist
release-build:
	@bash scripts/install-deps.sh $(if $(filter 1,$(INSTALL_JAR)),dist,build)
	cmake -S . -B $(INSTALL_BUILD) -DWHARF_WITH_CUDA=$(WHARF_WITH_CUDA) -DWHARF_BUILD_TESTS=OFF \
	  -DWHARF_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(INSTALL_BUILD) -j$(JOBS)
	@rm -f $(INSTALL_BUILD)/java/wharf-*.jar $(INSTALL_BUILD)/java/wharf.jar
	@if [ "$(INSTALL_JAR)" = 0 ]; then echo "make install: INSTALL_JAR=0: the Java jar is not built"; \
	elif [ "$(INSTALL_JAR)" = 1 ] || (command -v javac >/dev/null && command -v swig >/dev/null); then bash java/build.sh $(abspath $(INSTALL_BUILD)); \
	else echo "make install: javac or swig not found: the Java jar is not built (install a JDK and SWIG for it)"; fi

# The release archive a user downloads: DIST_DIR/wharf-VERSION-linux-ARCH.tar.gz (and .sha256
# beside it) from the release build above, jar required (scripts/dist.sh says what is in it).
DIST_DIR ?= dist
dist:
	$(MAKE) release-build INSTALL_JAR=1
	bash scripts/dist.sh $(INSTALL_BUILD) $(DIST_DIR)

# What `make test` runs last (scripts/run-binding-tests.sh): the archive of the test build,
# unpacked and checked, and the five consumers built against it.
test-dist: build
	bash java/build.sh $(abspath $(BUILD))
	bash tests/consumers/dist_consumers.sh $(BUILD) .

clean:
	rm -rf $(BUILD) build-asan build-tsan build-tsa build-install gpu-bundle $(DIST_DIR)

# One language binding's tests against the built library (what `make test` runs for all three
# through scripts/run-binding-tests.sh): go/test.sh, rust/test.sh, java/test.sh BUILD_DIR.
test-go: build
	bash go/test.sh $(abspath $(BUILD))

test-rust: build
	bash rust/test.sh $(abspath $(BUILD))

test-java: build
	bash java/test.sh $(abspath $(BUILD))

# The Java binding's jar, $(BUILD)/java/wharf-VERSION.jar (plain javac and jar): the classes
# plus native/linux-x86_64/ libwharfjni.so and libwharf.so.1, extracted at first use.
jar: build
	bash java/build.sh $(abspath $(BUILD))

# The C-level checks only: C99 API, dlopen + exports, ABI baseline, the program built against
# the frozen 0.3.0 header (and that header's freshness until 0.3.0 ships), and the README's C
# example.
test-c: build
	cd $(BUILD) && ctest --output-on-failure -R 'c99_api|dlopen_symbols|abi_baseline|abi_old_header|abi_frozen_headers|readme_'
