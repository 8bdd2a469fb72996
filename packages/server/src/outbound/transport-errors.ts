import { errors as undiciErrors } from 'undici';
import type { TransportErrorKind } from '../core/outcome.ts';

const TLS_MESSAGES: Record<string, string> = {
  CERT_HAS_EXPIRED: 'TLS: certificate has expired',
  CERT_NOT_YET_VALID: 'TLS: certificate is not yet valid',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS: self-signed certificate is not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS: certificate chain ends in an untrusted self-signed certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS: certificate is not signed by a trusted authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS: certificate issuer is unknown (missing intermediate certificate?)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: certificate does not match the host name',
};

/** Turns whatever undici or the socket threw into a kind and a sentence. */
export function describeTransportError(
  err: unknown,
  timeoutMs: number,
  how: { aborted: boolean; timedOut: boolean },
): { kind: TransportErrorKind; message: string } {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code ?? '';
  if (code === 'HERALD_ADDRESS_REFUSED') return { kind: 'address_refused', message: e.message };
  if (how.aborted) return { kind: 'aborted', message: 'aborted: Herald shut down before the receiver answered' };
  if (how.timedOut || e?.name === 'TimeoutError' || e?.name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return { kind: 'timeout', message: `timed out after ${timeoutMs / 1000} s` };
  }
  if (code === 'ECONNREFUSED') return { kind: 'connection_refused', message: 'connection refused' };
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || e instanceof undiciErrors.SocketError) {
    return { kind: 'connection_reset', message: 'connection closed by the receiver before it answered' };
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return { kind: 'dns', message: `DNS: host not found (${code})` };
  }
  if (TLS_MESSAGES[code]) return { kind: 'tls', message: TLS_MESSAGES[code]! };
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /certificate|SSL|TLS/i.test(e?.message ?? '')) {
    return { kind: 'tls', message: `TLS: ${e?.message ?? code}` };
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return { kind: 'network', message: 'host unreachable' };
  return { kind: 'network', message: `network error: ${e?.message ?? String(err)}${code ? ` (${code})` : ''}` };
}
