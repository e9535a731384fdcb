# syntax=docker/dockerfile:1
# The Vouch service image. It is built from the same artifacts as the pack-and-run smoke test
# (test/pack-and-run.test.ts): scripts/pack-workspaces.mjs packs every workspace and writes a
# project that depends on the tarballs, and `npm ci --offline` installs that project from the
# npm cache the first `npm ci` filled. test/container.test.ts keeps the two in step.

# 1. Pack: build and pack the workspaces, then install the tarballs (runtime dependencies only).
FROM node:20-bookworm-slim AS pack
WORKDIR /src
COPY . .
RUN npm ci --no-audit --no-fund \
 && node scripts/pack-workspaces.mjs /app \
 && cd /app \
 && npm ci --offline --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -f /app/*.tgz

# 2. Run: only the installed packages, owned by root and run by an unprivileged user, so the
# root filesystem can be mounted read-only; PGlite data (when DATABASE_URL is unset) goes to
# the /data volume.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    VOUCH_DATA_DIR=/data
WORKDIR /app
COPY --from=pack /app /app
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/readyz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/node_modules/@vouch/api/bin/vouch.js"]
CMD ["serve"]
