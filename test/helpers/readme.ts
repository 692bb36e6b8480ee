import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { alive, ROOT } from './processes';

/**
 * The README, run as a newcomer runs it: every `sh` block, command by command, in one shell whose
 * variables carry from block to block; each answer the README shows (a `# …` comment right under
 * a command) is compared with what the command printed.
 *
 * How an answer reads:
 * - `…` (with the spaces around it) stands for anything: the README shortens answers;
 * - a timestamp (`2026-11-21 06:17:52.332000 +0000`) stands for any timestamp of that shape, and a
 *   hex prefix cut by `…` (`556557cc-…`) for any hex value;
 * - a placeholder (`TOKEN`, `CODE`, `UUID`, …; the list is `PLACEHOLDERS`) captures the value
 *   printed there, and later commands get that value where they say the placeholder; one that
 *   names the same thing throughout (`STABLE`: a record's uuid, a time it showed) must print the
 *   value it already has, where others (a new token, a new code) take the new one;
 * - a remark after two spaces and `(` or `→` is prose, and so is a comment line in parentheses;
 * - every other character is literal.
 * A command with no answer must exit 0 and, when it prints a JSON object with `stat`, answer `ok`.
 */

export interface Command { kind: 'command'; line: number; text: string; answer?: { line: number; text: string } }
export interface Prose { kind: 'prose'; line: number; text: string }
export interface Block { line: number; lang: string; headings: string[]; steps: (Command | Prose)[] }

/** The README's stand-ins for values a reader copies from an earlier answer, with where they come from. */
export const PLACEHOLDERS: Record<string, string> = {
  OWNER_ID: 'the owner client of the application local (npx gatehouse clients:list)',
  OWNER_SECRET: 'its secret',
  LOGIN_CLIENT_ID: 'the login client of the application local (npx gatehouse clients:list)',
  LOGIN_SECRET: 'its secret',
  CLIENT_ID: 'a client that /clients/add answered',
  TOKEN: 'an access token a sign-in answered',
  NEW_TOKEN: 'an access token /oauth/refresh_access_token answered',
  CODE: 'an authorization code (an email link, a redirect, /access/getAuthorizationCode)',
  A: 'an access token /oauth/token answered', R: 'its refresh token',
  A1: 'an access token /oauth/token answered', R1: 'its refresh token',
  A2: 'the access token of a refresh', R2: 'its refresh token',
  VC: 'a verification code',
  UUID: 'a record\'s uuid',
  ACCESS_TOKEN: 'an access token /access/getAccessToken answered',
  SECRET: 'the secret /oauth/totp_enroll_native answered',
  MFA: 'the mfa_token of a sign-in waiting for its second factor',
  WHEN: 'a timestamp a record showed',
  ORG: 'an organization\'s id /organizations/create answered',
};

/** Placeholders that name one thing throughout: once bound, an answer must show the same value. */
export const STABLE = new Set(['UUID', 'WHEN']);

/** The fenced blocks of a Markdown text, with the headings they stand under; `sh` blocks parsed into steps. */
export function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  const headings: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const heading = /^(#{1,6}) (.+)$/.exec(lines[i]);
    if (heading) {
      headings.length = heading[1].length - 1;
      headings[heading[1].length - 1] = heading[2];
      continue;
    }
    const fence = /^(\s*)```(\S*)/.exec(lines[i]);
    if (!fence) continue;
    const indent = fence[1].length;
    const body: { line: number; text: string }[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++) body.push({ line: j + 1, text: lines[j].slice(indent) });
    blocks.push({ line: i + 1, lang: fence[2], headings: headings.filter(Boolean), steps: fence[2] === 'sh' ? shellSteps(body) : [] });
    i = j;
  }
  return blocks;
}

/** An answer without its remark: the text after two spaces and `(` or `→` is prose. */
const withoutRemark = (s: string) => s.replace(/\s{2,}(?:\(|→).*$/, '').trim();

function shellSteps(body: { line: number; text: string }[]): (Command | Prose)[] {
  const steps: (Command | Prose)[] = [];
  let above: Command | undefined; // the command right above, while no blank line came between
  for (let k = 0; k < body.length;) {
    const { line, text } = body[k];
    if (!text.trim()) {
      above = undefined;
      k++;
    } else if (text.startsWith('#')) {
      const said = text.replace(/^# ?/, '');
      k++;
      if (above && !above.answer && !said.startsWith('(')) {
        let answer = withoutRemark(said);
        // continuation lines of an answer are indented past the `# `
        for (; k < body.length && /^#\s{2,}\S/.test(body[k].text); k++) answer += withoutRemark(body[k].text.replace(/^#\s+/, ''));
        above.answer = { line, text: answer };
      } else {
        steps.push({ kind: 'prose', line, text: said });
        above = undefined;
      }
    } else {
      let command = text;
      // a command goes on past a line ending in `\` or inside a quoted string
      for (; (command.endsWith('\\') || insideQuotes(command)) && k + 1 < body.length; k++) command += `\n${body[k + 1].text}`;
      k++;
      const step: Command = { kind: 'command', line, text: command };
      // an answer written after the command on its own line
      const trailing = /\s#\s+((?:\{|HTTP\/).*)$/.exec(command.split('\n').pop()!);
      if (trailing) step.answer = { line, text: withoutRemark(trailing[1]) };
      steps.push(step);
      above = step;
    }
  }
  return steps;
}

/** Whether a shell text ends inside a quoted string (a `# comment` outside quotes ends at its line). */
function insideQuotes(text: string): boolean {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === "'") {
      if (c === "'") quote = '';
    } else if (c === '\\') {
      i++;
    } else if (quote === '"') {
      if (c === '"') quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]))) {
      const eol = text.indexOf('\n', i);
      if (eol < 0) return false;
      i = eol;
    }
  }
  return quote !== '';
}

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const TIMESTAMP = '\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)? [+-]\\d{4}';

/** The regular expression an answer stands for (see the top of this file); placeholders are named groups. */
export function answerPattern(expected: string, bound: ReadonlyMap<string, string> = new Map(), names: ReadonlySet<string> = new Set(Object.keys(PLACEHOLDERS))): RegExp {
  // a record's id is opaque (a Galera cluster hands out 1, 4, 7, …): any whole number stands for the README's
  const token = /(\s*…\s*)|(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? [+-]\d{4})|([0-9a-f]{4,}-?…)|("id":\d+)|\b([A-Z][A-Z0-9_]*)\b/g;
  const seen = new Set<string>();
  let source = '';
  let at = 0;
  for (const m of expected.matchAll(token)) {
    source += literal(expected.slice(at, m.index));
    at = m.index + m[0].length;
    if (m[1]) source += '[\\s\\S]*?';
    else if (m[2]) source += TIMESTAMP;
    else if (m[3]) source += '[0-9a-f][0-9a-f-]*';
    else if (m[4]) source += '"id":\\d+';
    else if (names.has(m[5]) && expected[m.index - 1] !== '$') {
      if (STABLE.has(m[5]) && bound.has(m[5])) {
        source += literal(bound.get(m[5])!);
      } else if (seen.has(m[5])) {
        source += `\\k<${m[5]}>`;
      } else {
        seen.add(m[5]);
        const quoted = expected[m.index - 1] === '"' && expected[at] === '"';
        source += `(?<${m[5]}>${quoted ? '[^"]+' : '[^"&\\s,}]+'})`;
      }
    } else source += literal(m[0]);
  }
  source += literal(expected.slice(at));
  return new RegExp(`^${source}$`);
}

/** A command's text with the values of the placeholders it names (never a shell variable or an assignment's name). */
export function withValues(command: string, values: ReadonlyMap<string, string>, line: number): string {
  return command.replace(/(?<![$\w{])\b([A-Z][A-Z0-9_]*)\b(?!=)/g, (word: string) => {
    if (!(word in PLACEHOLDERS)) return word;
    const value = values.get(word);
    if (value === undefined) throw new Error(`README line ${line} uses ${word} (${PLACEHOLDERS[word]}) before any answer above it names one`);
    return value;
  });
}

/**
 * `npx gatehouse …` runs this project's bin/gatehouse.js (package.json's `bin`) with the `node` of
 * PATH. The first one in a shell goes through npx itself; the others run it so directly, without
 * npm's own start, which took 1-2 s a command on a loaded 2-core machine (the guide has about fifty).
 * npx runs the project's `prepare` the first time (a rebuild of dist/, removed first), which the
 * test files running beside this one would find missing: that one runs without scripts, as dist/
 * is built already.
 */
const NPX_GATEHOUSE = `npx() { if [ "$1" = gatehouse ] && [ -n "\${__npx_seen:-}" ]; then shift; node ${JSON.stringify(path.join(ROOT, 'bin/gatehouse.js'))} "$@"; `
  + `elif [ "$1" = gatehouse ]; then __npx_seen=1; npm_config_ignore_scripts=true command npx "$@"; else command npx "$@"; fi; }\n`;

/**
 * One bash, fed commands on its standard input: variables and exports carry from one command to
 * the next, as in a terminal. A command reads nothing from this pipe (its stdin is /dev/null).
 */
export class Shell {
  private readonly child: ChildProcess;
  private out = '';
  private err = '';
  constructor(readonly cwd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.out += d));
    this.child.stderr!.on('data', (d) => (this.err += d));
    this.child.stdin!.write(NPX_GATEHOUSE);
  }

  async run(command: string, timeoutMs = 60_000): Promise<{ status: number; stdout: string; stderr: string }> {
    const mark = `__done_${randomBytes(6).toString('hex')}`;
    this.out = '';
    this.err = '';
    this.child.stdin!.write(`{\n${command}\n} < /dev/null; printf '\\n%s %s\\n' ${mark} $?; printf '\\n%s\\n' ${mark} >&2\n`);
    const end = Date.now() + timeoutMs;
    const done = new RegExp(`\\n${mark} (\\d+)\\n`);
    for (;;) {
      const m = done.exec(this.out);
      if (m && this.err.includes(`\n${mark}\n`)) {
        return { status: Number(m[1]), stdout: this.out.slice(0, m.index).trim(), stderr: this.err.slice(0, this.err.indexOf(`\n${mark}\n`)).trim() };
      }
      if (this.child.exitCode !== null) throw new Error(`the shell exited (${this.child.exitCode}) running:\n${command}\n${this.out}${this.err}`);
      if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms running:\n${command}\n${this.out}${this.err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.child.stdin!.end();
  }
}

/** A long-running process (`npm start`, `npm run worker`, `npm run dashboard`) the runner starts in the background. */
export interface Background { kind: string; pid: number; log: string }

export const LONG_RUNNING = /\bnpm (start|run worker|run dashboard)\s*&?\s*(?:#.*)?$/;
const READY: Record<string, RegExp> = {
  start: /gatehouse api listening/,
  'run worker': /gatehouse worker ready/,
  'run dashboard': /gatehouse dashboard listening/,
};

/** Starts a long-running command through the shell (its assignments and exports apply), in a session of its own. */
export async function startInBackground(shell: Shell, command: string, logDir: string): Promise<Background> {
  const kind = LONG_RUNNING.exec(command)![1];
  const log = path.join(logDir, `${kind.replace(/\W/g, '-')}-${randomBytes(3).toString('hex')}.log`);
  const started = await shell.run(command.replace(LONG_RUNNING, `setsid npm $1 > ${log} 2>&1 & echo $!`));
  const pid = Number(started.stdout.split('\n').pop());
  const end = Date.now() + 60_000;
  for (;;) {
    const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
    if (READY[kind].test(text)) return { kind, pid, log };
    if (!alive(pid)) throw new Error(`\`npm ${kind}\` exited before it was ready:\n${text}`);
    if (Date.now() > end) throw new Error(`\`npm ${kind}\` was not ready after 60 s:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}


/** SIGTERM to the process group the runner started, and waits until its leader is gone. */
export async function stopBackground(started: Background): Promise<void> {
  try {
    process.kill(-started.pid, 'SIGTERM');
  } catch {
    return;
  }
  const end = Date.now() + 20_000;
  while (alive(started.pid)) {
    if (Date.now() > end) {
      process.kill(-started.pid, 'SIGKILL');
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const entities: Record<string, string> = { amp: '&', quot: '"', '#39': "'", lt: '<', gt: '>' };
const unescapeHtml = (s: string) => s.replace(/&(amp|quot|#39|lt|gt);/g, (_, e: string) => entities[e]);

/**
 * What a browser does on a hosted sign-in page: loads it (keeping its cookies), fills the form that
 * has a password field, and posts it. Answers the redirect's `Location`.
 */
export async function signInOnPage(pageUrl: string, email: string, password: string): Promise<{ status: number; location: string | null }> {
  const page = await fetch(pageUrl, { redirect: 'manual' });
  const html = await page.text();
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const form = [...html.matchAll(/<form\b[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].find((f) => f[2].includes('type="password"'));
  if (!form) throw new Error(`the page ${pageUrl} has no form with a password field`);
  const fields = new URLSearchParams();
  for (const input of form[2].matchAll(/<input\b[^>]*>/g)) {
    const name = /name="([^"]*)"/.exec(input[0])?.[1];
    const type = /type="([^"]*)"/.exec(input[0])?.[1] ?? 'text';
    if (!name) continue;
    if (type === 'hidden') fields.set(name, unescapeHtml(/value="([^"]*)"/.exec(input[0])?.[1] ?? ''));
    else if (type === 'password') fields.set(name, password);
    else if (type === 'email' || /email/i.test(name)) fields.set(name, email);
  }
  const answer = await fetch(new URL(unescapeHtml(form[1]), pageUrl), {
    method: 'POST', redirect: 'manual', body: fields, headers: { cookie, origin: new URL(pageUrl).origin },
  });
  return { status: answer.status, location: answer.headers.get('location') };
}
