import { FIREBASE_REFERENCE, foreignHashes } from '../helpers/foreign-hashes';
import { HashFormatError, importedHash, LIMITS, verifyImported } from '../../src/domain/imported-hashes';

// docs/import.md: each format a hash made by another tool is read, kept, and verified by its own
// algorithm: the right password passes, a wrong one does not. Argon2 hashes are verified by the
// argon2 threads (test/integration/import.test.ts signs in with them).

const PASSWORD = 'correct horse battery';
const made = foreignHashes(PASSWORD);

it('reads every foreign format, and weak ones are said to be weak', () => {
  expect(made.length).toBeGreaterThanOrEqual(22);
  for (const f of made) {
    const imported = importedHash(f.object);
    expect({ name: f.name, weak: imported.weak }).toEqual({ name: f.name, weak: f.weak });
    expect(imported.stored.length).toBeLessThanOrEqual(255);
  }
});

it.each(made.filter((f) => !String(f.object.hashed).startsWith('$argon2')).map((f) => [f.name, f] as const))('%s: the right password passes, a wrong one does not', async (_name, f) => {
  const { stored } = importedHash(f.object);
  expect(await verifyImported(stored, PASSWORD)).toBe(true);
  expect(await verifyImported(stored, `${PASSWORD}!`)).toBe(false);
  expect(await verifyImported(stored, '')).toBe(false);
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
    [{ hashed: 'c2FsdA==', format: 'scrypt', salt: 'c2FsdA==', n: 3 }, /power of two/],
    [{ hashed: 'c2FsdA==', format: 'scrypt', salt: 'c2FsdA==', n: 2 ** 20, r: 8 }, /MiB/],
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
