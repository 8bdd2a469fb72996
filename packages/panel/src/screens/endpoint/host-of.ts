/** "example.com/webhooks" for a breadcrumb; the address itself when it does not parse. */
export function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return u.host + (u.pathname === '/' ? '' : u.pathname);
  } catch {
    return url;
  }
}
