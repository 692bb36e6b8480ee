import net from 'node:net';
import express from 'express';
import { createHttpServer, type GracefulServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';

// What a stop (SIGTERM) does to the connections of the api's HTTP server

let server: GracefulServer;
let port: number;
let release: () => void = () => undefined;

beforeEach(async () => {
  const app = express();
  app.get('/quick', (_req, res) => void res.json({ stat: 'ok' }));
  // a response that waits, as a sign-in waits for argon2
  app.get('/slow', (_req, res) => void new Promise<void>((r) => (release = r)).then(() => res.json({ stat: 'ok', slow: true })));
  server = createHttpServer(app, { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000 }, createLogger('silent'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as net.AddressInfo).port;
});
afterEach(() => server.close());

/** A raw client connection: what it received, and whether the server closed it. */
async function connect() {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((r, j) => {
    socket.once('connect', r);
    socket.once('error', j);
  });
  let received = '';
  socket.on('data', (d) => (received += d));
  socket.on('error', () => undefined);
  const ended = new Promise<void>((r) => socket.once('close', () => r()));
  return { socket, ended, received: () => received, send: (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`) };
}
const until = async (done: () => boolean) => {
  while (!done()) await new Promise((r) => setTimeout(r, 10));
};

it('a request sent on a connection opened before the stop, not read yet, is answered (Connection: close)', async () => {
  const client = await connect();
  const stopped = server.closeGracefully(300);
  client.send('/quick');
  await client.ended;
  expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK/);
  expect(client.received()).toMatch(/\r\nConnection: close\r\n/i);
  await stopped;
});

it('a connection still in the backlog when the stop begins (accepted a moment later) is answered too', async () => {
  const stopped = server.closeGracefully(300);
  const late = await connect();
  late.send('/quick');
  await late.ended;
  expect(late.received()).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*\r\nConnection: close\r\n/i);
  await stopped;
  // and once the listener is closed, nothing more is accepted
  await expect(connect()).rejects.toThrow();
});

it('a response under way is finished and its connection ends; an idle keep-alive connection ends at once; a silent one after the grace', async () => {
  const busy = await connect();
  busy.send('/slow');
  const idle = await connect();
  idle.send('/quick');
  await until(() => idle.received().includes('"stat":"ok"'));
  const silent = await connect();
  const stopped = server.closeGracefully(300);
  await idle.ended; // between two requests: closed without waiting
  expect(busy.socket.destroyed).toBe(false);
  release();
  await busy.ended;
  expect(busy.received()).toContain('"slow":true');
  expect(busy.received()).toMatch(/\r\nConnection: close\r\n/i);
  await silent.ended; // never sent anything: closed after the grace
  expect(silent.received()).toBe('');
  await stopped;
});
