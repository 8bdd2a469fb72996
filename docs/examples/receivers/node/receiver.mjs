// A Herald webhook receiver on Node.js with @herald/verify (until it is on npm, install it from a
// Herald checkout: npm pack -w @herald/verify, then npm install ./herald-verify-0.1.0.tgz).
//
//   HERALD_WEBHOOK_SECRET=whsec_... PORT=8000 node receiver.mjs
import { createServer } from 'node:http';
import { verify, WebhookVerificationError } from '@herald/verify';

const secrets = [process.env.HERALD_WEBHOOK_SECRET, process.env.HERALD_WEBHOOK_SECRET_PREVIOUS].filter(Boolean);

async function receive(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk); // the raw bytes, before any JSON parser
  try {
    const event = await verify({ body: Buffer.concat(chunks), headers: req.headers, secrets });
    // Skip event ids you have processed already; ignore types you do not know.
    console.log('received', event.type, event.id);
    return [204];
  } catch (error) {
    if (error instanceof WebhookVerificationError) return [error.status, error.message]; // 400
    throw error;
  }
}

createServer((req, res) => {
  receive(req).then(
    ([status, text]) => res.writeHead(status, { 'content-type': 'text/plain' }).end(text),
    (error) => {
      console.error(error);
      res.writeHead(500).end(); // Herald retries
    },
  );
}).listen(Number(process.env.PORT ?? 8000), '127.0.0.1');
