/**
 * A BullMQ 5 sender, as its documentation has it: jobs queued with
 * `addBulk`, each with 7 attempts and exponential back-off, and one Worker
 * with a concurrency of its own. BullMQ keeps each job in Redis with its
 * attempts made and its last answer (the return value, or the failure). The
 * race runs it against a Redis of its own, with or without the append-only
 * file. Tuning: a concurrency of 64 (Herald's per-origin cap), completed
 * jobs kept.
 */
import { Queue, Worker } from 'bullmq';
import { agent, backlog, contend, destination, send, settings } from './contender.ts';

const QUEUE = 'webhooks';
const url = new URL(settings.redisUrl);
const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
const client = agent();
const queue = new Queue(QUEUE, { connection });
const retries = { attempts: 7, backoff: { type: 'exponential', delay: 1000 } };

contend(
  async () => {
    const bodies = backlog(settings.deliveries);
    for (let i = 0; i < bodies.length; i += 1000) {
      await queue.addBulk(bodies.slice(i, i + 1000).map((body, j) => ({ name: 'deliver', data: { body, url: destination(i + j) }, opts: retries })));
    }
  },
  () => {
    new Worker<{ body: string; url: string }>(
      QUEUE,
      async (job) => {
        const r = await send(client, job.data.body, job.data.url);
        if (r.status === null || r.status >= 300) throw new Error(r.error ?? `answered ${r.status}`);
        return { status: r.status };
      },
      { connection, concurrency: settings.concurrency },
    );
  },
  (body) => queue.add('deliver', { body, url: settings.url }, retries),
);
