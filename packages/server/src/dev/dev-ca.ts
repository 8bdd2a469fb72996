import * as x509 from '@peculiar/x509';
import { createPrivateKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/**
 * The development certificate authority of `herald start --dev`: made once
 * per data directory, it signs the certificate of `herald listen`'s local
 * HTTPS receiver, and Herald trusts it (for loopback addresses only, see
 * dev-trust.ts) so a newcomer sees a verified delivery without openssl or
 * NODE_EXTRA_CA_CERTS. docs/decisions/0015-development-mode.md says why.
 */
export interface DevCa {
  /** The CA certificate, PEM. */
  certPem: string;
  /** Its private key, PKCS#8 PEM. Only `herald listen` needs it. */
  keyPem: string;
}

/** Where the CA lives in a data directory. */
export function devCaPaths(dataDir: string): { dir: string; cert: string; key: string } {
  const dir = join(dataDir, 'dev-ca');
  return { dir, cert: join(dir, 'ca.pem'), key: join(dir, 'ca-key.pem') };
}

/** No development CA in the data directory: Herald has not run with --dev there. */
export class DevCaMissingError extends Error {
  readonly code = 'HERALD_DEV_CA_MISSING';
  constructor(dataDir: string) {
    super(
      `no development CA in ${devCaPaths(dataDir).dir}; start Herald with: herald start --dev ` +
        '(with the same --data-dir / HERALD_DATA_DIR as this command), then run this again',
    );
    this.name = 'DevCaMissingError';
  }
}

// Web Crypto's ECDSA P-256: small keys, fast to make, accepted by every TLS stack.
const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
const crypto = webcrypto;
type CryptoKey = webcrypto.CryptoKey;

function provider(): void {
  // The library's default provider is globalThis.crypto, which Node 20 has; set it anyway so nothing depends on a global.
  x509.cryptoProvider.set(crypto as never);
}

async function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return crypto.subtle.generateKey(EC, true, ['sign', 'verify']);
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', key));
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'pem', type: 'pkcs8' }).toString();
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
  return crypto.subtle.importKey('pkcs8', der, EC, false, ['sign']);
}

/** A positive serial number of 16 random bytes (RFC 5280: at most 20 octets). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

async function createDevCa(now: Date): Promise<DevCa> {
  provider();
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=Herald development CA (${randomBytes(4).toString('hex')})`,
    notBefore: new Date(now.getTime() - DAY_MS),
    notAfter: new Date(now.getTime() + 10 * 365 * DAY_MS),
    signingAlgorithm: EC,
    keys,
    extensions: [
      // pathLen 0: it signs leaf certificates only, never another CA (dev-trust.ts relies on this).
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await keyPem(keys.privateKey) };
}

/**
 * The data directory's development CA, made on first use: directory 0700,
 * files 0600, and never replaced while present (a `herald listen` started
 * earlier keeps working). The pair is written into a temporary directory
 * that is then renamed into place in one step, so a reader never sees half
 * a pair, and of two processes starting at once (workers sharing a data
 * directory) one CA wins and both use it.
 *
 * @example
 *   const { certPem } = await loadOrCreateDevCa('/var/lib/herald'); // /var/lib/herald/dev-ca/ca.pem
 */
export async function loadOrCreateDevCa(dataDir: string, now = new Date()): Promise<DevCa> {
  const paths = devCaPaths(dataDir);
  if (existsSync(paths.cert)) return readDevCa(dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const ca = await createDevCa(now);
  const tmp = mkdtempSync(join(dataDir, '.dev-ca-')); // 0700
  try {
    writeFileSync(join(tmp, basename(paths.key)), ca.keyPem, { mode: 0o600 });
    writeFileSync(join(tmp, basename(paths.cert)), ca.certPem, { mode: 0o600 });
    renameSync(tmp, paths.dir);
    return ca;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    // Another process put its CA in place first: use that one.
    if (['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) return readDevCa(dataDir);
    throw err;
  }
}

/** Reads the development CA, or throws DevCaMissingError. */
export function readDevCa(dataDir: string): DevCa {
  const paths = devCaPaths(dataDir);
  if (!existsSync(paths.cert) || !existsSync(paths.key)) throw new DevCaMissingError(dataDir);
  return { certPem: readFileSync(paths.cert, 'utf8'), keyPem: readFileSync(paths.key, 'utf8') };
}

/**
 * A server certificate signed by the development CA, with a fresh key; valid
 * for a week. `herald listen` makes one for `localhost`, 127.0.0.1 and ::1 on
 * each run, so it is never stored.
 *
 * @example
 *   const { certPem, keyPem } = await mintServerCertificate(readDevCa(dataDir));
 */
export async function mintServerCertificate(
  ca: DevCa,
  { dnsNames = ['localhost'], ips = ['127.0.0.1', '::1'], now = new Date() }: { dnsNames?: string[]; ips?: string[]; now?: Date } = {},
): Promise<{ certPem: string; keyPem: string }> {
  provider();
  const issuer = new x509.X509Certificate(ca.certPem);
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${dnsNames[0] ?? ips[0]}`,
    issuer: issuer.subject,
    notBefore: new Date(now.getTime() - DAY_MS),
    notAfter: new Date(now.getTime() + 7 * DAY_MS),
    signingAlgorithm: EC,
    publicKey: keys.publicKey,
    signingKey: await importKey(ca.keyPem),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([...dnsNames.map((value) => ({ type: 'dns' as const, value })), ...ips.map((value) => ({ type: 'ip' as const, value }))]),
      await x509.AuthorityKeyIdentifierExtension.create(issuer),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await keyPem(keys.privateKey) };
}

/** Whether `certDer` was issued by the CA `caPem` (name and signature both checked). */
export function issuedBy(certDer: Buffer, caPem: string): boolean {
  const ca = new X509Certificate(caPem);
  const cert = new X509Certificate(certDer);
  return cert.checkIssued(ca) && cert.verify(ca.publicKey);
}
