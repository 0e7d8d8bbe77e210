#!/bin/sh
# Builds the plain-C reference for ringside's micro suite.
#
#   benches/reference/build.sh [OUT_DIR]     (default: target/reference, relative to the repo)
#
# Produces OUT_DIR/micro_ref, OUT_DIR/fd_table, the echo reference servers OUT_DIR/echo_epoll, OUT_DIR/echo_uring,
# OUT_DIR/echo_lt_min, OUT_DIR/echo_uring_min and OUT_DIR/echo_uring_min_defer, and the echo load
# client OUT_DIR/echo_client.
# Installs nothing: needs gcc and liburing's headers and library (Debian/Ubuntu package
# liburing-dev; Fedora liburing-devel).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out_dir=${1:-"$repo/target/reference"}
CC=${CC:-gcc}

if ! command -v "$CC" >/dev/null 2>&1; then
    echo "build.sh: C compiler '$CC' not found (install gcc, or set CC)" >&2
    exit 1
fi
if ! printf '#include <liburing.h>\n' | "$CC" -E -x c - >/dev/null 2>&1; then
    echo "build.sh: liburing.h not found: install the liburing development package" >&2
    echo "          (Debian/Ubuntu: apt-get install liburing-dev; Fedora: dnf install liburing-devel)" >&2
    exit 1
fi

mkdir -p "$out_dir"
OUT="$out_dir/micro_ref"
"$CC" -O2 -Wall -o "$OUT" "$here/micro_ref.c" -luring
echo "$OUT"

# What a shared fd table costs a pipe loop (README.md, "Holding ringside to it"): libc only.
"$CC" -O2 -Wall -pthread -o "$out_dir/fd_table" "$here/fd_table.c"
echo "$out_dir/fd_table"

# The echo suite's C reference servers (see README.md, "Echo reference servers").
"$CC" -O2 -Wall -o "$out_dir/echo_epoll" "$here/echo_epoll.c"
echo "$out_dir/echo_epoll"
# The load generator's C reference client (README.md, "Echo reference load client"): libc only.
"$CC" -O2 -Wall -o "$out_dir/echo_client" "$here/echo_client.c"
echo "$out_dir/echo_client"
"$CC" -O2 -Wall -o "$out_dir/echo_uring" "$here/echo_uring.c" -luring
echo "$out_dir/echo_uring"
"$CC" -O2 -Wall -o "$out_dir/echo_lt_min" "$here/echo_lt_min.c"
echo "$out_dir/echo_lt_min"
"$CC" -O2 -Wall -o "$out_dir/echo_uring_min" "$here/echo_uring_min.c" -luring
echo "$out_dir/echo_uring_min"
"$CC" -O2 -Wall -DRING_FLAGS='IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN' \
    -o "$out_dir/echo_uring_min_defer" "$here/echo_uring_min.c" -luring
echo "$out_dir/echo_uring_min_defer"
