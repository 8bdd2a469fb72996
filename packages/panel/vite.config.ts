import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

/**
 * The panel is served by Herald itself (packages/server/src/http/panel.ts)
 * under a strict Content-Security-Policy: every asset is a file in dist/,
 * nothing is inlined as a data: URL and nothing is fetched from another origin.
 */
export default defineConfig({
  plugins: [preact()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
  },
  // `npm run dev -w @herald/panel` next to a running Herald on the default port:
  // the dev server forwards the API, so the session cookie stays same-origin.
  server: { proxy: { '/v1': 'http://127.0.0.1:8080', '/healthz': 'http://127.0.0.1:8080' } },
});
