import { Link } from '../../components/link.tsx';
import { paths } from '../../lib/router.ts';

export function Breadcrumb({ current, parent }: { current: string; parent?: { href: string; label: string } }) {
  return (
    <nav class="breadcrumb" aria-label="Breadcrumb">
      <ol>
        <li>
          <Link href={paths.webhooks}>Webhooks</Link>
        </li>
        {parent && (
          <li>
            <Link href={parent.href} class="mono">
              {parent.label}
            </Link>
          </li>
        )}
        <li aria-current="page">{current}</li>
      </ol>
    </nav>
  );
}
