import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Whether pysaml2 and xmlsec1 are here (Debian's python3-pysaml2 and xmlsec1; .ci/run installs them). */
export const SAML_PEERS = fs.existsSync('/usr/lib/python3/dist-packages/saml2') && fs.existsSync('/usr/bin/xmlsec1');
export const SAML_PEERS_MISSING = 'the SAML tests need pysaml2 and xmlsec1 (apt-get install python3-pysaml2 xmlsec1)';

/**
 * A SAML service provider written by others: pysaml2 (Debian's python3-pysaml2, signing and
 * verifying with xmlsec1) in a process of its own per call (test/helpers/saml-sp.py).
 */
export interface SpConfig {
  entity_id: string; acs: string; slo: string; key_file: string; cert_file: string; idp_metadata?: string;
  sign_requests?: boolean; allow_unsolicited?: boolean; name_id_formats?: string[];
}

/** A pysaml2 peer's process (started on first use): one JSON command a line, one answer a line. */
function peer(script: string) {
  let child: ChildProcessWithoutNullStreams | undefined;
  const waiting: ((line: string) => void)[] = [];
  return {
    async call<T>(command: Record<string, unknown>): Promise<T> {
      if (!child) {
        child = spawn('/usr/bin/python3', [path.join(__dirname, script)], { stdio: ['pipe', 'pipe', 'pipe'] });
        createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(line));
        child.stderr.on('data', (d: Buffer) => { if (process.env.SAML_PEER_DEBUG) process.stderr.write(d); });
      }
      const answer = new Promise<string>((resolve) => waiting.push(resolve));
      child.stdin.write(`${JSON.stringify(command)}\n`);
      const parsed = JSON.parse(await answer) as T & { fatal?: string };
      if (parsed.fatal) throw new Error(`the ${script} peer failed: ${parsed.fatal}`);
      return parsed;
    },
    async stop(): Promise<void> {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.stdin.end();
      running.kill();
      await exited;
    },
  };
}

const sp = peer('saml-sp.py');
const idp = peer('saml-idp.py');

/** Sends one command to the service provider's process; answers its JSON answer. */
export const pysaml2 = <T = Record<string, unknown>>(command: Record<string, unknown>): Promise<T> => sp.call<T>(command);
/** Sends one command to the identity provider's process (test/helpers/saml-idp.py). */
export const pysaml2Idp = <T = Record<string, unknown>>(command: Record<string, unknown>): Promise<T> => idp.call<T>(command);

/** Stops the pysaml2 processes. */
export async function stopPysaml2(): Promise<void> {
  await Promise.all([sp.stop(), idp.stop()]);
}

/** A key and a self-signed certificate for a test service provider (openssl), in a directory of their own. */
export async function spKeys(): Promise<{ key_file: string; cert_file: string; dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-saml-'));
  const key_file = path.join(dir, 'sp.key');
  const cert_file = path.join(dir, 'sp.crt');
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key_file, '-out', cert_file, '-days', '30', '-subj', '/CN=test service provider']);
  return { key_file, cert_file, dir };
}

/** The SAMLResponse and RelayState of the page that posts a response to a service provider. */
export function postedResponse(html: string): { action: string; samlResponse: string; relayState?: string } {
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1];
  const samlResponse = /name="SAMLResponse" value="([^"]*)"/.exec(html)?.[1];
  if (!action || !samlResponse) throw new Error(`no SAML response in:\n${html.replace(/<style>[\s\S]*?<\/style>/, '').slice(0, 1500)}`);
  const relay = /name="RelayState" value="([^"]*)"/.exec(html)?.[1];
  const unescape = (v: string) => v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  return { action: unescape(action), samlResponse: unescape(samlResponse), ...(relay !== undefined && { relayState: unescape(relay) }) };
}
