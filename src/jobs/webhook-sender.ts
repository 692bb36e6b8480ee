import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import type { LogoutTransport, WebhookAttempt, WebhookTransport } from '../domain/ports';
import { isPrivateAddress } from '../domain/webhooks';

/**
 * One delivery of a webhook over HTTP (docs/webhooks.md#deliveries): signed as Standard Webhooks
 * sign (the `standardwebhooks` package, the specification's reference implementation), sent to an
 * address that is checked when it is connected to (never a private one unless the operator allows
 * it, whatever the name resolved to a moment before), with no redirect followed, 5 s to connect,
 * 10 s in all, and at most the first bytes of the answer read.
 */

/** The headers of a delivery: its id (stable across retries), its time (seconds), and one signature per live secret. */
export function signatureHeaders(secrets: readonly string[], messageId: string, at: Date, body: string): Record<string, string> {
  const signatures = secrets.map((s) => new Webhook(s).sign(messageId, at, body));
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

export interface SendOptions { allowPrivate: boolean; connectTimeoutMs?: number; totalTimeoutMs?: number; maxAnswerBytes?: number }

/** What an attempt came to: the receiver's status and first bytes, or why there was none. */
export type Attempt = WebhookAttempt;

/** The deliverer's transport: each delivery signed with its secrets and sent by `send`. */
export function webhookTransport(options: SendOptions): WebhookTransport {
  return {
    send: ({ url, secrets, messageId, at, body }) => send(url, signatureHeaders(secrets, messageId, at, body), body, options),
  };
}

/**
 * The back-channel logout transport (docs/openid-connect.md#back-channel-logout): a logout token
 * POSTed as a form, under the webhooks' rules (the address judged at the connection, no redirect
 * followed, the same time limits).
 */
export function logoutTransport(options: SendOptions): LogoutTransport {
  return {
    send: (url, logoutToken) => send(url, { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'Gatehouse-Logout/1', 'cache-control': 'no-store' },
      new URLSearchParams({ logout_token: logoutToken }).toString(), options),
  };
}

/** The name's addresses, every one judged: the connection goes to a public one only (or any, where private targets are allowed). */
const vettedLookup = (allowPrivate: boolean): LookupFunction => (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 4);
    const list = addresses as dns.LookupAddress[];
    const usable = allowPrivate ? list : list.filter((a) => !isPrivateAddress(a.address));
    if (usable.length === 0) {
      const refusal = Object.assign(new Error(`${hostname} resolves to a loopback, private, link-local or metadata address only`), { code: 'EPRIVATE' });
      return callback(refusal, '', 4);
    }
    if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
    callback(null, usable[0].address, usable[0].family);
  });
};

/**
 * Sends `body` to `url` with `headers`. A URL naming an IP address is judged before anything is
 * sent; a name is judged on the addresses it resolves to, at the connection. Never throws.
 */
export function send(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<Attempt> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  const connectTimeout = options.connectTimeoutMs ?? 5_000;
  const totalTimeout = options.totalTimeoutMs ?? 10_000;
  const maxAnswer = options.maxAnswerBytes ?? 1024;
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return resolve({ kind: 'refused', ms: ms(), reason: 'the URL cannot be read' });
    }
    const literal = target.hostname.replace(/^\[|\]$/g, '');
    if (!options.allowPrivate && (/^[\d.]+$/.test(literal) || literal.includes(':')) && isPrivateAddress(literal)) {
      return resolve({ kind: 'refused', ms: ms(), reason: 'the URL names a loopback, private, link-local or metadata address' });
    }
    const client = target.protocol === 'https:' ? https : target.protocol === 'http:' && options.allowPrivate ? http : undefined;
    if (!client) return resolve({ kind: 'refused', ms: ms(), reason: 'only https is delivered to' });
    let done = false;
    const finish = (attempt: Attempt) => {
      if (done) return;
      done = true;
      clearTimeout(total);
      resolve(attempt);
    };
    const request = client.request(target, {
      method: 'POST', agent: false, lookup: vettedLookup(options.allowPrivate),
      headers: { 'content-type': 'application/json', 'user-agent': 'Gatehouse-Webhooks/1', ...headers, 'content-length': String(Buffer.byteLength(body)) },
    });
    const total = setTimeout(() => {
      request.destroy();
      finish({ kind: 'refused', ms: ms(), reason: `no answer within ${totalTimeout / 1000} s` });
    }, totalTimeout);
    request.setTimeout(connectTimeout);
    request.on('socket', (socket) => {
      // connected in time, or given up: the overall limit applies from there
      const connect = setTimeout(() => {
        request.destroy();
        finish({ kind: 'refused', ms: ms(), reason: `no connection within ${connectTimeout / 1000} s` });
      }, connectTimeout);
      socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connect));
      socket.once('close', () => clearTimeout(connect));
    });
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answered = () => finish({ kind: 'answered', status: res.statusCode ?? 0, ms: ms(), answer: Buffer.concat(chunks).toString('utf8', 0, Math.min(size, maxAnswer)) });
      res.on('data', (chunk: Buffer) => {
        if (size < maxAnswer) chunks.push(chunk);
        size += chunk.length;
        // enough read: the rest is not waited for
        if (size >= maxAnswer) {
          answered();
          res.destroy();
        }
      });
      res.on('end', answered);
      res.on('error', answered);
    });
    request.on('error', (err: NodeJS.ErrnoException) => finish({
      kind: 'refused', ms: ms(),
      reason: err.code === 'EPRIVATE' ? err.message : err.code ? `${err.code}` : 'the connection failed',
    }));
    request.end(body);
  });
}
