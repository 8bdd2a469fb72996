/**
 * Request headers in whatever shape the framework hands them over:
 *
 * - a Fetch `Headers` (Workers, Deno, Bun, Next.js App Router, Hono), or
 *   anything else with a `get(name)` method;
 * - Node's `IncomingHttpHeaders` (`req.headers` in node:http, Express,
 *   Fastify, Koa): lowercase keys, values that may be `string[]`;
 * - a plain object with keys in any case.
 *
 * Structural on purpose, so the declarations need neither the DOM library
 * nor `@types/node`.
 */
export type HeadersLike =
  | { get(name: string): string | null | undefined }
  | { readonly [name: string]: string | readonly string[] | number | null | undefined };

/**
 * Every value of one header, looked up case-insensitively. `[]` when absent.
 * Values of unexpected types in a plain object are ignored, so arbitrary input
 * can only ever surface as a missing or malformed header.
 */
export function readHeader(headers: HeadersLike, name: string): string[] {
  if (typeof headers !== 'object' || headers === null) {
    throw new TypeError(
      'headers must be the request headers: req.headers in Node, Express and Fastify, request.headers in Fetch handlers',
    );
  }
  if (typeof headers.get === 'function') {
    // Fetch Headers.get is already case-insensitive and joins repeats with ", ".
    const value: unknown = (headers as { get(name: string): unknown }).get(name);
    return typeof value === 'string' ? [value] : [];
  }
  const wanted = name.toLowerCase();
  const values: string[] = [];
  // Own keys only: a header must never come from an object's prototype.
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() !== wanted) continue;
    const value: unknown = (headers as Record<string, unknown>)[key];
    if (typeof value === 'string') values.push(value);
    else if (typeof value === 'number') values.push(String(value));
    else if (Array.isArray(value)) values.push(...value.filter((v): v is string => typeof v === 'string'));
  }
  return values;
}
