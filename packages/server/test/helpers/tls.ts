import { readFileSync } from 'node:fs';

const dir = new URL('../fixtures/tls/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, dir), 'utf8');

/** The test certificate authority and certificates (see fixtures/tls/README.md). */
export const TLS = {
  ca: read('ca.pem'),
  key: read('localhost-key.pem'),
  cert: read('localhost.pem'),
  expiredCert: read('expired.pem'),
  untrustedCert: read('untrusted.pem'),
};
