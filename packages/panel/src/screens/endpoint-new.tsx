import { useState } from 'preact/hooks';
import { createEndpoint } from '../api/herald.ts';
import type { EndpointWithSecret } from '../api/types.ts';
import { Alert } from '../components/alert.tsx';
import { Link } from '../components/link.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { SecretReveal } from '../components/secret-reveal.tsx';
import { paths } from '../lib/router.ts';
import { Breadcrumb } from './endpoint/breadcrumb.tsx';
import { EndpointForm } from './endpoint/endpoint-form.tsx';

/** Add an endpoint, then show its signing secret this one time. */
export function EndpointNew() {
  const [created, setCreated] = useState<EndpointWithSecret>();
  if (created) {
    return (
      <>
        <PageHeader key="created" title="Endpoint added" docTitle="Endpoint added" before={<Breadcrumb current="New endpoint" />}>
          <span class="mono break">{created.url}</span>
        </PageHeader>
        <div class="card stack">
          <Alert tone="success" live>
            Herald will now send {created.event_types.join(', ')} events to this address.
          </Alert>
          <SecretReveal secret={created.secret} />
          <div class="form-actions">
            <Link href={paths.endpoint(created.id)} class="btn btn-primary" data-testid="secret-done">
              I have saved the secret, continue
            </Link>
          </div>
        </div>
      </>
    );
  }
  return (
    <>
      <PageHeader title="Add an endpoint" docTitle="Add endpoint" before={<Breadcrumb current="New endpoint" />}>
        Herald signs every request with a secret that it shows you once, right after you add the endpoint.
      </PageHeader>
      <EndpointForm
        initial={{ url: '', event_types: [], description: '', rate_limit: null }}
        submitLabel="Add endpoint"
        cancelHref={paths.webhooks}
        onSubmit={async (input) => setCreated(await createEndpoint(input))}
      />
    </>
  );
}
