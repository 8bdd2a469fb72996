import { useEffect, useState } from 'preact/hooks';

/**
 * A long id shown by its last characters, "…3f9a1c2e", with the whole id as
 * its tooltip and a click that copies it. Herald's ids are time-ordered
 * (UUIDv7): their first characters are a timestamp, the same for every id
 * made within a minute or so, while the last ones are random and tell them
 * apart.
 */
export function ShortId({ id, what = 'id' }: { id: string; what?: string }) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const t = setTimeout(() => setCopied(false), 2000);
    return () => clearTimeout(t);
  }, [copied]);

  async function copy() {
    try {
      await navigator.clipboard.writeText(id);
      setCopied(true);
    } catch {
      // No clipboard (plain http from another host): the tooltip still has the whole id to select.
    }
  }

  return (
    <span class="short-id-wrap">
      <button type="button" class="short-id mono" title={`${id} (click to copy)`} aria-label={`Copy ${what} ${id}`} onClick={copy} data-testid="short-id" data-id={id}>
        …{id.slice(-8)}
      </button>
      <span class="copy-status" role="status" aria-live="polite">
        {copied ? 'Copied' : ''}
      </span>
    </span>
  );
}
