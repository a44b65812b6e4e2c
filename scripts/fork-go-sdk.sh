#!/usr/bin/env bash
# Rebuilds third_party/go-sdk: the MCP go-sdk at the version below with
# third_party/go-sdk.patch applied (go.mod replaces the module with it).
# Only the packages the module builds from are kept, without tests, docs
# or examples. Run it after changing the version or the patch; drop the
# fork (and the replace in go.mod) once upstream decodes without a
# Decoder per message and answers a stateless request's one call without
# a Reader, a queue and a stream (each change is described in the patch).
set -euo pipefail
cd "$(dirname "$0")/.."
version=v1.8.0
src=$(go mod download -json "github.com/modelcontextprotocol/go-sdk@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "go-sdk $version not in the module cache" >&2; exit 1; }
dst=third_party/go-sdk
rm -rf "$dst"
mkdir -p "$dst"
cp "$src/LICENSE" "$src/go.mod" "$src/go.sum" "$dst/"
for pkg in auth internal/authutil internal/json internal/jsonrpc2 internal/mcpgodebug internal/util internal/xcontext jsonrpc mcp oauthex; do
	mkdir -p "$dst/$pkg"
	find "$src/$pkg" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$dst/$pkg/" \;
done
chmod -R u+w "$dst"
patch -s -d "$dst" -p1 < third_party/go-sdk.patch
echo "github.com/modelcontextprotocol/go-sdk $version + third_party/go-sdk.patch" > "$dst/VERSION"
(cd "$dst" && go build ./...)
