# The README's two commands: `make run` and `make test`. Both install what is missing first.
BUILD_DIR := build
PRESET    := default
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian 12 packages Warpline needs to build, test and run (the CUDA toolkit comes separately).
DEB_PACKAGES := cmake ninja-build g++ pkg-config libsqlite3-dev sqlite3 qt6-base-dev qt6-base-dev-tools \
                libgl-dev xvfb xauth clang-format \
                dpkg-dev help2man librsvg2-bin desktop-file-utils appstream shared-mime-info \
                libglib2.0-bin xz-utils
# PyTorch profiler traces: simdjson parses their JSON, zlib reads .json.gz.
DEB_PACKAGES += libsimdjson-dev zlib1g-dev
# Remote recording: the ssh client it runs, and a real sshd for tst_remote_record.
DEB_PACKAGES += openssh-client openssh-server
MISSING = $(shell dpkg-query -W -f='$${Package} $${Status}\n' $(DEB_PACKAGES) 2>/dev/null \
            | awk '$$4 == "installed" {print $$1}' | sort > .deps-have; \
            printf '%s\n' $(DEB_PACKAGES) | sort | comm -23 - .deps-have; rm -f .deps-have)

.PHONY: all deps configure build test package run asan nocuda fuzz mutation format clean

all: build

deps:
	@missing="$(MISSING)"; if [ -n "$$missing" ]; then \
	  echo "Installing missing packages: $$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	else echo "All Debian packages present."; fi

$(BUILD_DIR)/build.ninja: CMakeLists.txt CMakePresets.json
	cmake --preset $(PRESET)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) --parallel

# The .deb first (about 5 s after a build) so that tst_package checks the current one.
test: package
	cd $(BUILD_DIR) && QT_QPA_PLATFORM=offscreen ctest --output-on-failure --parallel 2

# build/warpline_<version>_<arch>.deb; install it with `sudo apt install ./build/warpline_*.deb`.
package: build
	cmake --build $(BUILD_DIR) --target package

run: build
	$(BUILD_DIR)/app/warpline

asan: deps
	cmake --preset asan && cmake --build build-asan --parallel && \
	cd build-asan && QT_QPA_PLATFORM=offscreen ctest --output-on-failure --parallel 2

# What a machine without the CUDA toolkit builds and tests (the README's promise), on one that has
# it: the toolkit is not looked for; the tests that need it are listed by ctest as Skipped.
nocuda: deps
	cmake --preset nocuda && cmake --build build-nocuda --parallel && \
	cmake --build build-nocuda --target package && \
	cd build-nocuda && QT_QPA_PLATFORM=offscreen ctest --output-on-failure --parallel 2

# The libFuzzer targets (clang-14 and libclang-rt-14-dev) and a replay of every input that once
# found a bug (tests/fuzz/regressions). To fuzz for a while: tests/fuzz/run.sh TARGET SECONDS.
fuzz: deps
	@command -v clang++-14 >/dev/null || { echo "make fuzz needs clang-14 and libclang-rt-14-dev"; exit 1; }
	cmake --preset fuzz && cmake --build build-fuzz --parallel --target fuzz_trace fuzz_trace_sql fuzz_pagereader && \
	cd build-fuzz && ctest --output-on-failure

# The mutation check (issue 33): each deliberate bug of tests/mutation/mutations.txt applied alone,
# built and tested; the report says which ones no test caught (build/mutation-report.md). About 1.5
# hours on the 2-core machine, so not in .ci/run. One mutant: tests/mutation/run.py --only ID.
mutation: build
	tests/mutation/run.py --build-dir $(BUILD_DIR)

format:
	git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) build-asan build-nocuda build-fuzz
