# Herald's container image: the built server on the embedded database by
# default (data in the /var/lib/herald volume), or PostgreSQL with
# DATABASE_URL and HERALD_ENCRYPTION_KEY set.
#
#   docker build -t herald .
#   docker run -p 8080:8080 -v herald-data:/var/lib/herald herald

# Build stage: scripts/build-release.sh installs from the lockfile, builds
# verify, server and panel, and prunes the dev dependencies. The production
# install test runs the same script, so this is the build the tests check.
FROM node:20-bookworm-slim AS build
WORKDIR /herald
COPY . .
RUN bash scripts/build-release.sh

# Runtime stage: release/ only, the built packages and the production
# node_modules (no sources, no TypeScript, no dev dependencies), owned by root
# and read-only to Herald.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HERALD_HOST=0.0.0.0 \
    HERALD_PORT=8080 \
    HERALD_DATA_DIR=/var/lib/herald
COPY --from=build /herald/release /herald

# The node image's unprivileged user (uid 1000) owns the data directory and
# nothing else.
RUN mkdir -p /var/lib/herald && chown node:node /var/lib/herald && chmod 700 /var/lib/herald
USER node
VOLUME /var/lib/herald
EXPOSE 8080

# /readyz: 200 when the database answers, takes writes and has this Herald's
# schema. The slim image has no curl; node does the request.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HERALD_PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

ENTRYPOINT ["/herald/node_modules/.bin/herald"]
CMD ["start"]
