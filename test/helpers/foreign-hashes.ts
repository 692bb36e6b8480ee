import { execFileSync } from 'node:child_process';
import bcryptjs from 'bcryptjs';

/**
 * Password hashes made by tools other than Gatehouse, as an import brings them (docs/import.md):
 * Python's passlib, bcrypt, argon2-cffi, cryptography and hashlib (Debian's python3-* packages),
 * mkpasswd and htpasswd, and the reference test vector of Firebase's scrypt. Each entry is a password
 * object for /entity.bulkCreate and the password it was made from.
 */
export interface ForeignHash { name: string; password: string; object: Record<string, unknown>; weak: boolean }

/** Debian's Python: its packages (python3-passlib, …) are installed for it, whatever python3 is first on PATH. */
const PYTHON = '/usr/bin/python3';

const PROGRAM = String.raw`
import base64, hashlib, json, os, sys
from passlib import hash as h
import argon2
from argon2.low_level import hash_secret, Type
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
pw = sys.argv[1]
b64 = lambda b: base64.b64encode(b).decode()
out = {}
out['bcrypt 2b (passlib + bcrypt)'] = {'hashed': h.bcrypt.using(rounds=5, ident='2b').hash(pw)}
out['bcrypt 2a (passlib + bcrypt)'] = {'hashed': h.bcrypt.using(rounds=5, ident='2a').hash(pw)}
for t, name in ((Type.ID, 'argon2id'), (Type.I, 'argon2i'), (Type.D, 'argon2d')):
    out[name + ' (argon2-cffi)'] = {'hashed': hash_secret(pw.encode(), os.urandom(16), time_cost=2, memory_cost=8192, parallelism=1, hash_len=32, type=t).decode()}
# costlier than Gatehouse's own parameters (19 MiB, 2 iterations, 1 lane): verified as an imported hash
out['argon2id costlier than the policy (argon2-cffi)'] = {'hashed': hash_secret(pw.encode(), os.urandom(16), time_cost=3, memory_cost=32768, parallelism=2, hash_len=32, type=Type.ID).decode()}
out['scrypt (passlib)'] = {'hashed': h.scrypt.using(rounds=12).hash(pw)}
salt = os.urandom(16)
out['scrypt with parameters (hashlib)'] = {'hashed': b64(hashlib.scrypt(pw.encode(), salt=salt, n=4096, r=8, p=1, dklen=32)), 'format': 'scrypt', 'salt': b64(salt), 'n': 4096, 'r': 8, 'p': 1}
# Firebase's modified scrypt, ported here from its published description: scrypt(password, salt + separator) keys AES-256-CTR over the signer key
signer, sep, salt = os.urandom(64), b'\x07', os.urandom(12)
key = hashlib.scrypt(pw.encode(), salt=salt + sep, n=2**14, r=8, p=1, dklen=64)
enc = Cipher(algorithms.AES(key[:32]), modes.CTR(b'\0' * 16)).encryptor()
out['firebase-scrypt (hashlib + cryptography)'] = {'hashed': b64(enc.update(signer) + enc.finalize()), 'format': 'firebase-scrypt', 'salt': b64(salt), 'salt_separator': b64(sep), 'signer_key': b64(signer), 'rounds': 8, 'mem_cost': 14}
out['django pbkdf2_sha256 (passlib)'] = {'hashed': h.django_pbkdf2_sha256.using(rounds=20000).hash(pw)}
out['django pbkdf2_sha1 (passlib)'] = {'hashed': h.django_pbkdf2_sha1.using(rounds=20000).hash(pw)}
for fmt, digest, rounds in (('pbkdf2-sha256', 'sha256', 27500), ('pbkdf2-sha512', 'sha512', 21000), ('pbkdf2', 'sha1', 27500)):
    salt = os.urandom(16)
    out['keycloak ' + fmt + ' (hashlib)'] = {'hashed': b64(hashlib.pbkdf2_hmac(digest, pw.encode(), salt, rounds, dklen=64)), 'format': fmt, 'salt': b64(salt), 'iterations': rounds}
out['{SSHA} (passlib)'] = {'hashed': h.ldap_salted_sha1.hash(pw)}
out['{SMD5} (passlib)'] = {'hashed': h.ldap_salted_md5.hash(pw)}
out['{SSHA256} (passlib)'] = {'hashed': h.ldap_salted_sha256.hash(pw)}
out['{SSHA512} (passlib)'] = {'hashed': h.ldap_salted_sha512.hash(pw)}
out['{MD5} (passlib)'] = {'hashed': h.ldap_md5.hash(pw)}
print(json.dumps(out))
`;

/**
 * Why the foreign hashes cannot be made on this machine (a tool or Python package missing, named
 * with the Debian package that brings it), or undefined when they can: the tests that need them skip
 * saying so, as the README's list of test tools tells.
 */
export function foreignToolsMissing(): string | undefined {
  return (missingTools ??= { why: findMissingTools() }).why;
}
// asked once per test file (each question starts a Python), and said once
let missingTools: { why: string | undefined } | undefined;
let saidMissing = false;

function findMissingTools(): string | undefined {
  const missing: string[] = [];
  try {
    // every package PROGRAM imports: one missing would make foreignHashes throw instead of the tests skipping
    execFileSync(PYTHON, ['-c', 'import passlib, bcrypt, argon2, cryptography'], { stdio: 'ignore' });
  } catch {
    missing.push('python3-passlib, python3-bcrypt, python3-argon2 and python3-cryptography (for /usr/bin/python3)');
  }
  const has = (command: string) => {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  if (!has('htpasswd')) missing.push('htpasswd (apache2-utils)');
  if (!has('mkpasswd')) missing.push('mkpasswd (whois)');
  return missing.length === 0 ? undefined : `hashes made by other tools need ${missing.join(', ')}; .ci/run installs them`;
}

/** `it` where the other tools are here; elsewhere a skipped test, said once with what is missing. */
export function itWithForeignTools(): jest.It {
  const missing = foreignToolsMissing();
  if (missing && !saidMissing) process.stdout.write(`skipped: ${missing}\n`);
  saidMissing = missing !== undefined;
  return missing ? it.skip : it;
}

/** A bcrypt hash of `password` at cost 5 (bcryptjs, the library Gatehouse verifies with), for tests that need one imported hash and no other tool. */
export const bcryptOf = (password: string): ForeignHash => ({ name: 'bcrypt (bcryptjs)', password, object: { hashed: bcryptjs.hashSync(password, 5) }, weak: false });

const WEAK_PREFIXES = ['{SSHA}', '{SSHA256}', '{SSHA512}', '{SMD5}', '{SHA}', '{MD5}'];

/** Every foreign hash of `password`, made now by the other tools. */
export function foreignHashes(password: string): ForeignHash[] {
  const made = JSON.parse(execFileSync(PYTHON, ['-c', PROGRAM, password], { encoding: 'utf8' })) as Record<string, Record<string, unknown>>;
  const tool = (command: string, args: string[]) => execFileSync(command, args, { encoding: 'utf8' }).trim();
  made['bcrypt 2y (htpasswd)'] = { hashed: tool('htpasswd', ['-nbB', '-C', '5', 'u', password]).split(':')[1] };
  made['{SHA} (htpasswd)'] = { hashed: tool('htpasswd', ['-nbs', 'u', password]).split(':')[1] };
  made['sha512-crypt (mkpasswd)'] = { hashed: tool('mkpasswd', ['-m', 'sha-512', password]) };
  made['sha256-crypt (mkpasswd, 10000 rounds)'] = { hashed: tool('mkpasswd', ['-m', 'sha-256', '-R', '10000', password]) };
  return Object.entries(made).map(([name, object]) => ({
    name, password, object, weak: WEAK_PREFIXES.some((p) => String(object.hashed).toUpperCase().startsWith(p)),
  }));
}

/** The reference test vector of Firebase's scrypt (firebase/scrypt's README): the project's parameters, a user's salt and hash. */
export const FIREBASE_REFERENCE = {
  password: 'user1password',
  object: {
    hashed: 'lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==', format: 'firebase-scrypt',
    salt: '42xEC+ixf3L2lw==', salt_separator: 'Bw==', signer_key: 'jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==', rounds: 8, mem_cost: 14,
  },
};
