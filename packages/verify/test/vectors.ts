import { readFileSync } from 'node:fs';

export interface Vector {
  name: string;
  secret: string;
  timestamp: number;
  body: Uint8Array;
  signature: string;
}

/** The one file of signature test vectors, generated with Python's `hmac`. */
export const VECTORS_PATH = new URL('./vectors.json', import.meta.url);

export function loadVectors(): Vector[] {
  const file = JSON.parse(readFileSync(VECTORS_PATH, 'utf8')) as {
    vectors: Array<{ name: string; secret: string; timestamp: number; body_base64: string; signature: string }>;
  };
  return file.vectors.map((v) => ({ ...v, body: new Uint8Array(Buffer.from(v.body_base64, 'base64')) }));
}
