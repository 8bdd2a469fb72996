import { useState } from 'preact/hooks';
import { listApiKeys } from '../api/herald.ts';
import type { ApiKey, ApiKeyWithKey } from '../api/types.ts';
import { Alert, ErrorAlert } from '../components/alert.tsx';
import { Badge } from '../components/badge.tsx';
import { Button } from '../components/button.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Loading } from '../components/loading.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { TimeAgo } from '../components/time-ago.tsx';
import { useResource } from '../lib/use-resource.ts';
import { CreateKeyDialog } from './api-keys/create-key-dialog.tsx';
import { RevokeKeyDialog } from './api-keys/revoke-key-dialog.tsx';

/** Settings → API keys: the account's keys, a new one shown once, and revoking. */
export function ApiKeys() {
  const keys = useResource((signal) => listApiKeys(signal), 'api-keys');
  const [creating, setCreating] = useState(false);
  // The key the revoke dialog is about; it stays mounted, like the other dialogs, and opens with `revokeOpen`.
  const [revoking, setRevoking] = useState<ApiKey>();
  const [revokeOpen, setRevokeOpen] = useState(false);
  const [notice, setNotice] = useState<string>();

  const createButton = (
    <Button variant="primary" onClick={() => setCreating(true)} data-testid="create-api-key">
      <span aria-hidden="true">+ </span>Create API key
    </Button>
  );
  const rows = keys.data;

  return (
    <>
      <PageHeader title="API keys" docTitle="API keys" actions={createButton}>
        Your services publish events and manage webhooks with these keys, sent as <code>Authorization: Bearer hk_…</code>. Each key sees only
        this account. Herald stores only a hash: a key is shown once, when it is created.
      </PageHeader>
      {notice && (
        <Alert tone="success" live testId="notice">
          {notice}
        </Alert>
      )}
      {keys.error && <ErrorAlert error={keys.error} title="The API keys could not be loaded" onRetry={keys.reload} />}
      {!rows && keys.loading && <Loading label="Loading API keys…" />}
      {rows?.length === 0 && (
        <EmptyState title="No API keys yet" action={createButton} testId="api-keys-empty">
          Create a key for each service that publishes events, so you can revoke one without touching the others.
        </EmptyState>
      )}
      {rows && rows.length > 0 && (
        <div class="card card-flush">
          <table class="table table-keys" data-testid="api-key-table">
            <caption class="visually-hidden">API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {[...rows].reverse().map((k) => (
                <tr key={k.id} data-testid="api-key-row" data-key-id={k.id} class={k.revoked_at ? 'row-disabled' : undefined}>
                  <th scope="row" data-label="Name">
                    {k.name || <span class="muted">Unnamed</span>}
                  </th>
                  <td data-label="Key">
                    <span class="mono" data-testid="api-key-prefix">
                      {k.prefix}_…
                    </span>
                  </td>
                  <td data-label="Created">
                    <TimeAgo iso={k.created_at} exact />
                  </td>
                  <td data-label="Status">
                    {k.revoked_at ? (
                      <span data-testid="api-key-status">
                        <Badge tone="neutral">Revoked</Badge> <TimeAgo iso={k.revoked_at} />
                      </span>
                    ) : (
                      <span data-testid="api-key-status">
                        <Badge tone="success">Active</Badge>
                      </span>
                    )}
                  </td>
                  <td class="row-toggle">
                    {!k.revoked_at && (
                      <Button small variant="ghost" class="btn-danger-text" onClick={() => {
                          setRevoking(k);
                          setRevokeOpen(true);
                        }}
                        data-testid="revoke-api-key"
                      >
                        Revoke<span class="visually-hidden"> {k.name || k.prefix}</span>
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <CreateKeyDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(k: ApiKeyWithKey) => {
          const { key: _shownOnce, ...listed } = k;
          keys.set([...(keys.data ?? []), listed]);
        }}
      />
      {revoking && (
        <RevokeKeyDialog
          open={revokeOpen}
          apiKey={revoking}
          onClose={() => setRevokeOpen(false)}
          onRevoked={(k) => {
            setRevokeOpen(false);
            keys.set((keys.data ?? []).map((x) => (x.id === k.id ? k : x)));
            setNotice(`The key ${k.name ? `"${k.name}" ` : ''}(${k.prefix}_…) is revoked: requests with it now get 401.`);
          }}
        />
      )}
    </>
  );
}
