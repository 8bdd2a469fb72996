import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parse } from 'yaml';
import { loadConfig } from '../src/config.ts';
import { startHerald, type Herald } from '../src/main.ts';
import { createTestDb, ENGINES, type TestDb } from './helpers/engines.ts';
import { TEST_KEY } from './helpers/herald.ts';
import { familyOf, parseMetrics } from './helpers/prometheus.ts';

/**
 * The example alert rules and dashboard in docs/monitoring, and the metrics
 * table of docs/running.md, name only metrics a real Herald exports.
 */
const DOCS = new URL('../../../docs/', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, DOCS), 'utf8');

/** Metric names in a PromQL expression: Herald's own and the process metrics prom-client adds. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:herald|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

for (const engine of ENGINES) {
  describe(`docs/monitoring against a running Herald [${engine}]`, () => {
    let herald: Herald;
    let dataDir: string;
    let testDb: TestDb | undefined;
    let families: Map<string, string>;

    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'herald-monitoring-'));
      if (engine === 'postgres') testDb = await createTestDb('postgres');
      const env: Record<string, string> = {
        HERALD_DATA_DIR: dataDir,
        HERALD_PORT: '0',
        HERALD_METRICS_PORT: '0',
        HERALD_ENCRYPTION_KEY: TEST_KEY.toString('base64'),
        HERALD_LOG_LEVEL: 'silent',
        ...(testDb ? { DATABASE_URL: testDb.url! } : {}),
      };
      herald = await startHerald({ config: loadConfig({ env }), logStream: new PassThrough() });
      const res = await fetch(`${herald.metricsUrl}/metrics`);
      assert.equal(res.status, 200);
      families = parseMetrics(await res.text()).types;
    });
    after(async () => {
      await herald?.close();
      await testDb?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const assertExported = (names: string[], where: string) => {
      assert.ok(names.length > 0, `${where} names a metric`);
      for (const name of names) assert.ok(families.has(familyOf(name, families)), `${where}: ${name} is not a metric Herald exports`);
    };

    test('herald-alerts.yml: every rule is complete and names only exported metrics', () => {
      const doc = parse(read('monitoring/herald-alerts.yml')) as { groups: Array<{ name: string; rules: Rule[] }> };
      const rules = doc.groups.flatMap((g) => g.rules);
      assert.deepEqual(rules.map((r) => r.alert), ['HeraldDatabaseUnreachable', 'HeraldDeliveriesOverdue', 'HeraldBacklogGrowing', 'HeraldEndpointsDisabled', 'HeraldNotDelivering']);
      for (const rule of rules) {
        assert.ok(['critical', 'warning', 'info'].includes(rule.labels.severity), rule.alert);
        assert.ok(rule.annotations.summary && rule.annotations.description, rule.alert);
        assertExported(metricNames(rule.expr), rule.alert);
      }
    });

    test('herald-dashboard.json: every panel queries only exported metrics, and every Herald metric is on it', () => {
      const dashboard = JSON.parse(read('monitoring/herald-dashboard.json')) as { uid: string; panels: Array<{ id: number; title: string; targets: Array<{ expr: string }> }> };
      assert.equal(new Set(dashboard.panels.map((p) => p.id)).size, dashboard.panels.length, 'panel ids are unique');
      const used = new Set<string>();
      for (const panel of dashboard.panels) {
        for (const { expr } of panel.targets) {
          assertExported(metricNames(expr), panel.title);
          for (const name of metricNames(expr)) used.add(familyOf(name, families));
        }
      }
      const herald = [...families.keys()].filter((f) => f.startsWith('herald_'));
      assert.deepEqual(herald.filter((f) => !used.has(f)), [], 'metrics missing from the dashboard');
    });

    test('docs/running.md lists every Herald metric, and only those', () => {
      const running = read('running.md');
      const section = running.slice(running.indexOf('## Metrics and logs'), running.indexOf('\n## ', running.indexOf('## Metrics and logs') + 1));
      const listed = new Set([...section.matchAll(/^\| `(herald_[a-z0-9_]+)`/gm)].map((m) => m[1]!));
      const herald = new Set([...families.keys()].filter((f) => f.startsWith('herald_')));
      assert.deepEqual([...herald].filter((f) => !listed.has(f)), [], 'exported but not documented');
      assert.deepEqual([...listed].filter((f) => !herald.has(f)), [], 'documented but not exported');
    });
  });
}
