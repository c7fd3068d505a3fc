#!/usr/bin/env bash
# Fuzzes the REST API with Schemathesis (bench/fuzz.ts starts the app; docs/fuzzing.md).
# Schemathesis lives in a virtualenv outside the checkout, made on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=4.32.5 # pinned: a new release may add checks, and a run should mean the same thing each time
VENV="${FLEET_CACHE:-$HOME/.cache/fleet-config}/schemathesis"
if [ ! -x "$VENV/bin/st" ] || ! "$VENV/bin/st" --version | grep -q "$VERSION"; then
  echo "installing schemathesis $VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "schemathesis==$VERSION"
fi

# The machine is shared with benchmarks: wait while one measures.
while [ -e /tmp/fleet-bench.lock ]; do sleep 15; done

SCHEMATHESIS="$VENV/bin/st" exec node --import tsx bench/fuzz.ts "$@"
