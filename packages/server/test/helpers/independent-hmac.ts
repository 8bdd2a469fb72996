import { execFileSync } from 'node:child_process';

/**
 * HMAC-SHA256 by OpenSSL, a second implementation that shares no code with
 * Herald's signer: `v1=` + hex over `<timestamp>.<body>`.
 */
export function opensslSignature(secret: string, timestamp: string, body: Buffer): string {
  const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', secret, '-r'], { input: Buffer.concat([Buffer.from(`${timestamp}.`), body]) });
  return `v1=${out.toString().split(' ')[0]}`;
}
