import { execFileSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../../src/domain/webhooks';
import { send, signatureHeaders } from '../../src/jobs/webhook-sender';
import { freePort } from '../helpers/processes';

// docs/webhooks.md#deliveries: a delivery as a receiver sees it, verified by the `standardwebhooks`
// package and by openssl's HMAC (not Gatehouse's code); and the addresses it never connects to.

interface Seen { headers: http.IncomingHttpHeaders; body: string }
let receiver: http.Server;
let port: number;
const seen: Seen[] = [];
let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.writeHead(204).end();

beforeAll(async () => {
  port = await freePort();
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => {
  receiver.closeAllConnections();
  receiver.close(() => resolve());
}));

/** openssl's HMAC-SHA256 of `id.timestamp.body` with the secret's bytes, in base64. */
const opensslSignature = (secret: string, id: string, timestamp: string, body: string) => execFileSync('openssl', [
  'dgst', '-sha256', '-mac', 'HMAC', '-macopt', `hexkey:${Buffer.from(secret.slice('whsec_'.length), 'base64').toString('hex')}`, '-binary',
], { input: `${id}.${timestamp}.${body}` }).toString('base64');

it('is signed as Standard Webhooks say: the reference package and openssl agree, with both secrets while a rotation overlaps', async () => {
  const [old, current] = [newWebhookSecret(), newWebhookSecret()];
  const body = JSON.stringify({ type: 'user.created', timestamp: new Date().toISOString(), data: { id: 42 } });
  const headers = signatureHeaders([current, old], 'msg_2Kd8', new Date(), body);
  const attempt = await send(`http://127.0.0.1:${port}/hook`, headers, body, { allowPrivate: true });
  expect(attempt).toMatchObject({ kind: 'answered', status: 204 });
  const got = seen.at(-1)!;
  expect(got.body).toBe(body);
  expect(got.headers['content-type']).toBe('application/json');
  const wire = { 'webhook-id': String(got.headers['webhook-id']), 'webhook-timestamp': String(got.headers['webhook-timestamp']), 'webhook-signature': String(got.headers['webhook-signature']) };
  // a receiver with only the new secret, or only the old one, verifies
  expect(new Webhook(current).verify(got.body, wire)).toEqual(JSON.parse(body));
  expect(new Webhook(old).verify(got.body, wire)).toEqual(JSON.parse(body));
  expect(() => new Webhook(newWebhookSecret()).verify(got.body, wire)).toThrow();
  expect(() => new Webhook(current).verify(`${got.body} `, wire)).toThrow();
  const signatures = wire['webhook-signature'].split(' ');
  expect(signatures).toEqual([`v1,${opensslSignature(current, 'msg_2Kd8', wire['webhook-timestamp'], body)}`, `v1,${opensslSignature(old, 'msg_2Kd8', wire['webhook-timestamp'], body)}`]);
});

it('never connects to loopback, private, link-local or metadata addresses, nor to a name that resolves to one, unless allowed', async () => {
  // a listener on the receiver's address and port counts every connection, made or not
  const trapPort = await freePort();
  let connections = 0;
  const trap = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => trap.listen(trapPort, '127.0.0.1', resolve));
  try {
    for (const url of [`https://127.0.0.1:${trapPort}/`, `https://localhost:${trapPort}/`, `https://[::1]:${trapPort}/`, 'https://10.0.0.1/', 'https://169.254.169.254/latest/meta-data',
      `https://[::ffff:127.0.0.1]:${trapPort}/`, `http://127.0.0.1:${trapPort}/`]) {
      const attempt = await send(url, {}, '{}', { allowPrivate: false, connectTimeoutMs: 500, totalTimeoutMs: 1000 });
      expect({ url, kind: attempt.kind }).toEqual({ url, kind: 'refused' });
    }
    expect(connections).toBe(0);
  } finally {
    await new Promise<void>((resolve) => trap.close(() => resolve()));
  }
});

it('follows no redirect, reads the first bytes of a long answer, and gives up on a receiver that does not answer', async () => {
  answer = (_req, res) => res.writeHead(302, { Location: `http://127.0.0.1:${port}/elsewhere` }).end();
  const before = seen.length;
  expect(await send(`http://127.0.0.1:${port}/hook`, {}, '{}', { allowPrivate: true })).toMatchObject({ kind: 'answered', status: 302 });
  expect(seen.length).toBe(before + 1);

  answer = (_req, res) => res.writeHead(500).end('x'.repeat(1_000_000));
  const long = await send(`http://127.0.0.1:${port}/hook`, {}, '{}', { allowPrivate: true, maxAnswerBytes: 100 });
  expect(long).toMatchObject({ kind: 'answered', status: 500 });
  expect(long.kind === 'answered' && long.answer).toBe('x'.repeat(100));

  answer = () => undefined; // never answers
  const silent = await send(`http://127.0.0.1:${port}/hook`, {}, '{}', { allowPrivate: true, totalTimeoutMs: 300 });
  expect(silent).toMatchObject({ kind: 'refused', reason: 'no answer within 0.3 s' });
  expect(silent.ms).toBeLessThan(2_000);
  answer = (_req, res) => res.writeHead(204).end();
});
