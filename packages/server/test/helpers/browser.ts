import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type BrowserContextOptions, type ConsoleMessage, type Page, type Request } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it). */
export const CHROMIUM = process.env.HERALD_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * The flags this machine needs: no sandbox (tests run as root), no GPU, and
 * none of Chromium's own background traffic (update checks, sync, QUIC
 * probes), which this closed network refuses and which would otherwise look
 * like requests to another origin.
 */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors, as text. */
  errors: string[];
  /** Every request the page made, in order. */
  requests: Request[];
  close(): Promise<void>;
}

/**
 * Launches headless Chromium with a fresh, empty profile and opens one page.
 * Console errors and page errors are collected, as is every request, so a
 * test can assert there were none it did not expect.
 */
export async function openBrowser(options: BrowserContextOptions = {}): Promise<TestBrowser> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'herald-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 860 },
    locale: 'en-US',
    timezoneId: 'Europe/Berlin',
    ...options,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  const requests: Request[] = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  context.on('request', (r) => requests.push(r));
  return {
    context,
    page,
    errors,
    requests,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Saves a PNG of the page to docs/screenshots/<name>.png when
 * HERALD_SCREENSHOTS is set (`npm run screenshots`); a no-op otherwise.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.HERALD_SCREENSHOTS;
  if (!dir) return;
  const target = dir === '1' ? new URL('../../../../docs/screenshots/', import.meta.url).pathname : dir;
  await mkdir(target, { recursive: true });
  await page.screenshot({ path: join(target, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
}

/*
 * Questions answered inside the page. The server's TypeScript has no DOM
 * types (and should not), so the browser side is written as expressions.
 */

/** The focused element: its id, data-testid, tag and text. */
export async function focused(page: Page): Promise<{ id: string; testId: string | null; tag: string; text: string }> {
  return (await page.evaluate(
    `(() => { const e = document.activeElement; return e ? { id: e.id, testId: e.getAttribute('data-testid'), tag: e.tagName, text: (e.textContent || '').trim() } : { id: '', testId: null, tag: '', text: '' }; })()`,
  )) as { id: string; testId: string | null; tag: string; text: string };
}

/** Form controls without an accessible name (a <label>, aria-label, or a button's text). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return (await page.evaluate(
    `[...document.querySelectorAll('input, select, textarea, button')]
      .filter((e) => !((e.labels && e.labels.length) || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') || (e.tagName === 'BUTTON' && e.textContent.trim())))
      .map((e) => e.outerHTML)`,
  )) as string[];
}

/** Whether the page scrolls sideways (it must not, down to 375 px). */
export async function scrollsSideways(page: Page): Promise<boolean> {
  return (await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')) as boolean;
}

/** Inline <script> elements in the document. */
export async function inlineScripts(page: Page): Promise<number> {
  return (await page.evaluate('[...document.scripts].filter((s) => !s.src).length')) as number;
}

/**
 * Adds an inline script to the page and resolves once the browser reports a
 * CSP violation: true if the script ran anyway.
 */
export async function inlineScriptRuns(page: Page): Promise<boolean> {
  return (await page.evaluate(`new Promise((resolve) => {
    document.addEventListener('securitypolicyviolation', () => resolve(Boolean(window.__injected)), { once: true });
    const s = document.createElement('script');
    s.textContent = 'window.__injected = true';
    document.head.append(s);
  })`)) as boolean;
}

export async function clipboardText(page: Page): Promise<string> {
  return (await page.evaluate('navigator.clipboard.readText()')) as string;
}

/** An instant as the value of <input type="datetime-local"> in the browser's time zone. */
export async function localDateTimeInput(page: Page, at: Date): Promise<string> {
  return (await page.evaluate(`(() => {
    const d = new Date(${JSON.stringify(at.toISOString())});
    const p = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes());
  })()`)) as string;
}

/** GET a JSON document with the page's cookies (same origin). */
export async function fetchJson<T>(page: Page, path: string): Promise<T> {
  return (await page.evaluate(`fetch(${JSON.stringify(path)}).then((r) => r.json())`)) as T;
}
