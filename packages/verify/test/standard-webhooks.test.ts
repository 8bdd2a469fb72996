import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { signStandard, verify, verifyStandard, type StandardVerifyInput, type WebhookEvent } from '../src/index.ts';
import { signStandardSync, signSync, verifyStandardSync } from '../src/node.ts';
import { envelopeBody, isCode, NOW, SECRET } from './backends.ts';

const BACKENDS: ReadonlyArray<{ name: string; verify(input: StandardVerifyInput): Promise<WebhookEvent>; sign: typeof signStandard }> = [
  { name: 'Web Crypto', verify: verifyStandard, sign: signStandard },
  { name: 'node:crypto', verify: async (input) => verifyStandardSync(input), sign: async (input) => signStandardSync(input) },
];

const newSecret = `whsec_${randomBytes(32).toString('base64')}`;
const oldSecret = `whsec_${randomBytes(24).toString('base64')}`;
const ID = '0192f5c4-1d2e-7c3b-9a4f-5e6d7c8b9a01';

/** The signature as the specification defines it, computed here independently of the library. */
function reference(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

function headersOf(signature: string, timestamp = NOW, id = ID) {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

for (const backend of BACKENDS) {
  test(`${backend.name}: Standard Webhooks — signs as the specification says, and verifies what it signs`, async () => {
    const body = envelopeBody();
    const signature = await backend.sign({ id: ID, timestamp: NOW, body, secret: newSecret });
    assert.equal(signature, reference(newSecret, ID, NOW, body));
    const event = await backend.verify({ body, headers: headersOf(signature), secret: newSecret, now: NOW });
    assert.deepEqual(event, JSON.parse(body));
    // Bytes verify as well as text.
    assert.equal((await backend.verify({ body: Buffer.from(body), headers: headersOf(signature), secret: newSecret, now: NOW })).id, event.id);
  });

  test(`${backend.name}: Standard Webhooks — during an overlap the header carries "v1,<new> v1,<old>"; either secret verifies it`, async () => {
    const body = envelopeBody();
    const both = `${reference(newSecret, ID, NOW, body)} ${reference(oldSecret, ID, NOW, body)}`;
    for (const secret of [newSecret, oldSecret]) {
      assert.equal((await backend.verify({ body, headers: headersOf(both), secret, now: NOW })).type, 'alarm.created');
    }
    assert.equal((await backend.verify({ body, headers: headersOf(reference(oldSecret, ID, NOW, body)), secrets: [newSecret, oldSecret], now: NOW })).type, 'alarm.created');
    const stranger = `whsec_${randomBytes(32).toString('base64')}`;
    await assert.rejects(backend.verify({ body, headers: headersOf(both), secret: stranger, now: NOW }), isCode('no_matching_signature'));
    // Entries of other versions are skipped.
    assert.equal((await backend.verify({ body, headers: headersOf(`v1a,abc ${reference(newSecret, ID, NOW, body)}`), secret: newSecret, now: NOW })).type, 'alarm.created');
  });

  test(`${backend.name}: Standard Webhooks — the id, timestamp and body are all signed`, async () => {
    const body = envelopeBody();
    const signature = reference(newSecret, ID, NOW, body);
    await assert.rejects(backend.verify({ body, headers: headersOf(signature, NOW, 'another-id'), secret: newSecret, now: NOW }), isCode('no_matching_signature'));
    await assert.rejects(backend.verify({ body, headers: headersOf(signature, NOW + 1), secret: newSecret, now: NOW }), isCode('no_matching_signature'));
    await assert.rejects(backend.verify({ body: body.replace("alarm.created", "alarm.resolved"), headers: headersOf(signature), secret: newSecret, now: NOW }), isCode('no_matching_signature'));
  });

  test(`${backend.name}: Standard Webhooks — headers missing, malformed or out of tolerance are refused with their code`, async () => {
    const body = envelopeBody();
    const signature = reference(newSecret, ID, NOW, body);
    const { 'webhook-id': _, ...noId } = headersOf(signature);
    await assert.rejects(backend.verify({ body, headers: noId, secret: newSecret, now: NOW }), (e: unknown) => isCode('missing_header')(e) && (e as { header: string }).header === 'webhook-id');
    await assert.rejects(backend.verify({ body, headers: headersOf('v1=abc'), secret: newSecret, now: NOW }), isCode('malformed_signature'));
    await assert.rejects(backend.verify({ body, headers: headersOf('v1,not base64!'), secret: newSecret, now: NOW }), isCode('malformed_signature'));
    await assert.rejects(backend.verify({ body, headers: headersOf(signature, NOW), secret: newSecret, now: NOW + 301 }), isCode('timestamp_too_old'));
    await assert.rejects(backend.verify({ body, headers: headersOf(signature, NOW), secret: newSecret, now: NOW - 301 }), isCode('timestamp_in_future'));
    await assert.rejects(backend.verify({ body, headers: { ...headersOf(signature), 'webhook-timestamp': '1e9' }, secret: newSecret, now: NOW }), isCode('malformed_timestamp'));
  });

  test(`${backend.name}: Standard Webhooks — a secret that is not whsec_<base64> is a mistake in the call`, async () => {
    const body = envelopeBody();
    const headers = headersOf(reference(newSecret, ID, NOW, body));
    // A Herald-scheme secret is base64url, which the Standard Webhooks scheme does not accept.
    await assert.rejects(backend.verify({ body, headers, secret: 'whsec_abc-def_ghi', now: NOW }), TypeError);
    await assert.rejects(backend.verify({ body, headers, secret: '', now: NOW }), TypeError);
  });
}

test('the Herald scheme: a rotation overlap header "v1=<new> v1=<old>" verifies under either secret alone', async () => {
  const body = envelopeBody();
  const other = 'whsec_the_old_secret';
  const header = `${signSync({ body, secret: SECRET, timestamp: NOW })} ${signSync({ body, secret: other, timestamp: NOW })}`;
  for (const secret of [SECRET, other]) {
    const event = await verify({ body, headers: { 'X-Service-Timestamp': String(NOW), 'X-Service-Signature': header }, secret, now: NOW });
    assert.equal(event.type, 'alarm.created');
  }
});
