import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { projectRoot } from '../../src/runtime';

export const ROOT = projectRoot();
export const SERVER = path.join(ROOT, 'dist/src/server.js');
export const WORKER = path.join(ROOT, 'dist/workers/main.js');
export const CLI = path.join(ROOT, 'bin/gatehouse.js');

/** The environment of a child process: only what it is given, plus PATH. */
export const childEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, ...env });

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface Started {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  exited: Promise<number | null>;
}

/** A test's process keeps its data (DATA_DIR) under its working folder, never in the project's var/. */
const dataIn = (cwd: string, env: NodeJS.ProcessEnv) => ({ DATA_DIR: path.join(cwd, 'var'), ...env });

/** Starts `node script` and collects its stdout and stderr. */
export function startNode(script: string, options: { cwd: string; env: NodeJS.ProcessEnv; args?: string[] }): Started {
  return spawnStarted(process.execPath, [script, ...(options.args ?? [])], { cwd: options.cwd, env: childEnv(dataIn(options.cwd, options.env)) });
}

/** Starts a command with exactly the environment given and collects its stdout and stderr. */
export function spawnStarted(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Started {
  const child = spawn(command, args, options);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => out,
    async waitFor(pattern, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const m = out.match(pattern);
        if (m) return m;
        if (child.exitCode !== null) throw new Error(`process exited (${child.exitCode}) before printing ${pattern}:\n${out}`);
        if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs the `gatehouse` CLI to completion. */
export function cli(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: options.cwd, env: childEnv(dataIn(options.cwd, options.env)), encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A server of a test's own, never a shared one, which the test kills (SIGKILL: no clean shutdown)
 * and starts again. `ready` answers once the server serves; `prepare` runs before each start.
 */
export function ownServer(command: string, args: string[], ready: () => boolean, prepare?: () => void) {
  let child: ChildProcess | undefined;
  return {
    async start() {
      prepare?.();
      child = spawn(command, args, { stdio: 'ignore' });
      const end = Date.now() + 30_000;
      while (!ready()) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`${command} did not start (is its port taken?)`);
        await new Promise((r) => setTimeout(r, 50));
      }
      if (child.exitCode !== null) throw new Error(`${command} exited: its port is taken by another server`);
    },
    async kill() {
      // a server killed by a signal has no exit code, only its signal
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Whether this machine has the redis-server program (the tests that start their own Redis need it). */
export const redisServerInstalled = spawnSync('redis-server', ['--version']).status === 0;

/** A Redis of a test's own on 127.0.0.1:`port`, keeping nothing on disk: started again, it is empty. */
export const ownRedis = (port: number) => ownServer('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
  () => spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().trim() === 'PONG');

/** A MariaDB of a test's own (never the shared one), in `dir`, installed on its first start; `extra` adds server options. */
export function ownMariadb(dir: string, port: number, extra: string[] = []) {
  const install = () => {
    if (fs.existsSync(path.join(dir, 'mysql'))) return;
    const installed = spawnSync('mariadb-install-db', ['--no-defaults', `--datadir=${dir}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db']);
    if (installed.status !== 0) throw new Error(String(installed.stderr));
  };
  return ownServer('mariadbd',
    ['--no-defaults', `--datadir=${dir}`, `--socket=${dir}/sock`, `--port=${port}`, '--bind-address=127.0.0.1', '--user=root', '--skip-log-bin', ...extra],
    () => spawnSync('mariadb-admin', ['--no-defaults', '-h', '127.0.0.1', '-P', String(port), '-uroot', 'ping']).status === 0,
    install);
}

/** What redis-cli answers on `port`, trimmed. */
export const redisCli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();

/** Whether a process of this id runs. */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Polls `check` every 200 ms until it holds (a throw counts as not yet), or fails naming `what`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await Promise.resolve().then(check).catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
