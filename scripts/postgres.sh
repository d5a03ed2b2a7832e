#!/usr/bin/env bash
# Print the base URL of a Postgres server that lexhive can create databases on (no database
# name), starting a private one when none is reachable:
#   1. $LEXHIVE_PG if set;
#   2. a server on 127.0.0.1:5432 that lets user `postgres` in without a password;
#   3. a private cluster in .pg/ (initdb, trust auth, port 5433), installing Debian's
#      `postgresql` package first if its binaries are missing and we may use apt.
# LEXHIVE_PG_PRIVATE=1 skips step 2.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "$*" >&2; }

if [[ -n "${LEXHIVE_PG:-}" ]]; then echo "$LEXHIVE_PG"; exit 0; fi

if [[ -z "${LEXHIVE_PG_PRIVATE:-}" ]] && command -v psql >/dev/null && psql "postgres://postgres@127.0.0.1:5432/postgres" -Atqc 'SELECT 1' >/dev/null 2>&1; then
    echo "postgres://postgres@127.0.0.1:5432"
    exit 0
fi

bindir=""
for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/initdb" ]] && bindir="$d"; done
if [[ -z "$bindir" ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        say "no Postgres found: installing Debian's postgresql package"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
        for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/initdb" ]] && bindir="$d"; done
    fi
fi
if [[ -z "$bindir" ]]; then
    say "error: no Postgres server reachable at 127.0.0.1:5432 and no initdb to start one."
    say "Install one (Debian/Ubuntu: sudo apt-get install postgresql; macOS: brew install postgresql)"
    say "or point LEXHIVE_PG at a server, e.g. LEXHIVE_PG=postgres://user:pass@host:5432"
    exit 1
fi

data="$PWD/.pg/data"
port=5433
run() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [[ ! -f "$data/PG_VERSION" ]]; then
    say "starting a private Postgres cluster in .pg/ on port $port"
    mkdir -p "$data"
    [[ $(id -u) -eq 0 ]] && chown -R postgres "$PWD/.pg"
    run "$bindir/initdb" -D "$data" -U postgres -A trust >/dev/null
fi
if ! run "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    run "$bindir/pg_ctl" -D "$data" -o "-p $port -k /tmp -c listen_addresses=127.0.0.1" -l "$PWD/.pg/log" -w start >/dev/null
fi
echo "postgres://postgres@127.0.0.1:$port"
