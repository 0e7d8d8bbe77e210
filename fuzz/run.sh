#!/usr/bin/env bash
# Fuzzes the HTTP request parser and response reader for SECONDS each (libFuzzer through
# cargo-fuzz). Exit 0: no crash. Non-zero: a crash (the input is saved under
# fuzz/artifacts/<target>/) or a build failure. Where cargo-fuzz cannot be installed or there is
# no C++ compiler for libFuzzer, prints "skipped: <why>" and exits 0 for a developer; with
# RINGSIDE_REQUIRE_TOOLS set (.ci/run sets it) that is an error and exits 1 instead, so CI
# never passes a fuzz run that did not happen.
#
# `fuzz/run.sh --build` only builds the targets (installing cargo-fuzz if need be), the same
# way a run does, and exits: a later `fuzz/run.sh SECONDS` finds them built and only fuzzes
# (.ci/run builds them in the background, on idle CPU, while the tests run).
#
# Works with only a stable toolchain: cargo-fuzz needs nightly flags (-Z, sancov passes), so
# without a nightly toolchain the build runs on stable with RUSTC_BOOTSTRAP=1 and without a
# sanitizer (--sanitizer none: libFuzzer still guides by coverage and catches panics, which
# is what safe Rust fails with). With nightly installed, AddressSanitizer is used too
# (FUZZ_NIGHTLY=0 forces the stable path).
set -uo pipefail

secs=${1:-}
build_only=0
if [ "$secs" = --build ]; then
    build_only=1
elif ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
    echo "usage: fuzz/run.sh SECONDS (whole seconds per target, >= 1) | fuzz/run.sh --build" >&2
    exit 2
fi
cd "$(dirname "$0")" || exit 1
targets=(http_request http_response)

# Cannot fuzz here: "skipped" and exit 0, or an error under RINGSIDE_REQUIRE_TOOLS.
skip() {
    if [ -n "${RINGSIDE_REQUIRE_TOOLS:-}" ]; then
        echo "error: $1 (RINGSIDE_REQUIRE_TOOLS is set)" >&2
        exit 1
    fi
    echo "skipped: $1"
    exit 0
}

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz..."
    if ! cargo install cargo-fuzz --locked; then
        skip "cargo-fuzz could not be installed (cargo install cargo-fuzz failed)"
    fi
fi
if ! command -v c++ >/dev/null 2>&1 && ! command -v clang++ >/dev/null 2>&1; then
    skip "no C++ compiler to build libFuzzer (install g++ or clang)"
fi

toolchain=()
sanitizer=none
if [ "${FUZZ_NIGHTLY:-1}" != 0 ] && rustup run nightly rustc --version >/dev/null 2>&1; then
    toolchain=(+nightly)
    sanitizer=address
else
    export RUSTC_BOOTSTRAP=1
fi
if [ "$build_only" = 1 ]; then
    echo "building the fuzz targets with $(rustc "${toolchain[@]}" --version), sanitizer $sanitizer"
else
    echo "fuzzing with $(rustc "${toolchain[@]}" --version), sanitizer $sanitizer, ${secs} s per target"
fi

for t in "${targets[@]}"; do
    if ! cargo "${toolchain[@]}" fuzz build --release --sanitizer "$sanitizer" "$t"; then
        echo "error: building fuzz target $t failed" >&2
        exit 1
    fi
done
[ "$build_only" = 1 ] && exit 0
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t: ${secs} s"
    if ! cargo "${toolchain[@]}" fuzz run --release --sanitizer "$sanitizer" "$t" \
        "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -print_final_stats=1; then
        echo "error: fuzz target $t crashed; the input is under fuzz/artifacts/$t/" >&2
        status=1
    fi
done
exit $status
