import { Link } from '../components/link.tsx';
import { PageHeader } from '../components/page-header.tsx';
import { paths } from '../lib/router.ts';

export function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" docTitle="Not found">
        There is no page at this address in the control panel.
      </PageHeader>
      <p>
        <Link href={paths.webhooks}>Go to Webhooks</Link>
      </p>
    </>
  );
}
