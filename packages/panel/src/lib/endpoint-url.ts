/**
 * The panel's check of an endpoint address, before the server's own
 * (packages/server/src/core/endpoint-url.ts): https only, a host, no
 * credentials, no fragment. Returns what to fix, or undefined when it is fine.
 */
export function checkEndpointUrl(raw: string): string | undefined {
  const value = raw.trim();
  if (!value) return 'Enter the HTTPS address of your receiver, for example https://example.com/webhooks.';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return /^[a-z][a-z0-9+.-]*:/i.test(value)
      ? 'This is not a valid address. Check it for typos; it should look like https://example.com/webhooks.'
      : `Start the address with https://, for example https://${value.replace(/^\/+/, '')}.`;
  }
  if (url.protocol === 'http:') {
    return `Use https: Herald does not send events over plain http, because they would travel unencrypted. Try https://${url.host}${url.pathname === '/' ? '' : url.pathname}.`;
  }
  if (url.protocol !== 'https:') return `Use an https:// address (not ${url.protocol.replace(/:$/, '')}).`;
  if (!url.hostname) return 'The address needs a host name, for example https://example.com/webhooks.';
  if (url.username || url.password) return 'Remove the user name and password from the address; Herald signs every request instead.';
  if (url.hash) return 'Remove the #fragment: it is never sent to the server.';
  return undefined;
}
