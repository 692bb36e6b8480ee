import { FIREBASE_REFERENCE, foreignHashes, foreignToolsMissing, itWithForeignTools } from '../helpers/foreign-hashes';
import { HashFormatError, importedHash, isImported, LIMITS } from '../../src/domain/imported-hashes';
import { createPasswordHasher, IMPORTED_WAITING, type PasswordHasher } from '../../src/domain/passwords';
import { BusyError } from '../../src/domain/refusal';

// docs/import.md: each format a hash made by another tool is read, kept, and verified by its own
// algorithm: the right password passes, a wrong one does not. Argon2id hashes at most 4 times as costly
// as the policy's (or OWASP's) are verified by the argon2 threads, other argon2 hashes by the imported hashes'
// (test/integration/import.test.ts signs in with each).

const PASSWORD = 'correct horse battery';
// made in the tests that need them, never at load: without the other tools those tests skip, saying why
let madeOnce: ReturnType<typeof foreignHashes> | undefined;
const made = () => (madeOnce ??= foreignToolsMissing() ? [] : foreignHashes(PASSWORD));
let hasher: PasswordHasher;
beforeAll(() => {
  hasher = createPasswordHasher(undefined, 1);
});
afterAll(() => hasher.close());
const verifyImported = (stored: string, password: string) => hasher.verify(stored, password);

itWithForeignTools()('reads every foreign format, and weak ones are said to be weak', () => {
  expect(made().length).toBeGreaterThanOrEqual(23);
  for (const f of made()) {
    const imported = importedHash(f.object);
    expect({ name: f.name, weak: imported.weak }).toEqual({ name: f.name, weak: f.weak });
    expect(imported.stored.length).toBeLessThanOrEqual(255);
  }
});

itWithForeignTools()('every format made by another tool: the right password passes, a wrong one does not', async () => {
  for (const f of made()) {
    const { stored } = importedHash(f.object);
    expect({ name: f.name, right: await verifyImported(stored, PASSWORD), wrong: await verifyImported(stored, `${PASSWORD}!`), empty: await verifyImported(stored, '') })
      .toEqual({ name: f.name, right: true, wrong: false, empty: false });
  }
});

it("Firebase's reference vector verifies (firebase/scrypt's published example)", async () => {
  const { stored, format } = importedHash(FIREBASE_REFERENCE.object);
  expect(format).toBe('firebase-scrypt');
  expect(await verifyImported(stored, FIREBASE_REFERENCE.password)).toBe(true);
  expect(await verifyImported(stored, 'user2password')).toBe(false);
});

it('refuses what it cannot read or would cost too much, saying why', () => {
  const refused: Array<[unknown, RegExp]> = [
    [{ hashed: 'plainly not a hash' }, /names no algorithm/],
    [{ hashed: '$2b$31$' + 'a'.repeat(53) }, new RegExp(`bcrypt cost must be a whole number from 4 to ${LIMITS.bcryptCost}`)],
    [{ hashed: '$argon2id$v=19$m=4194304,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2g' }, /argon2 memory/],
    [{ hashed: '$6$rounds=999999999$salt$abc' }, /crypt\(3\) rounds/],
    [{ hashed: 'pbkdf2_sha256$999999999$salt$YWJj' }, /PBKDF2 iterations/],
    [{ hashed: `pbkdf2_sha256$4000001$salt$${Buffer.alloc(32).toString('base64')}` }, /from 1 to 4000000/],
    [{ hashed: 'c2FsdA==', format: 'scrypt', salt: 'c2FsdA==', n: 3 }, /power of two/],
    [{ hashed: 'c2FsdA==', format: 'scrypt', salt: 'c2FsdA==', n: 2 ** 20, r: 8 }, /MiB/],
    // within the memory bound, but 16 times a second of a core: N·r·p is bounded
    [{ hashed: '$scrypt$ln=18,r=8,p=16$c2FsdHNhbHQ$aGFzaGhhc2g' }, /N·r·p = 2097152/],
    [{ hashed: 'c2FsdA==', format: 'scrypt', salt: 'c2FsdA==', n: 2 ** 14, r: 8, p: 32 }, /"p" must be/],
    // OpenSSL computes scrypt only with N below 2^(16·r): such a hash could never sign in
    [{ hashed: '$scrypt$ln=16,r=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g' }, /can never be verified/],
    [{ hashed: '$argon2id$v=19$m=262144,t=10,p=1$c2FsdHNhbHQ$aGFzaGhhc2g' }, /KiB times iterations/],
    [{ hashed: Buffer.alloc(64).toString('base64'), format: 'pbkdf2-sha512', salt: 'c2FsdA==', iterations: 1_500_000 }, /a SHA-512 round counting four/],
    [{ hashed: 'YWJj', format: 'firebase-scrypt', salt: 'c2FsdA==', salt_separator: 'Bw==', signer_key: 'a2V5', rounds: 8 }, /"mem_cost"/],
    [{ hashed: 'not base64!', format: 'pbkdf2-sha256', salt: 'c2FsdA==', iterations: 1000 }, /"hashed" must be base64/],
    [{ hashed: '$2b$05$' + 'a'.repeat(53), format: 'sha512-crypt' }, /encoding is bcrypt's/],
    [{ hashed: 'x', format: 'rot13' }, /"format" must be one of/],
    [{ hashed: '{SSHA}YWJj' }, /20-byte digest followed by its salt/],
    // a key of many digest blocks multiplies PBKDF2's rounds; Django's key is the digest's length
    [{ hashed: Buffer.alloc(64 * 4).toString('base64'), format: 'pbkdf2-sha1', salt: 'c2FsdA==', iterations: 1000 }, /keys up to 64 bytes/],
    [{ hashed: Buffer.alloc(64).toString('base64'), format: 'pbkdf2-sha1', salt: 'c2FsdA==', iterations: 2_000_000 }, /costs more than/],
    [{ hashed: `pbkdf2_sha1$1000$salt$${Buffer.alloc(200).toString('base64')}` }, /20 bytes/],
    [{ hashed: '$6$saltsalt$tooShort' }, /86 characters of its digest/],
    [{ hashed: '$6$rounds=05000$saltsalt$' + 'a'.repeat(86) }, /names no algorithm/],
    [{ hashed: 'AAAA', format: 'firebase-scrypt', salt: Buffer.alloc(200).toString('base64'), salt_separator: 'Bw==', signer_key: 'a2V5', rounds: 8, mem_cost: 14 }, /at most 255 fit/],
    [{}, /"hashed" must be/],
  ];
  for (const [raw, why] of refused) {
    const attempt = () => importedHash(raw);
    expect(attempt).toThrow(HashFormatError);
    expect(attempt).toThrow(why);
  }
});

it('takes the costliest hashes within the bounds, each verified in about a second at most', async () => {
  for (const [raw, label] of [
    [{ hashed: Buffer.alloc(32).toString('base64'), format: 'scrypt', salt: 'c2FsdA==', n: 2 ** 14, r: 8, p: 16 }, 'scrypt N·r·p = 2^21'],
    [{ hashed: Buffer.alloc(32).toString('base64'), format: 'pbkdf2-sha256', salt: 'c2FsdA==', iterations: 4_000_000 }, 'PBKDF2-SHA-256, 4,000,000 iterations'],
  ] as const) {
    const { stored } = importedHash(raw);
    const started = performance.now();
    expect(await verifyImported(stored, PASSWORD)).toBe(false);
    // a generous bound on a loaded 2-core machine: the bounds aim at about a second on an idle one
    expect({ label, fast: performance.now() - started < 6_000 }).toEqual({ label, fast: true });
  }
}, 30_000);

it('verifies imported hashes on threads of their own with a bounded queue: past a few at once, 503 (BusyError) at once', async () => {
  const { stored } = importedHash({ hashed: Buffer.alloc(32).toString('base64'), format: 'scrypt', salt: 'c2FsdA==', n: 2 ** 14, r: 8, p: 16 });
  const attempts = Array.from({ length: IMPORTED_WAITING + 6 }, () => verifyImported(stored, PASSWORD).then((ok) => ok, (e: unknown) => e));
  const outcomes = await Promise.all(attempts);
  const busy = outcomes.filter((o) => o instanceof BusyError);
  expect(busy.length).toBeGreaterThan(0);
  expect(outcomes.filter((o) => o === false).length).toBeGreaterThanOrEqual(IMPORTED_WAITING);
  // and the queue drained: the next one is verified
  expect(await verifyImported(stored, PASSWORD)).toBe(false);
}, 60_000);

it("argon2 hashes costlier than the policy's are verified on the imported hashes' threads: past a few at once 503, and a sign-in on Gatehouse's own hash does not wait for them", async () => {
  // the costliest argon2 within the bounds (m·t = 1 GiB·iteration, about half a second of a core each)
  const salt = Buffer.alloc(16, 1).toString('base64').replace(/=+$/, '');
  const { stored } = importedHash({ hashed: `$argon2id$v=19$m=262144,t=4,p=1$${salt}$${Buffer.alloc(32).toString('base64').replace(/=+$/, '')}` });
  const own = await hasher.hash(PASSWORD);
  const answered: unknown[] = [];
  const attempts = Array.from({ length: IMPORTED_WAITING + 6 }, () => verifyImported(stored, PASSWORD).then((ok) => ok, (e: unknown) => e).then((o) => {
    answered.push(o);
    return o;
  }));
  expect(await hasher.verify(own, PASSWORD)).toBe(true);
  const verifiedMeanwhile = answered.filter((o) => o === false).length;
  const outcomes = await Promise.all(attempts);
  expect(outcomes.filter((o) => o instanceof BusyError).length).toBeGreaterThan(0);
  const verified = outcomes.filter((o) => o === false).length;
  expect(verified).toBeGreaterThanOrEqual(IMPORTED_WAITING);
  // on the argon2 threads, Gatehouse's own hash waited for every one of them
  expect({ verifiedMeanwhile, verified, waitedForFew: verifiedMeanwhile < verified / 2 }).toMatchObject({ waitedForFew: true });
}, 60_000);

it('Gatehouse\'s own hashes stay on the argon2 threads when the policy is lowered; argon2i, argon2d and many times costlier argon2id go to the imported hashes\' threads', () => {
  const owasp = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };
  const lowered = { memoryCost: 8_192, timeCost: 1, parallelism: 1 };
  const hash = (variant: string, m: number, t: number, p: number) => `$${variant}$v=19$m=${m},t=${t},p=${p}$c2FsdHNhbHQ$aGFzaGhhc2g`;
  expect(isImported(hash('argon2id', 19_456, 2, 1), owasp)).toBe(false);
  expect(isImported(hash('argon2id', 19_456, 2, 1), lowered)).toBe(false);
  expect(isImported(hash('argon2id', 65_536, 3, 4), owasp)).toBe(true);
  expect(isImported(hash('argon2id', 262_144, 4, 1), owasp)).toBe(true);
  expect(isImported(hash('argon2id', 19_456, 2, 8), owasp)).toBe(true);
  expect(isImported(hash('argon2i', 19_456, 2, 1), owasp)).toBe(true);
  expect(isImported(hash('argon2d', 19_456, 2, 1), owasp)).toBe(true);
});
