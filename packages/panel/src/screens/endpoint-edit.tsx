import { getEndpoint, updateEndpoint } from '../api/herald.ts';
import { ErrorAlert } from '../components/alert.tsx';
import { Loading } from '../components/loading.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { navigate, paths } from '../lib/router.ts';
import { useResource } from '../lib/use-resource.ts';
import { Breadcrumb } from './endpoint/breadcrumb.tsx';
import { EndpointForm } from './endpoint/endpoint-form.tsx';
import { hostOf } from './endpoint/host-of.ts';

/** Change the address, the events, the description, the rate limit, the custom headers or the metadata; the secret stays. */
export function EndpointEdit({ id }: { id: string }) {
  const endpoint = useResource((signal) => getEndpoint(id, signal), id);
  const e = endpoint.data;
  return (
    <>
      <PageHeader
        title="Edit endpoint"
        docTitle="Edit endpoint"
        before={<Breadcrumb current="Edit" parent={e ? { href: paths.endpoint(id), label: hostOf(e.url) } : undefined} />}
      >
        Changes apply to the next delivery. The signing secret stays the same.
      </PageHeader>
      {endpoint.error && <ErrorAlert error={endpoint.error} title="The endpoint could not be loaded" onRetry={endpoint.reload} />}
      {!e && endpoint.loading && <Loading />}
      {e && (
        <EndpointForm
          initial={{ url: e.url, event_types: e.event_types, description: e.description, rate_limit: e.rate_limit, initial_headers: e.headers, initial_metadata: e.metadata }}
          submitLabel="Save changes"
          cancelHref={paths.endpoint(id)}
          onSubmit={async (input) => {
            await updateEndpoint(id, input);
            navigate(paths.endpoint(id) + '?saved=1');
          }}
        />
      )}
    </>
  );
}
