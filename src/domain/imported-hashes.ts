
/*
 * Password hashes brought from another system (docs/import.md): each kept as its own encoding,
 * verified by its own algorithm at the next sign-in, and replaced by argon2id then (the sign-in
 * rehashes whatever is not argon2id at the policy's parameters). bcrypt, crypt(3) and argon2 use
 * well-kept libraries (bcryptjs, unixcrypt, @node-rs/argon2); PBKDF2, scrypt, Firebase's modified
 * scrypt and the salted digests are compositions of node:crypto's primitives, all verified on
 * threads of their own (passwords.ts), argon2 hashes costlier than the policy's too. Parameters are bounded, so a hash imported with an absurd cost cannot make
 * one sign-in take minutes or gigabytes.
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

/**
 * Bounds on imported costs: the most one verification may cost, each under about a second on a
 * small machine (docs/import.md#what-a-verification-may-cost gives the figures measured on 2 cores). Bounds are on the
 * product of a format's costs, which is what its time grows with: scrypt's N·r·p, PBKDF2's
 * iterations times the key's blocks (SHA-512's rounds count four times a SHA-256 round), argon2's
 * memory times its iterations.
 */
export const LIMITS = {
  bcryptCost: 12, argon2MemoryKiB: 262_144, argon2Time: 10, argon2Lanes: 16, argon2MemoryTimesIterations: 1_048_576,
  pbkdf2Rounds: 4_000_000, scryptMemoryBytes: 256 * 1024 * 1024, scryptWork: 2 ** 21, shaCryptRounds: 100_000,
} as const;

/** The rounds a PBKDF2 verification computes, in SHA-256 rounds: iterations per block of the key, a SHA-512 round four. */
const pbkdf2Rounds = (digest: 'sha1' | 'sha256' | 'sha512', iterations: number, keyBytes: number) =>
  iterations * Math.ceil(keyBytes / DIGEST_BYTES[digest]) * (digest === 'sha512' ? 4 : 1);

function pbkdf2Cost(digest: 'sha1' | 'sha256' | 'sha512', iterations: number, keyBytes: number): void {
  if (keyBytes > 64 || pbkdf2Rounds(digest, iterations, keyBytes) > LIMITS.pbkdf2Rounds) {
    throw new HashFormatError(`a PBKDF2-${digest.toUpperCase()} key of ${keyBytes} bytes at ${iterations} iterations costs more than ${LIMITS.pbkdf2Rounds} rounds to verify `
      + '(iterations times the key\'s blocks, a SHA-512 round counting four; keys up to 64 bytes): over a second of a core at each sign-in');
  }
}

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Standard base64 (padding optional) to bytes; a HashFormatError naming `what` otherwise. */
function bytes(value: unknown, what: string): Buffer {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024 || !B64.test(value)) throw new HashFormatError(`${what} must be base64`);
  return Buffer.from(value, 'base64');
}
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
    const memory = whole(Number(m[1]), 'the argon2 memory (m, KiB)', 8, LIMITS.argon2MemoryKiB);
    const time = whole(Number(m[2]), 'the argon2 iterations (t)', 1, LIMITS.argon2Time);
    whole(Number(m[3]), 'the argon2 lanes (p)', 1, LIMITS.argon2Lanes);
    if (memory * time > LIMITS.argon2MemoryTimesIterations) {
      throw new HashFormatError(`argon2 with m=${memory} KiB and t=${time} costs more than ${LIMITS.argon2MemoryTimesIterations} KiB times iterations to verify: over a second of a core at each sign-in`);
    }
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
    pbkdf2Cost(m[1] as 'sha1' | 'sha256', whole(Number(m[2]), 'the PBKDF2 iterations', 1, LIMITS.pbkdf2Rounds), m[1] === 'sha1' ? 20 : 32);
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

/**
 * scrypt's memory (128 · N · r bytes) and work (N · r · p) within the bounds, and parameters
 * OpenSSL computes with at all: N below 2^(16·r), so that r=1 takes N up to 2^15 only.
 */
function scryptCost(n: number, r: number, p: number): void {
  if (128 * n * r > LIMITS.scryptMemoryBytes) throw new HashFormatError(`scrypt with N=${n} and r=${r} needs more than ${LIMITS.scryptMemoryBytes / 1024 / 1024} MiB to verify`);
  whole(p, 'the scrypt parallelism (p)', 1, 16);
  if (n * r * p > LIMITS.scryptWork) throw new HashFormatError(`scrypt with N=${n}, r=${r} and p=${p} costs more than N·r·p = ${LIMITS.scryptWork} to verify: over a second of a core at each sign-in`);
  if (Math.log2(n) >= 16 * r) throw new HashFormatError(`scrypt with N=${n} and r=${r} can never be verified: OpenSSL needs N below 2^(16·r)`);
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
    const iterations = whole(o.iterations, '"iterations"', 1, LIMITS.pbkdf2Rounds);
    const key = hash();
    // PBKDF2 computes the whole iteration count once per block of the digest's size the key spans
    pbkdf2Cost(DIGESTS[f as keyof typeof DIGESTS], iterations, key.length);
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

/**
 * How a stored password hash is written, by its prefix: Gatehouse's own (`argon2id`) or one brought
 * from another system (docs/import.md), which becomes argon2id at the account's next sign-in. What
 * operators see (users:show, the export, the console), never the hash.
 */
export const PASSWORD_FORMATS: readonly (readonly [prefix: string, format: string])[] = [
  ['$argon2id$', 'argon2id'], ['$argon2i$', 'argon2i'], ['$argon2d$', 'argon2d'], ['$2a$', 'bcrypt'], ['$2b$', 'bcrypt'], ['$2y$', 'bcrypt'],
  ['$5$', 'sha256-crypt'], ['$6$', 'sha512-crypt'], ['$scrypt$', 'scrypt'], ['$firebase-scrypt$', 'firebase-scrypt'],
  ['$pbkdf2-sha1$', 'pbkdf2-sha1'], ['$pbkdf2-sha256$', 'pbkdf2-sha256'], ['$pbkdf2-sha512$', 'pbkdf2-sha512'], ['pbkdf2_sha1$', 'pbkdf2-sha1'],
  ['pbkdf2_sha256$', 'pbkdf2-sha256'], ['{SSHA}', 'ssha'], ['{SSHA256}', 'ssha256'], ['{SSHA512}', 'ssha512'], ['{SMD5}', 'smd5'], ['{SHA}', 'sha'], ['{MD5}', 'md5'],
];

/** The format of a stored password hash (PASSWORD_FORMATS), `other` for one none names, null for no password. */
export function passwordFormatOf(stored: string | null): string | null {
  if (stored === null) return null;
  return PASSWORD_FORMATS.find(([prefix]) => stored.startsWith(prefix))?.[1] ?? 'other';
}

/**
 * How much costlier than the policy's (memory times iterations) an argon2id hash may be and still be
 * verified on the argon2 threads: Gatehouse's own hashes stay there when an operator lowers the
 * policy (they are replaced at the next sign-in, and meanwhile cost what they did), while an
 * imported hash many times costlier goes to the imported hashes' threads.
 */
const OWN_COST_MARGIN = 4;
/** OWASP's parameters, the default policy: hashes made with them stay on the argon2 threads under any lower policy. */
const OWASP_COST = 19_456 * 2;

/**
 * Whether `stored` is verified as an imported hash, on the imported hashes' threads: anything but an
 * argon2id hash costing at most OWN_COST_MARGIN times the policy's, or OWASP's (memory times
 * iterations; lanes up to the policy's or 4), which the argon2 threads verify. An argon2 hash from
 * another system may cost many times the policy's (up to LIMITS): on the argon2 threads, a few wrong
 * guesses on such accounts would hold up every sign-in and registration behind them.
 */
export function isImported(stored: string, policy: { memoryCost: number; timeCost: number; parallelism: number }): boolean {
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(stored);
  if (!m) return true;
  const allowed = OWN_COST_MARGIN * Math.max(policy.memoryCost * policy.timeCost, OWASP_COST);
  return Number(m[1]) * Number(m[2]) > allowed || Number(m[3]) > Math.max(policy.parallelism, 4);
}

/**
 * Verifies a password against an imported hash, synchronously, with the libraries it is handed:
 * the imported hashes' threads run it (its source is their program, so it refers to nothing outside
 * itself: no import, no helper a compiler or a coverage tool would add; the tests verify every
 * format through the threads, so a change that breaks this fails them). False for a wrong password
 * and for a value no format here reads.
 */
export function verifyImportedSync(
  stored: string, password: string,
  libs: {
    crypto: typeof import('node:crypto'); bcrypt: { compareSync(p: string, h: string): boolean }; crypt: { verify(p: string, h: string): boolean };
    argon2: { verifySync(h: string, p: string): boolean };
  },
): boolean {
  const { crypto } = libs;
  const same = (a: Buffer, b: Buffer) => a.length === b.length && a.length > 0 && crypto.timingSafeEqual(a, b);
  const ab64 = (value: string) => Buffer.from(value.replace(/\./g, '+'), 'base64');
  // scrypt's memory bound with room for its own bookkeeping (256 MiB and 1 MiB: LIMITS.scryptMemoryBytes)
  const maxmem = 257 * 1024 * 1024;
  if (/^\$2[aby]\$/.test(stored)) return libs.bcrypt.compareSync(password, stored);
  // bounded at import (LIMITS): at most 256 MiB and m·t of 1 GiB·iteration
  if (/^\$argon2(?:i|d|id)\$/.test(stored)) return libs.argon2.verifySync(stored, password);
  if (/^\$[56]\$/.test(stored)) return libs.crypt.verify(password, stored);
  let m = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([./+A-Za-z0-9]+)\$([./+A-Za-z0-9]+)$/.exec(stored);
  if (m) {
    const expected = ab64(m[5]);
    return same(crypto.scryptSync(password, ab64(m[4]), expected.length, { N: 2 ** Number(m[1]), r: Number(m[2]), p: Number(m[3]), maxmem }), expected);
  }
  m = /^\$firebase-scrypt\$r=(\d+),m=(\d+)\$([^$]+)\$([^$]+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    // Firebase's modified scrypt: the key scrypt derives from the password and salt + separator encrypts the project's signer key (AES-256-CTR, zero IV)
    const [salt, separator, signerKey, expected] = [m[3], m[4], m[5], m[6]].map((v) => Buffer.from(v, 'base64'));
    const key = crypto.scryptSync(password, Buffer.concat([salt, separator]), 64, { N: 2 ** Number(m[2]), r: Number(m[1]), p: 1, maxmem });
    const cipher = crypto.createCipheriv('aes-256-ctr', key.subarray(0, 32), Buffer.alloc(16));
    return same(Buffer.concat([cipher.update(signerKey), cipher.final()]), expected);
  }
  m = /^\$pbkdf2-(sha1|sha256|sha512)\$i=(\d+)\$([^$]+)\$([^$]+)$/.exec(stored);
  if (m) {
    const expected = Buffer.from(m[4], 'base64');
    return same(crypto.pbkdf2Sync(password, Buffer.from(m[3], 'base64'), Number(m[2]), expected.length, m[1]), expected);
  }
  m = /^pbkdf2_(sha1|sha256)\$(\d+)\$([^$]+)\$([A-Za-z0-9+/]+={0,2})$/.exec(stored);
  if (m) {
    // Django: the salt is text, the digest's full length, base64
    const expected = Buffer.from(m[4], 'base64');
    return same(crypto.pbkdf2Sync(password, Buffer.from(m[3], 'utf8'), Number(m[2]), expected.length, m[1]), expected);
  }
  m = /^\{(SSHA|SSHA256|SSHA512|SMD5|SHA|MD5)\}([A-Za-z0-9+/]+={0,2})$/.exec(stored);
  if (m) {
    const [digest, size] = ({ SSHA: ['sha1', 20], SSHA256: ['sha256', 32], SSHA512: ['sha512', 64], SMD5: ['md5', 16], SHA: ['sha1', 20], MD5: ['md5', 16] } as const)[m[1] as 'SSHA'];
    const value = Buffer.from(m[2], 'base64');
    const salt = m[1] === 'SHA' || m[1] === 'MD5' ? Buffer.alloc(0) : value.subarray(size);
    return same(crypto.createHash(digest).update(password, 'utf8').update(salt).digest(), value.subarray(0, size));
  }
  return false;
}

/**
 * The program of the imported hashes' threads: verifyImportedSync, with bcryptjs, unixcrypt,
 * @node-rs/argon2 (the binding every hashing thread is handed) and node:crypto's synchronous calls.
 * On threads of their own, never on libuv's pool (which the SQLite driver, DNS and file reads need)
 * nor on the argon2 threads (which sign-ins on Gatehouse's own hashes need): a costly imported hash
 * slows only other imported hashes.
 */
export const IMPORTED_HASH_PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const verify = ${verifyImportedSync.toString()};
const libs = {
  crypto: require('node:crypto'), bcrypt: require(workerData.options.bcrypt), crypt: require(workerData.options.crypt), argon2: require(workerData.binding),
};
parentPort.on('message', ({ args }) => {
  let value = false;
  try { value = verify(args[0], args[1], libs) === true; } catch { value = false; }
  parentPort.postMessage({ value });
});
`;

/** What the imported hashes' threads are given: where bcryptjs and unixcrypt are. */
export const importedHashLibraries = () => ({ bcrypt: require.resolve('bcryptjs'), crypt: require.resolve('unixcrypt') });
