/**
 * Herald's look for the API reference at /docs (Swagger UI): its name, mark
 * and colours, and no Swagger or Fastify branding. Swagger UI's own top bar
 * (which draws the Swagger logo as an inline <style>, refused by the CSP) is
 * left out by using its BaseLayout; this header takes its place. Everything is
 * a file served by Herald under /docs/static/theme/, so the page runs under a
 * CSP with no 'unsafe-inline'.
 */

/** Herald's mark, the same as the control panel's favicon (packages/panel/public/favicon.svg). */
const MARK =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#4f46e5"/><path d="M9 23V9h3v5.5h8V9h3v14h-3v-5.5h-8V23z" fill="#fff"/></svg>';

/** Builds the header with DOM calls (no innerHTML, no style attributes). */
const HEADER_JS = `(function () {
  var bar = document.createElement('header');
  bar.className = 'herald-docs-bar';
  var brand = document.createElement('a');
  brand.className = 'herald-docs-brand';
  brand.href = '/';
  var mark = document.createElement('img');
  mark.src = '/docs/static/theme/herald.svg';
  mark.alt = '';
  mark.width = 28;
  mark.height = 28;
  brand.appendChild(mark);
  var name = document.createElement('span');
  name.textContent = 'Herald';
  brand.appendChild(name);
  bar.appendChild(brand);
  var what = document.createElement('span');
  what.className = 'herald-docs-what';
  what.textContent = 'API reference';
  bar.appendChild(what);
  var links = document.createElement('nav');
  links.className = 'herald-docs-links';
  links.setAttribute('aria-label', 'Herald');
  [['Control panel', '/'], ['OpenAPI document', '/openapi.json']].forEach(function (l) {
    var a = document.createElement('a');
    a.textContent = l[0];
    a.href = l[1];
    links.appendChild(a);
  });
  bar.appendChild(links);
  document.body.insertBefore(bar, document.body.firstChild);
})();
`;

const CSS = `
:root {
  --herald-bg: #f6f8fa;
  --herald-text: #1a2433;
  --herald-muted: #5b6777;
  --herald-border: #e3e8ee;
  --herald-accent: #4f46e5;
  --herald-accent-hover: #4338ca;
  --herald-font: system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Noto Sans', sans-serif;
}
body { margin: 0; background: var(--herald-bg); color: var(--herald-text); font-family: var(--herald-font); }
.herald-docs-bar {
  display: flex; align-items: center; gap: 12px; flex-wrap: wrap;
  padding: 12px 24px; background: #fff; border-bottom: 1px solid var(--herald-border);
}
.herald-docs-brand { display: inline-flex; align-items: center; gap: 8px; color: var(--herald-text); font-weight: 650; font-size: 17px; text-decoration: none; }
.herald-docs-what { color: var(--herald-muted); font-size: 15px; }
.herald-docs-links { margin-left: auto; display: flex; gap: 16px; }
.herald-docs-links a { color: var(--herald-accent); text-decoration: none; font-size: 14px; }
.herald-docs-links a:hover, .herald-docs-links a:focus-visible { color: var(--herald-accent-hover); text-decoration: underline; }
#swagger-ui { max-width: 1200px; margin: 0 auto; padding: 0 8px 48px; }
.swagger-ui, .swagger-ui .info .title, .swagger-ui .info p, .swagger-ui .opblock-tag, .swagger-ui .opblock .opblock-summary-description,
.swagger-ui table thead tr th, .swagger-ui .parameter__name, .swagger-ui .response-col_status, .swagger-ui .tab li, .swagger-ui .btn,
.swagger-ui .model-title, .swagger-ui section.models h4, .swagger-ui .opblock-description-wrapper p, .swagger-ui .markdown p,
.swagger-ui .renderedMarkdown p, .swagger-ui label, .swagger-ui select { font-family: var(--herald-font); color: var(--herald-text); }
.swagger-ui .info { margin: 32px 0 24px; }
.swagger-ui .info .title small.version-stamp { background-color: var(--herald-accent); }
.swagger-ui a, .swagger-ui .info a, .swagger-ui .info .link { color: var(--herald-accent); }
.swagger-ui .opblock-tag { border-bottom-color: var(--herald-border); }
.swagger-ui .scheme-container { background: transparent; box-shadow: none; padding: 0; }
.swagger-ui .btn.authorize { color: var(--herald-accent); border-color: var(--herald-accent); }
.swagger-ui .btn.authorize svg { fill: var(--herald-accent); }
.swagger-ui .btn.execute { background-color: var(--herald-accent); border-color: var(--herald-accent); color: #fff; }
.swagger-ui .btn.execute:hover { background-color: var(--herald-accent-hover); }
.swagger-ui section.models { border-color: var(--herald-border); }
`;

export const DOCS_TITLE = 'Herald API reference';

/** The theme option of @fastify/swagger-ui. */
export const DOCS_THEME = {
  title: DOCS_TITLE,
  css: [{ filename: 'herald.css', content: CSS }],
  js: [{ filename: 'herald.js', content: HEADER_JS }],
  favicon: [{ filename: 'herald.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(MARK) }],
};
