import type { ComponentChildren } from 'preact';
import { PageHeader } from '../components/page-header.tsx';

/** The centred card of the sign-in and first-run screens. */
export function AuthFrame({ title, docTitle, lede, children }: { title: string; docTitle: string; lede?: ComponentChildren; children: ComponentChildren }) {
  return (
    <main class="auth" id="main">
      <div class="auth-card">
        <div class="auth-brand">
          <img src="/favicon.svg" alt="" width={32} height={32} />
          <span>Herald</span>
        </div>
        <PageHeader title={title} docTitle={docTitle}>
          {lede}
        </PageHeader>
        {children}
      </div>
    </main>
  );
}
