import type { Config } from '../config.ts';
import type { Herald } from '../main.ts';

/**
 * The last line of every start banner, whatever the role: supervisors and
 * scripts that wait for Herald to be up wait for it.
 */
export const READY_LINE = 'Ready. Stop with Ctrl-C or SIGTERM: in-flight deliveries finish first.';

const WHAT_IT_DOES: Record<Config['role'], string> = {
  all: 'API and dispatcher: it accepts events and delivers them',
  api: 'API only: it accepts events and serves the control panel; processes started with --role worker deliver them',
  worker: 'worker only: it delivers events; it serves no API, so there is no address to call',
};

const FIRST_STEPS = [
  'First steps:',
  '  create the first user in the control panel (first run: with the link above), or:',
  '  npx herald accounts create --name "Acme Logistics"',
  '  npx herald users create --account <account id> --email you@example.com --name "Your Name"',
  '  npx herald keys create --account <account id>',
];

/** What `herald start` prints once it runs: only what is true of the role this process has. */
export function startBanner(config: Pick<Config, 'role' | 'databaseUrl' | 'dataDir'>, herald: Pick<Herald, 'url' | 'setupLink' | 'metricsUrl'>): string {
  const engine = config.databaseUrl ? 'PostgreSQL' : `the embedded database in ${config.dataDir}`;
  const lines = [`Herald is running (${WHAT_IT_DOES[config.role]}) on ${engine}.`];
  if (herald.url) {
    lines.push(`API: ${herald.url}   health: ${herald.url}/healthz`, `Control panel: ${herald.url}/`);
    // The one place the setup token is shown: the console of the person who started Herald.
    if (herald.setupLink) lines.push(`First run: open ${herald.setupLink} to create the first user (this link works until then).`);
    lines.push(...FIRST_STEPS);
  }
  if (herald.metricsUrl) lines.push(`Metrics: ${herald.metricsUrl}/metrics`);
  lines.push(READY_LINE);
  return lines.join('\n');
}
