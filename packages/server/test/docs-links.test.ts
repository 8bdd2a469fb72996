import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Every relative link in the repository's Markdown (README.md, docs/,
 * the packages' READMEs, BENCHMARKS.md, …) points to a file or folder that
 * exists, and a `#fragment` into a Markdown file names one of its headings
 * (GitHub's anchors). Links to other sites are not fetched.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'data', 'coverage']);

function markdownFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || SKIPPED_DIRS.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...markdownFiles(path));
    else if (entry.name.endsWith('.md')) files.push(path);
  }
  return files;
}

/** The text outside fenced code blocks and inline code, where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Targets of inline links and images, `[text](target "title")`, and of reference definitions, `[id]: target`. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  const html = [...text.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"/g)].map((m) => m[1]!);
  return [...inline, ...references, ...html];
}

/** GitHub's anchors for a Markdown file's headings. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(markdown.replace(/`([^`\n]*)`/g, '$1')).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = heading!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return result;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

describe('links between the Markdown files', () => {
  const files = markdownFiles(ROOT);

  test('finds the Markdown files', () => {
    const names = files.map((f) => relative(ROOT, f));
    for (const expected of ['README.md', 'docs/delivery.md', 'docs/receiving-webhooks.md', 'packages/verify/README.md']) {
      assert.ok(names.includes(expected), `${expected} is checked`);
    }
  });

  for (const file of files) {
    test(relative(ROOT, file), () => {
      const markdown = readFileSync(file, 'utf8');
      const broken: string[] = [];
      for (const target of linkTargets(markdown)) {
        if (isExternal(target)) continue;
        const [rawPath = '', fragment] = target.split('#', 2) as [string, string | undefined];
        const path = decodeURIComponent(rawPath.split('?')[0]!);
        const resolved = path === '' ? file : path.startsWith('/') ? join(ROOT, path) : resolve(dirname(file), path);
        if (!existsSync(resolved)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (fragment && resolved.endsWith('.md') && statSync(resolved).isFile()) {
          if (!anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(fragment).toLowerCase())) {
            broken.push(`${target}: no heading with that anchor`);
          }
        }
      }
      assert.deepEqual(broken, [], `broken links in ${relative(ROOT, file)}`);
    });
  }
});
