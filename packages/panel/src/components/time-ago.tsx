import { useEffect, useState } from 'preact/hooks';
import { formatExact, formatRelative } from '../lib/time.ts';

const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;

/** Re-renders every 30 s so "just now" becomes "1 minute ago"; one timer for the whole page. */
function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const tick = () => setNow(Date.now());
    listeners.add(tick);
    timer ??= setInterval(() => listeners.forEach((l) => l()), 30_000);
    return () => {
      listeners.delete(tick);
      if (listeners.size === 0 && timer) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  }, []);
  return now;
}

/** "3 minutes ago", with the exact local time as a tooltip, or on a second line with `exact`. */
export function TimeAgo({ iso, exact = false }: { iso: string; exact?: boolean }) {
  const now = useNow();
  const full = formatExact(iso);
  return (
    <span class="time">
      <time dateTime={iso} title={full}>
        {formatRelative(iso, now)}
      </time>
      {exact && <span class="time-exact">{full}</span>}
    </span>
  );
}
