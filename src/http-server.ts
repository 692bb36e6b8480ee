import { randomUUID } from 'node:crypto';
import http, { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type express from 'express';
import type { Logger } from './logger';

export interface HttpLimits {
  /** Time a client has to send the whole header block. */
  headersTimeoutMs: number;
  /** Time a client has to send the whole request, body included. */
  requestTimeoutMs: number;
}

/** Node's parser failures → the HTTP status and a message the client can act on. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'the request headers are too large; send fewer or shorter headers'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request was not received in time; send it again, all at once'],
  HPE_UNEXPECTED_CONTENT_LENGTH: [400, 'the request has conflicting Content-Length and Transfer-Encoding headers; send one'],
  HPE_INVALID_CONTENT_LENGTH: [400, 'the request has an invalid or repeated Content-Length header'],
  HPE_INVALID_HEADER_TOKEN: [400, 'a request header has characters HTTP does not allow'],
  HPE_INVALID_METHOD: [400, 'the request method is not valid HTTP'],
};

/** The spec's error body as a raw HTTP/1.1 response, for failures before Express sees a request. */
function rawError(status: number, description: string): string {
  const body = JSON.stringify({
    stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'request', error_description: description,
    request_id: randomUUID().replace(/-/g, '').slice(0, 16),
  });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`;
}

export interface GracefulServer extends http.Server {
  /**
   * Stops and resolves once every connection is closed: a connection between requests closes at
   * once; a response under way is finished, says `Connection: close` and ends its connection; the
   * listener keeps accepting for `graceMs` (connections a client opened before the stop may still
   * wait in the backlog), answering each with `Connection: close`, then closes, and a connection
   * whose request has not been read yet gets `graceMs` more to deliver it. A request a client sent
   * before the stop is answered.
   */
  closeGracefully(graceMs: number): Promise<void>;
}

/**
 * The api's HTTP server: slow clients get `headersTimeoutMs` for their headers and
 * `requestTimeoutMs` for the whole request (checked every second, not Node's default 30 s), and
 * requests Node's parser refuses (bad header bytes, conflicting lengths, oversized headers, a
 * timeout) get the spec's JSON error body instead of an empty 400.
 */
export function createHttpServer(app: express.Express, limits: HttpLimits, logger: Logger): GracefulServer {
  const server = http.createServer({ connectionsCheckingInterval: 1_000, requestTimeout: limits.requestTimeoutMs, headersTimeout: limits.headersTimeoutMs }, app);
  server.keepAliveTimeout = 65_000;

  // what a graceful stop needs to know of each connection: whether it has a response under way,
  // and whether it has had a request yet (a fresh one may hold a request not read yet)
  const open = new Set<Socket>();
  const answering = new Map<Socket, http.ServerResponse>();
  const served = new WeakSet<Socket>();
  let closing = false;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    answering.set(socket, res);
    served.add(socket);
    if (closing) res.shouldKeepAlive = false;
    res.once('close', () => {
      answering.delete(socket);
      if (closing) socket.end();
    });
  });

  const graceful = server as GracefulServer;
  graceful.closeGracefully = (graceMs: number) => new Promise<void>((resolve) => {
    closing = true;
    for (const socket of open) {
      const res = answering.get(socket);
      // a response under way says Connection: close and its connection ends after it
      if (res) {
        if (!res.headersSent) res.shouldKeepAlive = false;
      } else if (served.has(socket)) {
        socket.end(); // between two requests of a keep-alive connection
      }
    }
    // connections still in the listen backlog were opened before the stop: closing the listener
    // now would reset them, so it keeps accepting for graceMs (each answered with Connection: close)
    setTimeout(() => {
      server.close(() => resolve());
      // then a connection with no request yet gets graceMs more to deliver one
      setTimeout(() => {
        for (const socket of open) if (!answering.has(socket)) socket.destroy();
      }, graceMs).unref();
    }, graceMs).unref();
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    const code = err.code ?? '';
    if (code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const [status, description] = CLIENT_ERRORS[code] ?? [400, 'the request is not valid HTTP/1.1'];
    logger.info({ status, code }, 'request refused by the HTTP parser');
    socket.end(rawError(status, description));
  });
  return graceful;
}
