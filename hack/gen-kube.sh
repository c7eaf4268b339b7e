#!/usr/bin/env bash
# Generates the typed clientset, listers and informers for api/v1 (flyte.org
# TaskAction), api/kargo/v1alpha1 (kargo.akuity.io: Stage, ...) and
# api/rollouts/v1alpha1 (argoproj.io: AnalysisTemplate, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=taskactions
out=internal/kube
hdr=hack/boilerplate.go.txt
apis=(api/v1 api/kargo/v1alpha1 api/rollouts/v1alpha1)
rm -rf "$out/clientset" "$out/listers" "$out/informers"
inputs=()
for a in "${apis[@]}"; do inputs+=(--input "$a"); done
pkgs=()
for a in "${apis[@]}"; do pkgs+=("$mod/$a"); done
go tool client-gen --go-header-file "$hdr" --clientset-name versioned --fake-clientset=false \
  --input-base "$mod" "${inputs[@]}" \
  --output-dir "$out/clientset" --output-pkg "$mod/$out/clientset"
go tool lister-gen --go-header-file "$hdr" \
  --output-dir "$out/listers" --output-pkg "$mod/$out/listers" "${pkgs[@]}"
go tool informer-gen --go-header-file "$hdr" \
  --versioned-clientset-package "$mod/$out/clientset/versioned" \
  --listers-package "$mod/$out/listers" \
  --output-dir "$out/informers" --output-pkg "$mod/$out/informers" "${pkgs[@]}"
