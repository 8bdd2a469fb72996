import { useRef, useState } from 'preact/hooks';
import { getEndpoint, listAttempts } from '../api/herald.ts';
import type { Endpoint } from '../api/types.ts';
import { Alert, ErrorAlert } from '../components/alert.tsx';
import { StateBadge } from '../components/badge.tsx';
import { Button } from '../components/button.tsx';
import { Link } from '../components/link.tsx';
import { Loading } from '../components/loading.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { navigate, paths } from '../lib/router.ts';
import { useResource } from '../lib/use-resource.ts';
import { AttemptLog } from './endpoint/attempt-log.tsx';
import { Breadcrumb } from './endpoint/breadcrumb.tsx';
import { DeleteDialog } from './endpoint/delete-dialog.tsx';
import { DisableDialog } from './endpoint/disable-dialog.tsx';
import { DisabledBanner } from './endpoint/disabled-banner.tsx';
import { EndpointFacts } from './endpoint/endpoint-facts.tsx';
import { HealthCard } from './endpoint/health-card.tsx';
import { hostOf } from './endpoint/host-of.ts';
import { RecoverDialog } from './endpoint/recover-dialog.tsx';
import { RotateDialog } from './endpoint/rotate-dialog.tsx';
import { TestEventCard } from './endpoint/test-event-card.tsx';
import { ThrottleBanner } from './endpoint/throttle-banner.tsx';

type DialogName = 'rotate' | 'delete' | 'recover' | 'disable' | undefined;

/** One endpoint: its state, a test, its health and its attempt log, and the actions on it. */
export function EndpointDetail({ id, notice: initialNotice }: { id: string; notice?: string }) {
  const endpoint = useResource((signal) => getEndpoint(id, signal), id);
  const attempts = useResource((signal) => listAttempts(id, { signal }), id);
  const [dialog, setDialog] = useState<DialogName>();
  const [notice, setNotice] = useState(initialNotice);
  const testSelect = useRef<HTMLSelectElement>(null);
  // Bumped on every refresh, so the health card reloads with the attempt log.
  const [version, setVersion] = useState(0);

  const e = endpoint.data;
  if (!e) {
    return (
      <>
        <PageHeader title="Endpoint" docTitle="Endpoint" before={<Breadcrumb current="Endpoint" />} />
        {endpoint.error?.status === 404 ? (
          <Alert tone="warning" title="This endpoint does not exist" live>
            <p>It may have been deleted. Go back to the list of endpoints.</p>
            <p>
              <Link href={paths.webhooks}>Back to Webhooks</Link>
            </p>
          </Alert>
        ) : endpoint.error ? (
          <ErrorAlert error={endpoint.error} title="The endpoint could not be loaded" onRetry={endpoint.reload} />
        ) : (
          <Loading label="Loading the endpoint…" />
        )}
      </>
    );
  }

  const updated = (next: Endpoint, message?: string) => {
    endpoint.set(next);
    if (message) setNotice(message);
  };
  const refresh = () => {
    setVersion((v) => v + 1);
    return Promise.all([endpoint.reload(), attempts.reload()]).then(() => {});
  };

  return (
    <>
      <PageHeader
        title={<span class="mono break endpoint-title">{e.url}</span>}
        docTitle={hostOf(e.url)}
        before={<Breadcrumb current={hostOf(e.url)} />}
        actions={
          <>
            <Link href={paths.editEndpoint(e.id)} class="btn btn-secondary" data-testid="edit-endpoint" data-changes>
              Edit
            </Link>
            <Button onClick={() => setDialog('rotate')} data-testid="rotate-secret" data-changes>
              Rotate secret
            </Button>
            {e.state === 'enabled' && (
              <Button onClick={() => setDialog('disable')} data-testid="disable-endpoint" data-changes>
                Disable
              </Button>
            )}
            <Button variant="ghost" class="btn-danger-text" onClick={() => setDialog('delete')} data-testid="delete-endpoint" data-changes>
              Delete
            </Button>
          </>
        }
      >
        <span class="title-meta">
          <StateBadge endpoint={e} />
          {e.description && <span class="muted">{e.description}</span>}
        </span>
      </PageHeader>

      {notice && (
        <Alert tone="success" live testId="notice">
          {notice}
        </Alert>
      )}

      {e.state === 'disabled' && (
        <DisabledBanner
          endpoint={e}
          onEnabled={(next) => updated(next, 'Re-enabled. Herald sends new events to this endpoint again. To send what it skipped meanwhile, use "Recover deliveries".')}
          onRecover={() => setDialog('recover')}
          onTest={() => testSelect.current?.focus()}
        />
      )}

      {e.state === 'enabled' && e.throttle && <ThrottleBanner throttle={e.throttle} />}

      <div class="detail-grid">
        <EndpointFacts endpoint={e} onRotate={() => setDialog('rotate')} onRecover={() => setDialog('recover')} />
        <HealthCard endpointId={e.id} version={version} />
      </div>
      <TestEventCard endpoint={e} selectRef={testSelect} onSent={() => void refresh()} />
      <AttemptLog endpointId={e.id} all={attempts} onRefresh={() => setVersion((v) => v + 1)} />

      <RotateDialog open={dialog === 'rotate'} endpoint={e} onClose={() => setDialog(undefined)} onRotated={(next) => updated(next)} />
      <RecoverDialog
        open={dialog === 'recover'}
        endpoint={e}
        onClose={() => setDialog(undefined)}
        onRecovered={(count, next) => {
          setDialog(undefined);
          if (next) endpoint.set(next);
          setNotice(count === 1 ? '1 delivery is queued to be sent again.' : `${count} deliveries are queued to be sent again.`);
          void refresh();
        }}
      />
      <DisableDialog
        open={dialog === 'disable'}
        endpoint={e}
        onClose={() => setDialog(undefined)}
        onDisabled={(next) => {
          setDialog(undefined);
          updated(next, 'Disabled. Herald sends nothing to this endpoint until it is re-enabled; what arrives meanwhile is kept as skipped.');
          void refresh();
        }}
      />
      <DeleteDialog
        open={dialog === 'delete'}
        endpoint={e}
        onClose={() => setDialog(undefined)}
        onDeleted={() => navigate(`${paths.webhooks}?deleted=1`)}
      />
    </>
  );
}
