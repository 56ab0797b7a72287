#!/usr/bin/env bash
# Builds hello_zig into OUT_DIR/libhello_zig.so: toolhost_plugin.h translated into Zig next to
# a copy of the sources (this Zig has no @cImport), then `zig build-lib -dynamic`.
#   build.sh OUT_DIR [FLAG...]   (FLAGs go to `zig build-lib`: -DNAME=VALUE for json.c, ...)
# Zig: $ZIG, else `python3 -m ziglang` (the ziglang package; scripts/install-zig).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
out="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
if [[ -n "${ZIG:-}" ]]; then zig=("$ZIG"); else zig=(python3 -m ziglang); fi
src="$out/src"
mkdir -p "$src"
cp "$here/hello.zig" "$here/json.c" "$src/"
"${zig[@]}" translate-c -lc -I "$root/c-abi/include" "$root/c-abi/include/toolhost_plugin.h" \
    > "$src/toolhost_plugin.zig"
cd "$src"
"${zig[@]}" build-lib -dynamic -O ReleaseSafe -lc -I "$root/c-abi/include" -I "$root/plugins/c" \
    "$@" hello.zig json.c -femit-bin="$out/libhello_zig.so"
