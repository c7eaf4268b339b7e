#!/usr/bin/env bash
# Generates the typed clientset, listers and informers for api/v1.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=taskactions
out=internal/kube
hdr=hack/boilerplate.go.txt
rm -rf "$out/clientset" "$out/listers" "$out/informers"
go tool client-gen --go-header-file "$hdr" --clientset-name versioned --fake-clientset=false \
  --input-base "$mod" --input api/v1 \
  --output-dir "$out/clientset" --output-pkg "$mod/$out/clientset"
go tool lister-gen --go-header-file "$hdr" \
  --output-dir "$out/listers" --output-pkg "$mod/$out/listers" "$mod/api/v1"
go tool informer-gen --go-header-file "$hdr" \
  --versioned-clientset-package "$mod/$out/clientset/versioned" \
  --listers-package "$mod/$out/listers" \
  --output-dir "$out/informers" --output-pkg "$mod/$out/informers" "$mod/api/v1"
