import { useEffect, useState } from 'preact/hooks';
import { Button } from './button.tsx';

/**
 * Copies `text`. The Clipboard API needs a secure context (https or
 * localhost); on plain http from another host it falls back to selecting
 * the text in `fallbackInput` and execCommand('copy').
 */
export function CopyButton({ text, label = 'Copy', fallbackInput, testId }: { text: string; label?: string; fallbackInput?: () => HTMLInputElement | null; testId?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state !== 'copied') return;
    const t = setTimeout(() => setState('idle'), 4000);
    return () => clearTimeout(t);
  }, [state]);

  async function copy() {
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
      } else {
        const input = fallbackInput?.();
        if (!input) throw new Error('no clipboard');
        input.focus();
        input.select();
        if (!document.execCommand('copy')) throw new Error('copy refused');
      }
      setState('copied');
    } catch {
      setState('failed');
    }
  }

  return (
    <span class="copy">
      <Button small onClick={copy} data-testid={testId}>
        {state === 'copied' ? 'Copied' : label}
      </Button>
      <span class="copy-status" role="status" aria-live="polite">
        {state === 'copied' ? 'Copied to the clipboard.' : state === 'failed' ? 'Could not copy: select the text and copy it yourself.' : ''}
      </span>
    </span>
  );
}
