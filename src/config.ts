import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import * as yup from 'yup';
import { APP_NAME } from './domain/applications';
import { WAITING_PER_THREAD } from './domain/passwords';
import { projectRoot } from './paths';
import { parseRedisUrl } from './queue/redis-url';

/** Typed configuration of every Gatehouse process, read from the environment once at start. */
export interface Config {
  /** `sqlite` when DATABASE_URL is unset (the embedded default). */
  database: { dialect: 'sqlite'; storage: string }
    /**
     * `procedures`: sign-in and rotation by the stored procedures (DATABASE_PROCEDURES=on, the
     * default) or by plain statements (off). `readUrls`: replicas for the reads that tolerate lag
     * (DATABASE_READ_URL; none by default).
     */
    | { dialect: 'mysql'; url: string; procedures: boolean; readUrls: string[] };
  /** Unset: the in-process job runner. */
  redisUrl?: string;
  /** Prefix of every BullMQ key, so several deployments (or test runs) can share one Redis. */
  redisPrefix: string;
  smtpUrl?: string;
  /**
   * `smtp` (SMTP_URL) or `file` (.eml files under `mailDir`). Unset only with a MySQL database and
   * neither SMTP_URL nor MAIL_TRANSPORT=file: processes that send mail then refuse to start.
   */
  mailTransport?: 'smtp' | 'file';
  mailDir: string;
  port: number;
  /** Time clients have to send their headers, and their whole request. */
  http: { headersTimeoutMs: number; requestTimeoutMs: number };
  /** Interface the api listens on (127.0.0.1 by default; 0.0.0.0 in containers). */
  host: string;
  /** 32 bytes; encrypts client secrets at rest. */
  secretKey: Buffer;
  defaultApp: string;
  publicBaseUrl: string;
  varDir: string;
  logLevel: string;
  /** The queue dashboard process (`npm run dashboard`): its port and operator credential (no password: it refuses to start). */
  dashboard: { port: number; user: string; password?: string };
  /** Port of the Prometheus metrics (and, on workers, health) endpoints; unset: not served. */
  metricsPort?: number;
  /**
   * The operators' console (docs/console.md), served by the api on a port of its own when
   * CONSOLE_PORT is set: where browsers reach it (CONSOLE_PUBLIC_URL) and the operators'
   * application it signs in with (CONSOLE_APP, `operators`).
   */
  console?: { port: number; publicUrl: string; app: string };
  /** Webhooks (docs/webhooks.md): WEBHOOKS_ALLOW_PRIVATE lets endpoints be loopback or private addresses (internal deployments, tests). */
  webhooks: { allowPrivate: boolean };
  /** `json` (one object per line, the default) or `pretty` (for a developer's terminal). */
  logFormat: 'json' | 'pretty';
  /** Failed logins allowed per account and per client address, per window. */
  loginLimits: { account: { max: number; windowSeconds: number }; address: { max: number; windowSeconds: number } };
  /** Emails sent per recipient address and per client address, per window (forgot password, verification). */
  mailLimits: { recipient: { max: number; windowSeconds: number }; address: { max: number; windowSeconds: number } };
  /** An outbox row still pending after this long is enqueued again (its first enqueue was lost). */
  outboxRelayAfterSeconds: number;
  /** Version snapshots older than this many days are pruned (the newest before the cutoff stays); null: kept forever. */
  versionsRetentionDays: number | null;
  /** Days events and counted failed sign-ins (an account's activity) are kept (docs/activity.md). */
  eventsRetentionDays: number;
  /** Minutes a spent or expired code or token is kept before the sweep deletes it (a spent refresh token presented again in them revokes its family). */
  credentialsRetentionMinutes: number;
  /** Registration attempts per client address, per window. */
  registrationLimit: { max: number; windowSeconds: number };
  /** An organization's directory: calls per SCIM token per window. */
  scimLimit: { max: number; windowSeconds: number };
  /** The time the database may spend on one statement of entity.find or entity.count before it is stopped. */
  entityQueryTimeoutMs: number;
  /** The From of every email. */
  mailFrom: string;
  /** argon2id parameters for new password hashes (older hashes are upgraded at sign-in). */
  passwordPolicy: { memoryCost: number; timeCost: number; parallelism: number };
  /** Threads computing argon2 in each api process (each holds ARGON2_MEMORY_KIB); more hashes queue. */
  hashConcurrency: number;
  /** Hashes allowed to wait for a thread in each api process; beyond that requests get 503 at once. */
  hashQueueMax: number;
  /** Express `trust proxy`: how client addresses are read behind load balancers. */
  trustProxy: string | undefined;
  /** No DATABASE_URL and no REDIS_URL: one process that migrates and seeds itself. */
  embedded: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** One check per variable, so every bad value gets its own line. */
/** What is wrong with a REDIS_URL (one server, a cluster's nodes, or Sentinels and a master's name), if anything. */
function redisUrlProblem(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    parseRedisUrl(url);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

const MYSQL_URL = /^(mysql|mariadb):\/\/[^/]+\/[A-Za-z0-9_$]+(\?.*)?$/;

/** DATABASE_READ_URL's replicas: one URL, or several separated by commas or spaces. */
const readUrlsOf = (value: string | undefined) => (value ?? '').split(/[\s,]+/).filter((u) => u !== '');

const checks: Record<string, yup.StringSchema<string | undefined>> = {
  DATABASE_URL: yup
    .string()
    .test('url', 'DATABASE_URL must look like mysql://USER:PASSWORD@HOST:3306/DATABASE or sqlite:PATH', (v) => v === undefined || MYSQL_URL.test(v) || /^sqlite:.+$/.test(v)),
  DATABASE_READ_URL: yup
    .string()
    .test('urls', 'DATABASE_READ_URL must be one or more replicas of DATABASE_URL, each like mysql://USER:PASSWORD@HOST:3306/DATABASE, separated by commas', (v) => readUrlsOf(v).every((u) => MYSQL_URL.test(u))),
  REDIS_URL: yup.string().test('redis', ({ value }) => redisUrlProblem(value) ?? '', (v) => v === undefined || redisUrlProblem(v) === undefined),
  SMTP_URL: yup.string().matches(/^smtps?:\/\/.+/, {
    message: 'SMTP_URL must look like smtp://USER:PASSWORD@HOST:587 (or smtps:// for implicit TLS)',
  }),
  OUTBOX_RELAY_AFTER_SECONDS: yup.string().test('s', 'OUTBOX_RELAY_AFTER_SECONDS must be a whole number of seconds from 1 to 3600 (default 30)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 3600)),
  ENTITY_QUERY_TIMEOUT_MS: yup.string().test('ms', 'ENTITY_QUERY_TIMEOUT_MS must be a whole number of milliseconds from 1 to 600000 (default 5000)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 600_000)),
  HTTP_HEADERS_TIMEOUT_SECONDS: yup.string().test('s', 'HTTP_HEADERS_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 600 (default 10)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 600)),
  HTTP_REQUEST_TIMEOUT_SECONDS: yup.string().test('s', 'HTTP_REQUEST_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 3600 (default 30)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 3600)),
  DATABASE_PROCEDURES: yup.string().oneOf(['on', 'off'], 'DATABASE_PROCEDURES must be on (sign-in and token rotation by stored procedures, one round trip each) or off (plain statements, for engines without stored procedures)'),
  MAIL_TRANSPORT: yup.string().oneOf(['smtp', 'file'], 'MAIL_TRANSPORT must be smtp (send through SMTP_URL) or file (write .eml files under var/mail, for development)'),
  PORT: yup.string().matches(/^\d{1,5}$/, { message: 'PORT must be a whole number between 1 and 65535' })
    .test('port-range', 'PORT must be a whole number between 1 and 65535', (v) => v === undefined || (Number(v) >= 1 && Number(v) <= 65535)),
  SECRET_KEY: yup.string().test(
    'secret-key',
    'SECRET_KEY must be 32 random bytes as 64 hex characters or base64 (generate one with: openssl rand -hex 32)',
    (v) => v === undefined || parseSecretKey(v) !== undefined,
  ),
  DEFAULT_APP: yup.string().matches(APP_NAME, {
    message: 'DEFAULT_APP must be a DNS label: lowercase letters, digits and inner hyphens, at most 63 characters',
  }),
  PUBLIC_BASE_URL: yup.string().test('http-url', 'PUBLIC_BASE_URL must be an absolute http(s) URL such as https://login.example.com', (v) => {
    if (v === undefined) return true;
    try {
      return ['http:', 'https:'].includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }),
  HOST: yup.string().matches(/^[0-9A-Za-z.:-]{1,253}$/, { message: 'HOST must be an interface address such as 127.0.0.1 or 0.0.0.0' }),
  REDIS_PREFIX: yup.string().matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'REDIS_PREFIX must be 1 to 64 letters, digits, _ or -' }),
  LOGIN_LIMIT_ACCOUNT: yup.string().matches(/^[1-9]\d{0,6}\/[1-9]\d{0,6}$/, { message: 'LOGIN_LIMIT_ACCOUNT must be FAILURES/SECONDS, such as 10/900' }),
  LOGIN_LIMIT_ADDRESS: yup.string().matches(/^[1-9]\d{0,6}\/[1-9]\d{0,6}$/, { message: 'LOGIN_LIMIT_ADDRESS must be FAILURES/SECONDS, such as 100/900' }),
  MAIL_LIMIT_RECIPIENT: yup.string().matches(/^[1-9]\d{0,6}\/[1-9]\d{0,6}$/, { message: 'MAIL_LIMIT_RECIPIENT must be EMAILS/SECONDS, such as 5/3600' }),
  MAIL_LIMIT_ADDRESS: yup.string().matches(/^[1-9]\d{0,6}\/[1-9]\d{0,6}$/, { message: 'MAIL_LIMIT_ADDRESS must be EMAILS/SECONDS, such as 50/3600' }),
  REGISTER_LIMIT_ADDRESS: yup.string().matches(/^[1-9]\d{0,6}\/[1-9]\d{0,6}$/, { message: 'REGISTER_LIMIT_ADDRESS must be ATTEMPTS/SECONDS, such as 20/3600' }),
  SCIM_LIMIT_TOKEN: yup.string().matches(/^[1-9]\d{0,6}\/[1-9]\d{0,6}$/, { message: 'SCIM_LIMIT_TOKEN must be CALLS/SECONDS, such as 12000/60' }),
  MAIL_FROM: yup.string().matches(/^[^\r\n]{1,200}@[^\r\n]+$/, { message: 'MAIL_FROM must be an address, optionally with a name: Acme <no-reply@acme.example>' }),
  ARGON2_MEMORY_KIB: yup.string().test('kib', 'ARGON2_MEMORY_KIB must be a whole number of KiB from 8192 to 4194304 (OWASP: 19456)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 8192 && +v <= 4_194_304)),
  ARGON2_ITERATIONS: yup.string().test('t', 'ARGON2_ITERATIONS must be a whole number from 1 to 100 (OWASP: 2)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 100)),
  ARGON2_PARALLELISM: yup.string().test('p', 'ARGON2_PARALLELISM must be a whole number from 1 to 16 (OWASP: 1)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 16)),
  ARGON2_CONCURRENCY: yup.string().test('c', 'ARGON2_CONCURRENCY must be a whole number from 1 to 256 (default: the number of cores)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 256)),
  ARGON2_QUEUE_MAX: yup.string().test('q', 'ARGON2_QUEUE_MAX must be a whole number from 1 to 100000 (default: 64 per ARGON2_CONCURRENCY thread)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 100_000)),
  TRUST_PROXY: yup.string().matches(/^(true|false|loopback|uniquelocal|linklocal|\d{1,2}|[0-9a-fA-F.:/, ]+)$/, { message: 'TRUST_PROXY must be true, false, a hop count, or addresses/subnets (Express "trust proxy")' }),
  EVENTS_RETENTION_DAYS: yup.string().test('days', 'EVENTS_RETENTION_DAYS must be a whole number of days from 1 to 36500 (unset: 400)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 36_500)),
  CREDENTIALS_RETENTION_MINUTES: yup.string().test('minutes', 'CREDENTIALS_RETENTION_MINUTES must be a whole number of minutes from 1 to 43200 (30 days; unset: 1440, a day)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 43_200)),
  VERSIONS_RETENTION_DAYS: yup.string().test('days', 'VERSIONS_RETENTION_DAYS must be a whole number of days from 1 to 36500 (unset: snapshots are kept forever)', (v) => v === undefined || (/^\d+$/.test(v) && +v >= 1 && +v <= 36_500)),
  DASHBOARD_PORT: yup.string().test('port', 'DASHBOARD_PORT must be a whole number between 1 and 65535', (v) => v === undefined || (/^\d{1,5}$/.test(v) && +v >= 1 && +v <= 65_535)),
  DASHBOARD_USER: yup.string().matches(/^[A-Za-z0-9_.@-]{1,64}$/, { message: 'DASHBOARD_USER must be 1 to 64 letters, digits or _ . @ -' }),
  DASHBOARD_PASSWORD: yup.string().test('pw', 'DASHBOARD_PASSWORD must be at least 12 characters (openssl rand -hex 16 makes one)', (v) => v === undefined || (v.length >= 12 && v.length <= 256)),
  CONSOLE_PORT: yup.string().test('port', 'CONSOLE_PORT must be a whole number between 1 and 65535', (v) => v === undefined || (/^\d{1,5}$/.test(v) && +v >= 1 && +v <= 65_535)),
  CONSOLE_PUBLIC_URL: yup.string().test('url', 'CONSOLE_PUBLIC_URL must be an http(s) URL without a path, query or fragment (such as https://console.example.com)', (v) => {
    if (v === undefined) return true;
    try {
      const u = new URL(v);
      return (u.protocol === 'http:' || u.protocol === 'https:') && (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash && !u.username;
    } catch {
      return false;
    }
  }),
  WEBHOOKS_ALLOW_PRIVATE: yup.string().oneOf(['true', 'false'], 'WEBHOOKS_ALLOW_PRIVATE must be true or false (the default: webhooks reach public addresses only)'),
  CONSOLE_APP: yup.string().matches(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, { message: 'CONSOLE_APP must be an application name (lowercase letters, digits, inner hyphens)' }),
  METRICS_PORT: yup.string().test('port', 'METRICS_PORT must be a whole number between 1 and 65535', (v) => v === undefined || (/^\d{1,5}$/.test(v) && +v >= 1 && +v <= 65_535)),
  LOG_FORMAT: yup.string().oneOf(['json', 'pretty'], 'LOG_FORMAT must be json (the default) or pretty'),
  LOG_LEVEL: yup.string().oneOf(LOG_LEVELS, `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`),
};

/** Why a process that sends mail refuses to start with MySQL and no way to send it. */
export const NO_MAIL_TRANSPORT = 'SMTP_URL is required with a MySQL DATABASE_URL, so that emails are sent (or set MAIL_TRANSPORT=file to write them as .eml files under var/mail, for development)';

function parseSecretKey(value: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  const decoded = Buffer.from(value, 'base64');
  return decoded.length === 32 && /^[A-Za-z0-9+/_-]{43}=?$/.test(value) ? decoded : undefined;
}

/** Variables whose values are secrets: a refusal says only their length. */
const SECRET_VARIABLES = new Set(['SECRET_KEY', 'DASHBOARD_PASSWORD']);

/**
 * A refused value as a configuration error shows it: never a secret (only its length), never the
 * password of a URL (`mysql://gatehouse:***@db`), at most 80 characters.
 */
export function shown(name: string, raw: string): string {
  if (SECRET_VARIABLES.has(name)) return `a value of ${raw.length} characters, not shown`;
  // up to the last @ before the path: a password with an @ left unencoded is hidden whole
  const masked = raw.replace(/(^|[\s,])([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/@:\s,]*):[^/\s]*@/g, '$1$2:***@');
  return JSON.stringify(masked.length > 80 ? `${masked.slice(0, 80)}…` : masked);
}

/** Variables that may also be given as a file (`NAME_FILE`, such as a Docker or Compose secret under /run/secrets). */
const FILE_VARIABLES = ['SECRET_KEY', 'DASHBOARD_PASSWORD', 'DATABASE_URL', 'DATABASE_READ_URL', 'DATABASE_PASSWORD', 'REDIS_URL', 'SMTP_URL'];

/**
 * The environment with every `NAME_FILE` read into `NAME` (trailing newline dropped), and
 * `DATABASE_PASSWORD` put into `DATABASE_URL` (so a URL without its password can be configured
 * and the password kept in a secret), and into each DATABASE_READ_URL written without one (a
 * replica copies the primary's users). Problems are said without the values.
 */
function withSecretFiles(given: NodeJS.ProcessEnv, problems: string[]): NodeJS.ProcessEnv {
  const env = { ...given };
  for (const name of FILE_VARIABLES) {
    const file = env[`${name}_FILE`];
    if (!file) continue;
    if (env[name]) {
      problems.push(`set ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      env[name] = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      problems.push(`${name}_FILE names ${JSON.stringify(file)}, which cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  const password = env.DATABASE_PASSWORD;
  if (password && env.DATABASE_URL) {
    try {
      const url = new URL(env.DATABASE_URL);
      if (url.password) problems.push('DATABASE_URL has a password and DATABASE_PASSWORD is set: give the password once');
      else {
        url.password = encodeURIComponent(password);
        env.DATABASE_URL = url.toString();
      }
    } catch {
      // DATABASE_URL's own check says what is wrong with it
    }
  }
  if (password && env.DATABASE_READ_URL) {
    env.DATABASE_READ_URL = readUrlsOf(env.DATABASE_READ_URL).map((u) => {
      try {
        const url = new URL(u);
        if (url.password) return u;
        url.password = encodeURIComponent(password);
        return url.toString();
      } catch {
        return u; // DATABASE_READ_URL's own check says what is wrong with it
      }
    }).join(',');
  }
  return env;
}

/** Reads (or, on the first embedded start, creates) the secret key kept under var/. */
function embeddedSecretKey(varDir: string): Buffer {
  const file = path.join(varDir, 'secret.key');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(varDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  }
  // a key file another user can read is tightened: it opens every sealed secret
  const stat = fs.statSync(file);
  if ((stat.mode & 0o077) !== 0 && stat.uid === process.getuid?.()) fs.chmodSync(file, 0o600);
  const key = parseSecretKey(fs.readFileSync(file, 'utf8').trim());
  if (!key) throw new ConfigError([`${file} does not hold a valid key; delete it only if no client secrets were stored with it`]);
  return key;
}

/** Reads one checked variable (undefined when unset or refused; a refusal is noted). */
type Read = (name: string) => string | undefined;

/** The budgets: failed logins per account and address, emails per recipient and address, registrations per address. */
function limitsFrom(value: Read): Pick<Config, 'loginLimits' | 'mailLimits' | 'registrationLimit' | 'scimLimit'> {
  const limit = (raw: string) => {
    const [max, windowSeconds] = raw.split('/').map(Number);
    return { max, windowSeconds };
  };
  return {
    loginLimits: { account: limit(value('LOGIN_LIMIT_ACCOUNT') ?? '10/900'), address: limit(value('LOGIN_LIMIT_ADDRESS') ?? '100/900') },
    mailLimits: { recipient: limit(value('MAIL_LIMIT_RECIPIENT') ?? '5/3600'), address: limit(value('MAIL_LIMIT_ADDRESS') ?? '50/3600') },
    registrationLimit: limit(value('REGISTER_LIMIT_ADDRESS') ?? '20/3600'),
    scimLimit: limit(value('SCIM_LIMIT_TOKEN') ?? '12000/60'),
  };
}

/** The time clients have to send their headers, and their whole request. */
function httpFrom(value: Read, problems: string[]): Config['http'] {
  const headersTimeoutMs = Number(value('HTTP_HEADERS_TIMEOUT_SECONDS') ?? 10) * 1000;
  const requestTimeoutMs = Number(value('HTTP_REQUEST_TIMEOUT_SECONDS') ?? 30) * 1000;
  // Node requires the header timeout to be within the request timeout
  if (headersTimeoutMs > requestTimeoutMs) problems.push('HTTP_HEADERS_TIMEOUT_SECONDS must not exceed HTTP_REQUEST_TIMEOUT_SECONDS');
  return { headersTimeoutMs, requestTimeoutMs };
}

/** argon2id's parameters, its threads, and how many hashes may wait for one. */
function hashingFrom(value: Read): Pick<Config, 'passwordPolicy' | 'hashConcurrency' | 'hashQueueMax'> {
  const hashConcurrency = Number(value('ARGON2_CONCURRENCY') ?? availableParallelism());
  return {
    passwordPolicy: {
      memoryCost: Number(value('ARGON2_MEMORY_KIB') ?? 19_456),
      timeCost: Number(value('ARGON2_ITERATIONS') ?? 2),
      parallelism: Number(value('ARGON2_PARALLELISM') ?? 1),
    },
    hashConcurrency,
    hashQueueMax: Number(value('ARGON2_QUEUE_MAX') ?? hashConcurrency * WAITING_PER_THREAD),
  };
}

/**
 * Validates the environment and returns the configuration, or throws a ConfigError listing
 * one line per bad value. In the embedded default a missing SECRET_KEY is generated into var/.
 */
export function loadConfig(given: NodeJS.ProcessEnv = process.env, root = projectRoot()): Config {
  const problems: string[] = [];
  const env = withSecretFiles(given, problems);
  const value = (name: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    try {
      return checks[name].validateSync(raw);
    } catch (e) {
      problems.push(`${(e as yup.ValidationError).message} (got ${shown(name, raw)})`);
      return undefined;
    }
  };

  const databaseUrl = value('DATABASE_URL');
  const readUrls = readUrlsOf(value('DATABASE_READ_URL'));
  const procedures = value('DATABASE_PROCEDURES') !== 'off';
  const redisUrl = value('REDIS_URL');
  const smtpUrl = value('SMTP_URL');
  const port = value('PORT');
  const secret = value('SECRET_KEY');
  const defaultApp = value('DEFAULT_APP') ?? 'local';
  const logLevel = value('LOG_LEVEL') ?? 'info';
  const logFormat = value('LOG_FORMAT') === 'pretty' ? 'pretty' as const : 'json' as const;
  const retentionDays = value('VERSIONS_RETENTION_DAYS');
  const credentialsRetentionMinutes = Number(value('CREDENTIALS_RETENTION_MINUTES') ?? 1440);
  const eventsRetentionDays = Number(value('EVENTS_RETENTION_DAYS') ?? 400);
  const metricsPort = value('METRICS_PORT');
  const consolePort = value('CONSOLE_PORT');
  const dashboard = {
    port: Number(value('DASHBOARD_PORT') ?? 3100), user: value('DASHBOARD_USER') ?? 'operator',
    ...(value('DASHBOARD_PASSWORD') !== undefined && { password: value('DASHBOARD_PASSWORD') }),
  };
  const host = value('HOST') ?? '127.0.0.1';
  const trustProxy = value('TRUST_PROXY');
  const http = httpFrom(value, problems);
  const outboxRelayAfterSeconds = Number(value('OUTBOX_RELAY_AFTER_SECONDS') ?? 30);
  const entityQueryTimeoutMs = Number(value('ENTITY_QUERY_TIMEOUT_MS') ?? 5000);
  const mailFromRaw = value('MAIL_FROM');
  const limits = limitsFrom(value);
  const hashing = hashingFrom(value);
  // the data directory: DATA_DIR, else var/ in the project, whatever the shell's current directory
  const varDir = env.DATA_DIR ? path.resolve(env.DATA_DIR) : path.join(root, 'var');
  const portNumber = port ? Number(port) : 3000;
  const publicBaseUrl = (value('PUBLIC_BASE_URL') ?? `http://localhost:${portNumber}`).replace(/\/+$/, '');

  const usesSqlite = !databaseUrl || databaseUrl.startsWith('sqlite:');
  if (usesSqlite && readUrls.length > 0) problems.push('DATABASE_READ_URL names replicas of a MySQL or MariaDB primary: set DATABASE_URL to the primary, or unset DATABASE_READ_URL');
  if (!usesSqlite && env.SECRET_KEY === undefined) {
    problems.push('SECRET_KEY is required with a MySQL DATABASE_URL: every api and worker process needs the same key (generate one with: openssl rand -hex 32)');
  }
  const mailTransport = (value('MAIL_TRANSPORT') as Config['mailTransport']) ?? (smtpUrl ? 'smtp' : usesSqlite ? 'file' : undefined);
  if (mailTransport === 'smtp' && !smtpUrl) problems.push('MAIL_TRANSPORT=smtp needs SMTP_URL');
  if (problems.length > 0) throw new ConfigError(problems);

  const database: Config['database'] = usesSqlite
    ? { dialect: 'sqlite', storage: databaseUrl ? path.resolve(databaseUrl.slice('sqlite:'.length)) : path.join(varDir, 'gatehouse.sqlite') }
    : { dialect: 'mysql', url: databaseUrl!.replace(/^mariadb:/, 'mysql:'), procedures, readUrls: readUrls.map((u) => u.replace(/^mariadb:/, 'mysql:')) };

  return {
    database,
    redisUrl,
    redisPrefix: value('REDIS_PREFIX') ?? 'gatehouse',
    smtpUrl,
    mailTransport,
    outboxRelayAfterSeconds,
    versionsRetentionDays: retentionDays === undefined ? null : Number(retentionDays),
    eventsRetentionDays,
    credentialsRetentionMinutes,
    mailDir: path.join(varDir, 'mail'),
    port: portNumber,
    http,
    host,
    ...limits,
    trustProxy,
    entityQueryTimeoutMs,
    ...hashing,
    mailFrom: mailFromRaw ?? `no-reply@${new URL(publicBaseUrl).hostname}`,
    secretKey: secret ? parseSecretKey(secret)! : embeddedSecretKey(varDir),
    defaultApp,
    publicBaseUrl,
    varDir,
    logLevel,
    logFormat,
    dashboard,
    ...(metricsPort !== undefined && { metricsPort: Number(metricsPort) }),
    webhooks: { allowPrivate: value('WEBHOOKS_ALLOW_PRIVATE') === 'true' },
    ...(consolePort !== undefined && {
      console: {
        port: Number(consolePort), app: value('CONSOLE_APP') ?? 'operators',
        publicUrl: (value('CONSOLE_PUBLIC_URL') ?? `http://localhost:${consolePort}`).replace(/\/+$/, ''),
      },
    }),
    embedded: usesSqlite && !redisUrl,
  };
}

/** Loads the configuration or ends the process with one line per bad value (exit code 78, EX_CONFIG). */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`gatehouse: ${e.message}\n`);
    process.exit(78);
  }
}
