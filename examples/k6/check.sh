#!/usr/bin/env bash
# Smoke run of the k6 scripts against a running tollbooth (the login storm with polite and with
# naive clients, the DevNest mix, the stress mix): a few VUs for a few seconds, with the scripts'
# own thresholds. Exits non-zero when a threshold fails (k6 exits 99), the service cannot be
# reached, or k6 itself fails. Every run goes ahead even when one before it failed.
#
#   BASE_URL=http://127.0.0.1:3911 examples/k6/check.sh
#   K6=/root/go/bin/k6 BASE_URL=... examples/k6/check.sh
#
# BASE_URL defaults to http://127.0.0.1:3000; K6 to `k6` on PATH. SMOKE_VUS (5), SMOKE_RAMP
# (3s), SMOKE_HOLD (7s) and SMOKE_DURATION (10s, stress.js) size the runs. Load only a service
# you own.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k6="${K6:-k6}"
export BASE_URL="${BASE_URL:-http://127.0.0.1:3000}"

if ! command -v "$k6" >/dev/null 2>&1; then
  echo "check.sh: k6 not found at '$k6' (set K6, or: go install go.k6.io/k6@v1.8.1)" >&2
  exit 2
fi

smoke=(
  --quiet
  -e "VUS=${SMOKE_VUS:-5}"
  -e "RAMP=${SMOKE_RAMP:-3s}"
  -e "HOLD=${SMOKE_HOLD:-7s}"
  -e "DURATION=${SMOKE_DURATION:-10s}"
  -e "ACCOUNTS=${SMOKE_VUS:-5}"
)

status=0
# The login storm twice: clients that wait out Retry-After, and clients that retry a 503 at once.
for run in "login-storm.js ON_503=wait" "login-storm.js ON_503=retry" "devnest.js ON_503=wait" "stress.js ON_503=wait"; do
  script="${run%% *}"
  on503="${run#* }"
  echo "== $script ($on503) against $BASE_URL"
  "$k6" run "${smoke[@]}" -e "$on503" "$here/$script"
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "check.sh: $script ($on503) failed (k6 exit $code; 99 means a threshold failed)" >&2
    status=1
  fi
done
exit "$status"
