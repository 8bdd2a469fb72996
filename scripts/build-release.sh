#!/usr/bin/env bash
# Builds Herald for production: installs exactly what the lockfile says,
# compiles @herald/verify and the server to JavaScript, builds the control
# panel, removes the dev dependencies (TypeScript, tsx, Vite, the test tools),
# then gathers what runs into release/: the built packages and the production
# node_modules, no sources. It runs with plain node:
#
#   release/node_modules/.bin/herald start
#
# The Dockerfile's build stage runs this script and its runtime stage copies
# release/; packages/server/test/production-install.test.ts runs it on a copy
# of the repository and starts release/, so the image is what the test runs.
#
# --ignore-scripts: the root "prepare" script would build during the install,
# and the build below does it anyway; it also keeps the dependencies' install
# scripts out of the build. npm settings such as prefer-offline can be given
# as npm_config_* environment variables.
set -euo pipefail
cd "$(dirname "$0")/.."

npm ci --ignore-scripts --no-audit --no-fund
npm run build
npm prune --omit=dev --ignore-scripts --no-audit --no-fund

rm -rf release
mkdir -p release/packages/verify release/packages/panel release/packages/server
cp -a package.json LICENSE node_modules release/
rm -rf release/node_modules/.cache
for pkg in verify panel server; do
  cp -a "packages/$pkg/package.json" "release/packages/$pkg/"
  # Dependencies npm could not hoist to the root sit in the package's own node_modules.
  if [ -d "packages/$pkg/node_modules" ]; then cp -a "packages/$pkg/node_modules" "release/packages/$pkg/"; fi
done
cp -a packages/verify/dist release/packages/verify/
cp -a packages/panel/index.js packages/panel/dist release/packages/panel/
cp -a packages/server/bin packages/server/dist release/packages/server/
echo "herald: built into release/ (start it with release/node_modules/.bin/herald start)"
