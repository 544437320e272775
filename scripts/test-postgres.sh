#!/usr/bin/env bash
# Starts the tests' own PostgreSQL (the machine's Debian binaries) on 127.0.0.1:5439 with its data
# on tmpfs, unless it already answers; test/helpers/db.ts makes its databases there first.
#
# Why not the machine's server: every test file copies a 1,200-file template database and drops
# it afterwards, and on the machine's ext4 (no journal) a file created soon after many were deleted
# is allocated only after the kernel has skipped each recently deleted inode (`recently_deleted` in
# perf: kernel time of the backend). The suite's own drops made each copy cost 1.3 s of
# PostgreSQL CPU and 1.5–2 s of wall on a busy run; on tmpfs a copy takes 40–120 ms. Nothing
# here outlives a reboot, and nothing needs to: fsync and full-page writes are off, the template
# is rebuilt in about a second when missing.
#
# Prints nothing when all is well; on any failure it says so and exits 0: the tests then use the
# machine's server as before.
set -u
PORT=5439
DIR=/dev/shm/svc-test-postgres
pg_isready -q -h 127.0.0.1 -p "$PORT" 2>/dev/null && exit 0
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ] || [ ! -d /dev/shm ]; then exit 0; fi
# initdb and postgres refuse root: as root the cluster belongs to the postgres user.
run() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
fail() {
  echo "test PostgreSQL on port $PORT not started ($1); the tests use 127.0.0.1:5432" >&2
  exit 0
}
if [ ! -s "$DIR/data/PG_VERSION" ] || [ "$(cat "$DIR/data/PG_VERSION")" != "$(basename "$(dirname "$BIN")")" ]; then
  rm -rf "$DIR"
  mkdir -p "$DIR" || fail "cannot make $DIR"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$DIR" || fail "no postgres user"; fi
  run "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >"$DIR/initdb.log" 2>&1 ||
    fail "initdb failed: $(tail -3 "$DIR/initdb.log")"
fi
# As the machine's server (conf.d/90-ci.conf: autovacuum off), plus what a disposable cluster in
# memory allows: no fsync, no full-page images, minimal WAL kept small.
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 -o "-c port=$PORT -c listen_addresses=127.0.0.1 \
  -c unix_socket_directories=$DIR -c max_connections=200 -c shared_buffers=128MB -c autovacuum=off \
  -c fsync=off -c full_page_writes=off -c wal_level=minimal -c max_wal_senders=0 \
  -c max_wal_size=256MB -c min_wal_size=32MB" start >/dev/null 2>&1 ||
  fail "pg_ctl start failed: $(tail -3 "$DIR/server.log" 2>/dev/null)"
exit 0
