import { createCipheriv, createHash, pbkdf2, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';

/*
 * Password hashes brought from another system (docs/import.md): each kept as its own encoding,
 * verified by its own algorithm at the next sign-in, and replaced by argon2id then (the sign-in
 * rehashes whatever is not argon2id at the policy's parameters). bcrypt and crypt(3) use
 * well-kept libraries (bcryptjs, unixcrypt), on a thread of their own; PBKDF2, scrypt, Firebase's modified scrypt and
 * the salted digests are compositions of node:crypto's primitives. Parameters are bounded, so a
 * hash imported with an absurd cost cannot make one sign-in take minutes or gigabytes.
 */

/** The formats an import accepts (`format` of a password object, or named by the encoding's prefix). */
export const HASH_FORMATS = [
  'bcrypt', 'argon2', 'scrypt', 'firebase-scrypt', 'pbkdf2-sha1', 'pbkdf2-sha256', 'pbkdf2-sha512',
  'sha256-crypt', 'sha512-crypt', 'ssha', 'ssha256', 'ssha512', 'smd5', 'sha', 'md5',
] as const;
export type HashFormat = (typeof HASH_FORMATS)[number];

/** Formats of older systems whose digest is one fast round (MD5, SHA-1, SHA-2 with a salt or none): imported, and reported. */
const WEAK: readonly HashFormat[] = ['ssha', 'ssha256', 'ssha512', 'smd5', 'sha', 'md5'];

/** A password hash as an import keeps it: the encoding stored as the record's password hash, and what it is. */
export interface ImportedHash { stored: string; format: HashFormat; weak: boolean }

/** A password object an import cannot use; the message says what is wrong with it (never the hash). */
export class HashFormatError extends Error {}

/** Bounds on imported costs: the most one verification may cost. */
export const LIMITS = {
  bcryptCost: 12, argon2MemoryKiB: 262_144, argon2Time: 10, argon2Lanes: 16,
  pbkdf2Iterations: 5_000_000, scryptMemoryBytes: 256 * 1024 * 1024, shaCryptRounds: 100_000,
} as const;

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Standard base64 (padding optional) to bytes; a HashFormatError naming `what` otherwise. */
function bytes(value: unknown, what: string): Buffer {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024 || !B64.test(value)) throw new HashFormatError(`${what} must be base64`);
  return Buffer.from(value, 'base64');
}
/** passlib's base64 (no padding; its adapted alphabet writes `.` for `+`) to bytes. */
const ab64 = (value: string) => Buffer.from(value.replace(/\./g, '+'), 'base64');
const toAb64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '').replace(/\+/g, '.');
const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');

function whole(value: unknown, what: string, min: number, max: number): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw new HashFormatError(`${what} must be a whole number from ${min} to ${max}`);
  return n;
}

const DIGESTS = { 'pbkdf2-sha1': 'sha1', 'pbkdf2-sha256': 'sha256', 'pbkdf2-sha512': 'sha512' } as const;
const DIGEST_BYTES = { sha1: 20, sha256: 32, sha512: 64 } as const;

/** The longest encoding a record keeps (its column's size). */
const MAX_STORED = 255;
/** An imported hash whose encoding fits the record's column. */
function checked(h: ImportedHash): ImportedHash {
  if (h.stored.length > MAX_STORED) throw new HashFormatError(`is ${h.stored.length} characters as kept; at most ${MAX_STORED} fit (a shorter salt or key)`);
  return h;
}
const SALTED = { SSHA: ['ssha', 'sha1', 20], SSHA256: ['ssha256', 'sha256', 32], SSHA512: ['ssha512', 'sha512', 64], SMD5: ['smd5', 'md5', 16], SHA: ['sha', 'sha1', 20], MD5: ['md5', 'md5', 16] } as const;

/** An encoding that names its algorithm: checked, and kept as it is (Django's PBKDF2 and passlib's scrypt too). */
function fromEncoding(hashed: string): ImportedHash {
  const kept = (format: HashFormat) => ({ stored: hashed, format, weak: WEAK.includes(format) });
  let m = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/.exec(hashed);
  if (m) {
    whole(Number(m[1]), 'the bcrypt cost', 4, LIMITS.bcryptCost);
    return kept('bcrypt');
  }
  m = /^\$argon2(?:i|d|id)\$(?:v=(?:16|19)\$)?m=(\d+),t=(\d+),p=(\d+)\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/.exec(hashed);
  if (m) {
    whole(Number(m[1]), 'the argon2 memory (m, KiB)', 8, LIMITS.argon2MemoryKiB);
    whole(Number(m[2]), 'the argon2 iterations (t)', 1, LIMITS.argon2Time);
    whole(Number(m[3]), 'the argon2 lanes (p)', 1, LIMITS.argon2Lanes);
    return kept('argon2');
  }
  m = /^\$([56])\$(?:rounds=([1-9]\d{0,8})\$)?[^$:\n]{1,16}\$([./A-Za-z0-9]+)$/.exec(hashed);
  if (m) {
    if (m[2] !== undefined) whole(Number(m[2]), 'the crypt(3) rounds', 1000, LIMITS.shaCryptRounds);
    if (m[3].length !== (m[1] === '5' ? 43 : 86)) throw new HashFormatError(`a $${m[1]}$ hash ends with ${m[1] === '5' ? 43 : 86} characters of its digest`);
    return kept(m[1] === '5' ? 'sha256-crypt' : 'sha512-crypt');
  }
  m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([./+A-Za-z0-9]+)\$([./+A-Za-z0-9]+)$/.exec(hashed);
  if (m) {
    scryptCost(2 ** whole(Number(m[1]), 'the scrypt cost (ln)', 1, 24), whole(Number(m[2]), 'the scrypt block size (r)', 1, 32), whole(Number(m[3]), 'the scrypt parallelism (p)', 1, 16));
    return kept('scrypt');
  }
  m = /^pbkdf2_(sha1|sha256)\$(\d+)\$([^$]+)\$([A-Za-z0-9+/]+={0,2})$/.exec(hashed);
  if (m) {
    whole(Number(m[2]), 'the PBKDF2 iterations', 1, LIMITS.pbkdf2Iterations);
    // Django's key is the digest's length
    if (Buffer.from(m[4], 'base64').length !== (m[1] === 'sha1' ? 20 : 32)) throw new HashFormatError(`a pbkdf2_${m[1]} hash is the base64 of ${m[1] === 'sha1' ? 20 : 32} bytes`);
    return kept(m[1] === 'sha1' ? 'pbkdf2-sha1' : 'pbkdf2-sha256');
  }
  m = /^\{(SSHA|SSHA256|SSHA512|SMD5|SHA|MD5)\}([A-Za-z0-9+/]+={0,2})$/i.exec(hashed);
  if (m) {
    const [format, , size] = SALTED[m[1].toUpperCase() as keyof typeof SALTED];
    const unsalted = format === 'sha' || format === 'md5';
    const length = Buffer.from(m[2], 'base64').length;
    if (unsalted ? length !== size : length <= size) throw new HashFormatError(`a {${m[1].toUpperCase()}} value must be the base64 of a ${size}-byte digest${unsalted ? '' : ' followed by its salt'}`);
    return { stored: `{${m[1].toUpperCase()}}${m[2]}`, format, weak: true };
  }
  throw new HashFormatError('the hash\'s encoding names no algorithm Gatehouse imports ($2a$/$2b$/$2y$, $argon2…$, $5$, $6$, $scrypt$, pbkdf2_sha256$, {SSHA}…); for one without a prefix, give its "format" and parameters');
}

/** scrypt's memory (128 · N · r bytes) within the bound. */
function scryptCost(n: number, r: number, p: number): void {
  if (128 * n * r > LIMITS.scryptMemoryBytes) throw new HashFormatError(`scrypt with N=${n} and r=${r} needs more than ${LIMITS.scryptMemoryBytes / 1024 / 1024} MiB to verify`);
  whole(p, 'the scrypt parallelism (p)', 1, 16);
}

/**
 * Reads an imported password (`{"hashed": …}` whose encoding names its algorithm, or
 * `{"hashed": …, "format": …, …parameters}` for one whose encoding does not) into the encoding
 * kept as the record's password hash. HashFormatError says what is wrong.
 */
export function importedHash(raw: unknown): ImportedHash {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new HashFormatError('must be a string, or an object with "hashed"');
  const o = raw as Record<string, unknown>;
  if (typeof o.hashed !== 'string' || o.hashed.length === 0 || o.hashed.length > 512) throw new HashFormatError('"hashed" must be the encoded hash, a string of 1 to 512 characters');
  const format = o.format === undefined ? undefined : o.format === 'pbkdf2' ? 'pbkdf2-sha1' : o.format;
  if (format === undefined) return checked(fromEncoding(o.hashed));
  if (typeof format !== 'string' || !(HASH_FORMATS as readonly string[]).includes(format)) {
    throw new HashFormatError(`"format" must be one of ${HASH_FORMATS.join(', ')}`);
  }
  const f = format as HashFormat;
  const hash = () => bytes(o.hashed, '"hashed"');
  if (f === 'firebase-scrypt') {
    const rounds = whole(o.rounds, '"rounds"', 1, 32);
    const memCost = whole(o.mem_cost, '"mem_cost"', 1, 24);
    scryptCost(2 ** memCost, rounds, 1);
    const parts = [bytes(o.salt, '"salt"'), bytes(o.salt_separator, '"salt_separator"'), bytes(o.signer_key, '"signer_key"'), hash()];
    return checked({ stored: `$firebase-scrypt$r=${rounds},m=${memCost}$${parts.map(b64).join('$')}`, format: f, weak: false });
  }
  if (f in DIGESTS) {
    const iterations = whole(o.iterations, '"iterations"', 1, LIMITS.pbkdf2Iterations);
    const key = hash();
    // PBKDF2 computes the whole iteration count once per block of the digest's size the key spans
    const blocks = Math.ceil(key.length / DIGEST_BYTES[DIGESTS[f as keyof typeof DIGESTS]]);
    if (key.length > 64 || iterations * blocks > LIMITS.pbkdf2Iterations) {
      throw new HashFormatError(`a PBKDF2 key of ${key.length} bytes at ${iterations} iterations costs more than ${LIMITS.pbkdf2Iterations} rounds to verify (keys up to 64 bytes)`);
    }
    return checked({ stored: `$${f}$i=${iterations}$${b64(bytes(o.salt, '"salt"'))}$${b64(key)}`, format: f, weak: false });
  }
  if (f === 'scrypt') {
    const n = whole(o.n, '"n"', 2, 2 ** 24);
    if ((n & (n - 1)) !== 0) throw new HashFormatError('"n" must be a power of two');
    const r = whole(o.r ?? 8, '"r"', 1, 32);
    const p = whole(o.p ?? 1, '"p"', 1, 16);
    scryptCost(n, r, p);
    return checked({ stored: `$scrypt$ln=${Math.log2(n)},r=${r},p=${p}$${toAb64(bytes(o.salt, '"salt"'))}$${toAb64(hash())}`, format: f, weak: false });
  }
  // the others name their algorithm in their encoding: a format given must match it
  const read = fromEncoding(o.hashed);
  if (read.format !== f) throw new HashFormatError(`"format" is ${f}, but the encoding is ${read.format}'s`);
  return checked(read);
}

/** Whether `stored` is an imported hash (anything but an argon2 hash, which the argon2 threads verify). */
export const isImported = (stored: string) => !stored.startsWith('$argon2');

/*
 * bcrypt (bcryptjs) and crypt(3) SHA-256/512 (unixcrypt) are plain JavaScript, a hash per round:
 * verified on a thread of their own, so a hash of many rounds and a long password never stops
 * the event loop.
 */
const THREAD_PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const bcrypt = require(workerData.bcrypt);
const crypt = require(workerData.crypt);
parentPort.on('message', ({ id, kind, password, stored }) => {
  let ok = false;
  try { ok = kind === 'bcrypt' ? bcrypt.compareSync(password, stored) : crypt.verify(password, stored); } catch { ok = false; }
  parentPort.postMessage({ id, ok });
});
`;
let hashThread: { worker: Worker; waiting: Map<number, (ok: boolean) => void>; next: number } | undefined;
function onThread(kind: 'bcrypt' | 'crypt', password: string, stored: string): Promise<boolean> {
  if (!hashThread) {
    const worker = new Worker(THREAD_PROGRAM, { eval: true, workerData: { bcrypt: require.resolve('bcryptjs'), crypt: require.resolve('unixcrypt') } });
    const thread = { worker, waiting: new Map<number, (ok: boolean) => void>(), next: 0 };
    worker.on('message', ({ id, ok }: { id: number; ok: boolean }) => {
      thread.waiting.get(id)?.(ok);
      thread.waiting.delete(id);
      if (thread.waiting.size === 0) worker.unref();
    });
    worker.on('error', () => {
      for (const answer of thread.waiting.values()) answer(false);
      hashThread = undefined;
    });
    worker.unref();
    hashThread = thread;
  }
  const thread = hashThread;
  return new Promise((resolve) => {
    const id = thread.next++;
    thread.waiting.set(id, resolve);
    thread.worker.ref();
    thread.worker.postMessage({ id, kind, password, stored });
  });
}

const scryptAsync = promisify(scrypt) as (password: string | Buffer, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;
const pbkdf2Async = promisify(pbkdf2);
const same = (a: Buffer, b: Buffer) => a.length === b.length && a.length > 0 && timingSafeEqual(a, b);

/**
 * Verifies a password against an imported hash by its own algorithm: false for a wrong password
 * and for a stored value no format here reads. Argon2 hashes are not verified here.
 */
export async function verifyImported(stored: string, password: string): Promise<boolean> {
  try {
    return await verifyByFormat(stored, password);
  } catch {
    return false; // a stored value its library cannot read proves nothing
  }
}

async function verifyByFormat(stored: string, password: string): Promise<boolean> {
  let m = /^\$2[aby]\$/.exec(stored);
  if (m) return onThread('bcrypt', password, stored);
  if (/^\$[56]\$/.test(stored)) return onThread('crypt', password, stored);
  m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([./+A-Za-z0-9]+)\$([./+A-Za-z0-9]+)$/.exec(stored);
  if (m) {
    const expected = ab64(m[5]);
    const n = 2 ** Number(m[1]);
    const r = Number(m[2]);
    const got = await scryptAsync(password, ab64(m[4]), expected.length, { N: n, r, p: Number(m[3]), maxmem: LIMITS.scryptMemoryBytes + 1024 * 1024 });
    return same(got, expected);
  }
  m = /^\$firebase-scrypt\$r=(\d+),m=(\d+)\$([^$]+)\$([^$]+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    // Firebase's modified scrypt: the key scrypt derives from the password and salt + separator encrypts the project's signer key (AES-256-CTR, zero IV)
    const [salt, separator, signerKey, expected] = [m[3], m[4], m[5], m[6]].map((v) => Buffer.from(v, 'base64'));
    const key = await scryptAsync(password, Buffer.concat([salt, separator]), 64, { N: 2 ** Number(m[2]), r: Number(m[1]), p: 1, maxmem: LIMITS.scryptMemoryBytes + 1024 * 1024 });
    const cipher = createCipheriv('aes-256-ctr', key.subarray(0, 32), Buffer.alloc(16));
    return same(Buffer.concat([cipher.update(signerKey), cipher.final()]), expected);
  }
  m = /^\$(pbkdf2-sha1|pbkdf2-sha256|pbkdf2-sha512)\$i=(\d+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    const expected = Buffer.from(m[4], 'base64');
    return same(await pbkdf2Async(password, Buffer.from(m[3], 'base64'), Number(m[2]), expected.length, DIGESTS[m[1] as keyof typeof DIGESTS]), expected);
  }
  m = /^pbkdf2_(sha1|sha256)\$(\d+)\$([^$]+)\$([A-Za-z0-9+/]+={0,2})$/.exec(stored);
  if (m) {
    // Django: the salt is text, the digest's full length, base64
    const expected = Buffer.from(m[4], 'base64');
    return same(await pbkdf2Async(password, Buffer.from(m[3], 'utf8'), Number(m[2]), expected.length, m[1]), expected);
  }
  m = /^\{(SSHA|SSHA256|SSHA512|SMD5|SHA|MD5)\}([A-Za-z0-9+/]+={0,2})$/.exec(stored);
  if (m) {
    const [format, digest, size] = SALTED[m[1] as keyof typeof SALTED];
    const value = Buffer.from(m[2], 'base64');
    const salt = format === 'sha' || format === 'md5' ? Buffer.alloc(0) : value.subarray(size);
    return same(createHash(digest).update(password, 'utf8').update(salt).digest(), value.subarray(0, size));
  }
  return false;
}
