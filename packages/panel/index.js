import { fileURLToPath } from 'node:url';

/**
 * The folder of the built panel (`npm run build -w @herald/panel` writes it).
 * Herald's composition root passes it to the HTTP app, which serves it at `/`.
 */
export const panelDistDir = fileURLToPath(new URL('./dist/', import.meta.url));
