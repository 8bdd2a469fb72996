import { useState } from 'preact/hooks';
import { getEndpoint, updateEndpoint } from '../api/herald.ts';
import { Alert, ErrorAlert } from '../components/alert.tsx';
import { Link } from '../components/link.tsx';
import { SecretReveal } from '../components/secret-reveal.tsx';
import { Loading } from '../components/loading.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { navigate, paths } from '../lib/router.ts';
import { useResource } from '../lib/use-resource.ts';
import { Breadcrumb } from './endpoint/breadcrumb.tsx';
import { EndpointForm } from './endpoint/endpoint-form.tsx';
import { hostOf } from './endpoint/host-of.ts';

/**
 * Change the address, the events, the description, the rate limit, the
 * custom headers, the metadata or the signature scheme. The secret stays,
 * unless the scheme changed: then the new secret is shown here, once.
 */
export function EndpointEdit({ id }: { id: string }) {
  const endpoint = useResource((signal) => getEndpoint(id, signal), id);
  const [newSecret, setNewSecret] = useState<string>();
  const e = endpoint.data;
  if (newSecret) {
    return (
      <>
        <PageHeader key="new-secret" title="New signing secret" docTitle="New signing secret" before={<Breadcrumb current="Edit" />}>
          <span class="mono break">{e?.url}</span>
        </PageHeader>
        <div class="card stack">
          <Alert tone="success" live>
            The signature scheme changed, and with it the signing secret: every request from now on is signed in the new scheme with this secret.
          </Alert>
          <SecretReveal secret={newSecret} />
          <div class="form-actions">
            <Link href={paths.endpoint(id) + '?saved=1'} class="btn btn-primary" data-testid="secret-done">
              I have saved the secret, continue
            </Link>
          </div>
        </div>
      </>
    );
  }
  return (
    <>
      <PageHeader
        title="Edit endpoint"
        docTitle="Edit endpoint"
        before={<Breadcrumb current="Edit" parent={e ? { href: paths.endpoint(id), label: hostOf(e.url) } : undefined} />}
      >
        Changes apply to the next delivery. The signing secret stays the same unless you change the signature scheme.
      </PageHeader>
      {endpoint.error && <ErrorAlert error={endpoint.error} title="The endpoint could not be loaded" onRetry={endpoint.reload} />}
      {!e && endpoint.loading && <Loading />}
      {e && (
        <EndpointForm
          initial={{
            url: e.url,
            event_types: e.event_types,
            description: e.description,
            rate_limit: e.rate_limit,
            initial_headers: e.headers,
            initial_metadata: e.metadata,
            signature_scheme: e.signature_scheme,
          }}
          submitLabel="Save changes"
          cancelHref={paths.endpoint(id)}
          onSubmit={async (input) => {
            const saved = await updateEndpoint(id, input);
            if (saved.secret !== undefined) setNewSecret(saved.secret);
            else navigate(paths.endpoint(id) + '?saved=1');
          }}
        />
      )}
    </>
  );
}
