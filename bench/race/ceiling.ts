/**
 * The ceiling: the bare HTTP client with the same signing, no queue and no
 * store. undici's dispatch with a handler of its own, as Herald's worker
 * calls it, with as many connections as Herald's per-origin cap.
 */
import type { Dispatcher } from 'undici';
import { agent, backlog, contend, settings, signed } from './contender.ts';

const bodies = backlog(settings.deliveries);
const client = agent();
const url = new URL(settings.url);

class Request implements Dispatcher.DispatchHandler {
  constructor(private readonly next: () => void) {}
  onRequestStart(): void {}
  onResponseEnd(): void {
    this.next();
  }
  onResponseError(_c: unknown, err: Error): void {
    console.error(err);
    this.next();
  }
}

contend(
  async () => {},
  () => {
    let sent = 0;
    const next = (): void => {
      const body = bodies[sent++];
      if (body === undefined) return;
      client.dispatch({ origin: url.origin, path: url.pathname, method: 'POST', headers: signed(body), body }, new Request(next));
    };
    for (let i = 0; i < settings.concurrency; i++) next();
  },
  // No queue: each event is sent as it comes.
  (body) =>
    new Promise<void>((resolve) => client.dispatch({ origin: url.origin, path: url.pathname, method: 'POST', headers: signed(body), body }, new Request(resolve))),
);
