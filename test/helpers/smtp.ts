import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { freePort } from './processes';

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives, parsed (and refuses the recipients `refuse` names). A client killed
 * mid-conversation resets its connection: expected in the tests that kill workers, not a failure.
 */
export async function startSmtp(options: { refuse?: (recipient: string) => boolean } = {}): Promise<{ port: number; mails: ParsedMail[]; close(): Promise<void> }> {
  const mails: ParsedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    // a refused recipient gets the 550 real servers send, quoting the address
    onRcptTo(address, _session, callback) {
      if (!options.refuse?.(address.address)) return callback();
      callback(Object.assign(new Error(`<${address.address}>: Recipient address rejected: User unknown in virtual mailbox table`), { responseCode: 550 }));
    },
    onData(stream, _session, callback) {
      simpleParser(stream).then((m) => {
        mails.push(m);
        callback();
      }, callback);
    },
  });
  server.on('error', () => undefined);
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Polls `find` until it answers something (or throws after `timeoutMs`). */
export async function waitFor<T>(find: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
