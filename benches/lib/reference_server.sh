# shellcheck shell=bash
# Shared by the benches that drive a reference C server (sourced, not run).
#
# reference_programs DIR: puts the reference programs (benches/reference) in DIR: copies them
#   from $REF_DIR when it is set (prebuilt, e.g. for a machine without liburing's headers),
#   else builds them there with benches/reference/build.sh.
# start_reference_server NAME CPU DIR: starts DIR/NAME pinned to CPU on an ephemeral loopback
#   port, waits up to 5 s for its "listening on ADDR" line and sets $server_pid and $addr.
#   Exits 1 with the server's stderr when it does not start. The caller's EXIT trap stops it.
# Both expect $bench (the script's name, for messages) to be set.

reference_programs() {
    local dir=$1 here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    if [ -n "${REF_DIR:-}" ]; then
        local p
        for p in echo_epoll echo_client echo_lt_min echo_uring; do
            [ -x "$REF_DIR/$p" ] || { echo "${bench:-bench}: REF_DIR=$REF_DIR has no $p" >&2; exit 1; }
            cp "$REF_DIR/$p" "$dir/$p"
        done
    else
        "$here/reference/build.sh" "$dir" >/dev/null
    fi
}

start_reference_server() {
    local name=$1 cpu=$2 dir=$3
    taskset -c "$cpu" "$dir/$name" 0 >"$dir/server.out" 2>"$dir/server.err" &
    server_pid=$!
    addr=
    local _
    for _ in $(seq 50); do
        addr=$(sed -n 's/^listening on //p' "$dir/server.out")
        [ -n "$addr" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$addr" ] || { echo "${bench:-bench}: $name did not start:" >&2; cat "$dir/server.err" >&2; exit 1; }
}
