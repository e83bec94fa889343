#!/usr/bin/env bash
# The crowd of cheap requests at 1.5 times capacity, sent from Go (main.go) instead of the lab:
# a service started here on its embedded PostgreSQL, 50 accounts and their tokens, then the
# closed-loop capacity C (64 users, 15 s), the open crowd at 1.5 C (3 s ramp, 22 s held), and C
# again. Prints each step's JSON and one line of ratios. Needs Go; run from anywhere, after
# `npm run build`, with nothing else running (bench/README, "Before you measure").
# CROWD_RATE=N sends the crowd at N arrivals a second instead of 1.5 C (e.g. 1.5 times the
# lab's own measure of C, which its generator reads higher than this one's closed loop).
# CROWD_CONNECTIONS=N: the crowd's keep-alive connections (256; more than the service's cap on
# requests in flight, or the cap never refuses and the excess waits in the generator).
# CROWD_CLIENT=net sends with net/http's client instead of the raw one (raw.go), at about twice
# the generator's CPU a request.
#
#   packages/service/bench/go-crowd/crowd.sh [rounds]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
service_root="$(cd "$here/../.." && pwd)"
rounds="${1:-1}"
work="$(mktemp -d)"
chmod 777 "$work"
port="${CROWD_PORT:-3913}"
base="http://127.0.0.1:$port"

(cd "$here" && go build -o "$work/go-crowd" .)

# The lab's services log at info too.
TOLLBOOTH_DATA_DIR="$work/data" PORT="$port" HOST=127.0.0.1 TOLLBOOTH_LOG_LEVEL=info \
  node "$service_root/bin/tollbooth.js" serve > "$work/service.log" 2>&1 &
service_pid=$!
trap 'kill -TERM $service_pid 2>/dev/null; wait $service_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 120); do curl -sf "$base/readyz" > /dev/null && break; sleep 1; done
curl -sf "$base/readyz" > /dev/null || { echo "crowd.sh: the service did not get ready; its log: $work/service.log" >&2; exit 1; }

# 50 accounts, as the lab's me-crowd scenario: one token each.
BASE="$base" node --input-type=module -e '
  const tokens = []
  for (let i = 0; i < 50; i++) {
    const account = { email: `go.crowd.${i}@tollbooth.test`, password: `tollbooth go crowd ${i}` }
    const post = (path) => fetch(process.env.BASE + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(account) })
    const registered = await post("/api/v1/auth/register")
    if (!registered.ok) throw new Error(`register: ${registered.status} ${await registered.text()}`)
    const login = await post("/api/v1/auth/login")
    if (!login.ok) throw new Error(`login: ${login.status} ${await login.text()}`)
    tokens.push((await login.json()).accessToken)
  }
  process.stdout.write(tokens.join("\n") + "\n")
' > "$work/tokens.txt"

# CPU ticks so far, "all busy service postgresql": the machine's (/proc/stat: user to steal, and
# all but idle and iowait), the service's (its process, every thread, the children it has reaped,
# and with TOLLBOOTH_WORKERS its cluster's live workers), and PostgreSQL's (the postmaster the
# service started, the backends it has reaped, and its live ones). Over the crowd's whole run, its
# ramp and drain included.
ticks_of () { awk -v with_reaped="$2" '{print $14 + $15 + (with_reaped ? $16 + $17 : 0)}' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_ticks () {
  local all busy service pg=0 postmaster pid
  read -r all busy < <(awk '/^cpu /{t=0; for (i=2;i<=9;i++) t+=$i; print t, t-$5-$6}' /proc/stat)
  service="$(ticks_of "$service_pid" 1)"
  for pid in $(pgrep -P "$service_pid" -x node || true); do service=$((service + $(ticks_of "$pid" 0))); done
  postmaster="$(pgrep -P "$service_pid" -x postgres | head -1 || true)"
  if [ -n "$postmaster" ]; then
    pg="$(ticks_of "$postmaster" 1)"
    for pid in $(pgrep -P "$postmaster" || true); do pg=$((pg + $(ticks_of "$pid" 0))); done
  fi
  echo "$all $busy $service $pg"
}

field () { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }

echo '| round | C before | crowd offered | served | C after | served / C before | / C after | 503s | p99 | `/healthz` p99 | not sent, timeouts, connection errors | cores busy in the crowd: all, service, PostgreSQL, generator |'
echo '|---|---|---|---|---|---|---|---|---|---|---|---|'
for round in $(seq "$rounds"); do
  "$work/go-crowd" -client "${CROWD_CLIENT:-raw}" -url "$base" -tokens "$work/tokens.txt" -mode closed -vus 64 -duration 15s > "$work/before.json"
  before="$(field servedPerSecond < "$work/before.json")"
  rate="${CROWD_RATE:-$(node -e 'console.log(Math.round(process.argv[1] * 1.5))' "$before")}"
  curl -sf "$base/metrics" > "$work/metrics-before.txt"
  cpu_ticks > "$work/cpu-before.txt"
  "$work/go-crowd" -client "${CROWD_CLIENT:-raw}" -url "$base" -tokens "$work/tokens.txt" -mode open -connections "${CROWD_CONNECTIONS:-256}" -rate "$rate" -ramp 3s -duration 22s > "$work/crowd.json"
  cpu_ticks > "$work/cpu-after.txt"
  curl -sf "$base/metrics" > "$work/metrics-after.txt"
  # The service's side of the crowd, to stderr: refusals by reason and the process's CPU, before and after.
  grep -hE '^(tollbooth_requests_shed_total|process_cpu_seconds_total|nodejs_eventloop_lag_p99_seconds)' "$work/metrics-before.txt" "$work/metrics-after.txt" >&2 || true
  "$work/go-crowd" -client "${CROWD_CLIENT:-raw}" -url "$base" -tokens "$work/tokens.txt" -mode closed -vus 64 -duration 15s > "$work/after.json"
  cat "$work/before.json" "$work/crowd.json" "$work/after.json" >&2
  ROUND="$round" CORES="$(grep -c '^cpu[0-9]' /proc/stat)" CPU_BEFORE="$(cat "$work/cpu-before.txt")" CPU_AFTER="$(cat "$work/cpu-after.txt")" node -e '
    const fs = require("node:fs")
    const [before, crowd, after] = process.argv.slice(1).map((file) => JSON.parse(fs.readFileSync(file, "utf8")))
    const r = (x) => x.toFixed(3)
    const [all, ...parts] = process.env.CPU_AFTER.split(" ").map((after, i) => Number(after) - Number(process.env.CPU_BEFORE.split(" ")[i]))
    const cores = parts.map((ticks) => (ticks / all * Number(process.env.CORES)).toFixed(2))
    console.log(`| ${process.env.ROUND} | ${before.servedPerSecond} /s | ${crowd.offeredPerSecond} /s | ${crowd.servedPerSecond} /s | ${after.servedPerSecond} /s | ${r(crowd.servedPerSecond / before.servedPerSecond)} | ${r(crowd.servedPerSecond / after.servedPerSecond)} | ${crowd.byStatus["503"] ?? 0} | ${crowd.latency.p99Ms} ms | ${crowd.healthz.p99Ms} ms | ${crowd.notSent}, ${crowd.timeouts}, ${crowd.connectionErrors} | ${cores.join(", ")}, ${crowd.generatorCores} |`)
  ' "$work/before.json" "$work/crowd.json" "$work/after.json"
done
