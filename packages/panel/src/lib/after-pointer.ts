/**
 * Runs `fn` once the pointer that is down (if any) has been released and its
 * click delivered. A message shown when a field loses focus moves what is
 * below it; shown while the button is still down, it moves the checkbox or
 * button being clicked, and the click lands beside it. Deferred past the
 * click, the message appears after the click has hit what the user aimed at.
 */
let pointerDown = false;
if (typeof document !== 'undefined') {
  document.addEventListener('pointerdown', () => (pointerDown = true), true);
  document.addEventListener('pointerup', () => (pointerDown = false), true);
  document.addEventListener('pointercancel', () => (pointerDown = false), true);
}

export function afterPointerRelease(fn: () => void): void {
  if (!pointerDown) return fn();
  const run = () => {
    document.removeEventListener('pointerup', run, true);
    document.removeEventListener('pointercancel', run, true);
    // The click follows pointerup within the same task; a timeout runs after it.
    setTimeout(fn, 0);
  };
  document.addEventListener('pointerup', run, true);
  document.addEventListener('pointercancel', run, true);
}
