#!/usr/bin/env bash
# Contract check: schemathesis, every check, against a running tollbooth and its own
# /openapi.json, signed in as a fresh user so the Bearer routes are exercised past the 401.
# Exits non-zero on any finding (a 5xx, a status or body the document does not declare, a
# schema-valid request refused, a schema-invalid one accepted, a method without 405 + Allow...).
#
#   scripts/contract-check.sh http://127.0.0.1:3000
#   CONTRACT_SECONDS=120 SCHEMATHESIS=/path/to/venv/bin/schemathesis scripts/contract-check.sh http://127.0.0.1:3911
#
# SCHEMATHESIS: the schemathesis command; when unset, the pinned version is installed into a
# throwaway virtualenv (python3 -m venv) under a temporary directory. CONTRACT_SECONDS (60):
# the time budget (fuzzing repeats until it is spent, so the run lasts at least that long).
# Extra arguments go to `schemathesis run` (e.g. --seed N to replay a run). It registers one
# user and sends a few thousand requests: point it only at a service you own.
set -euo pipefail

schemathesis_version="4.32.5"
base_url="${1:?usage: scripts/contract-check.sh BASE_URL [schemathesis run options]}"
shift
base_url="${base_url%/}"
seconds="${CONTRACT_SECONDS:-60}"

work_dir=""
cleanup () { if [ -n "$work_dir" ]; then rm -rf "$work_dir"; fi; }
trap cleanup EXIT

schemathesis="${SCHEMATHESIS:-}"
if [ -z "$schemathesis" ]; then
  work_dir="$(mktemp -d /tmp/tollbooth-contract.XXXXXX)"
  echo "== installing schemathesis $schemathesis_version into $work_dir/venv"
  python3 -m venv "$work_dir/venv"
  "$work_dir/venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$schemathesis_version"
  schemathesis="$work_dir/venv/bin/schemathesis"
fi
"$schemathesis" --version

# A user of its own, so each run starts signed in whatever the database already holds.
token="$(node --input-type=module -e '
  const [baseUrl] = process.argv.slice(1)
  const email = `contract-${Date.now()}-${process.pid}@example.com`
  const response = await fetch(`${baseUrl}/api/v1/auth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "contract-check-password", name: "Contract check" }),
  })
  const body = await response.json()
  if (response.status !== 201) { console.error(`register: ${response.status} ${JSON.stringify(body)}`); process.exit(1) }
  console.log(body.accessToken)
' "$base_url")"

# Signing out everywhere ends the session of the token the other operations use, so every
# Bearer route would answer only 401 from then on: it gets a run of its own, last.
session_ender="POST /api/v1/auth/logout-all"
status=0
run_schemathesis () {
  local budget="$1"
  shift
  # --max-time bounds the generation; timeout bounds everything else (a hung request, shrinking).
  timeout --kill-after=10 "$(( budget + 180 ))" "$schemathesis" --config-file "$(dirname "$0")/schemathesis.toml" run "$base_url/openapi.json" \
    --checks all \
    --max-time "$budget" \
    --max-response-time 10 \
    --header "Authorization: Bearer $token" \
    --no-color \
    "$@" || status=$?
}

echo "== schemathesis: all checks for ${seconds} s against $base_url/openapi.json (all operations but $session_ender)"
started=$(date +%s)
run_schemathesis "$seconds" --exclude-name "$session_ender" "$@"
echo "== schemathesis: all checks for 10 s on $session_ender"
run_schemathesis 10 --include-name "$session_ender" "$@"
echo "== schemathesis ran for $(( $(date +%s) - started )) s and exited with $status"
exit "$status"
