import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version in the server package's package.json, found by walking up from
 * this file: it is two folders up from src/cli/ and from a built dist/cli/
 * alike, and no build step has to copy it.
 */
export function heraldVersion(from: string = import.meta.url): string {
  for (let dir = dirname(fileURLToPath(from)); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@herald/server' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* no package.json here: look further up */
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}
