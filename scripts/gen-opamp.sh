#!/usr/bin/env bash
# Regenerates the OpAMP TypeScript (gateway/gen/*_pb.ts) from gateway/proto with buf
# and the local protoc-gen-es plugin. Offline; the output is committed and this script
# must reproduce it byte for byte (check with `git diff --exit-code gateway/gen`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$root/node_modules/.bin:$PATH"

cd "$root/gateway"
rm -f gen/*_pb.ts
buf generate
echo "generated: $(ls gen/*_pb.ts | tr '\n' ' ')"
