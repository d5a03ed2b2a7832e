#!/usr/bin/env bash
# An S3-compatible object store for the log store's end-to-end test (tests/s3.rs): moto's
# server, installed from PyPI into .s3-venv with pinned versions (scripts/s3-requirements.txt;
# ~30 s the first time). Prints the `moto_server` path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.s3-venv
if [[ ! -x "$venv/bin/moto_server" ]] || ! cmp -s scripts/s3-requirements.txt "$venv/requirements.txt"; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/s3-requirements.txt >&2
    cp scripts/s3-requirements.txt "$venv/requirements.txt"
fi
echo "$PWD/$venv/bin/moto_server"
