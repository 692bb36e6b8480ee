/**
 * How short a new password may be (docs/passwords.md). Every path that sets a password applies a
 * minimum: a flow's form its own (raised or lowered by the application's settings), the records
 * API and the CLI the application's `password_min_length`; none is ever below LOWEST_MIN_LENGTH.
 * (Importing existing password hashes is the one path that sets no password in clear.)
 */

/** The shortest any minimum may be (NIST SP 800-63B-4: 8 when a password is not the only factor; 15 when it is, the standard flow's). */
export const LOWEST_MIN_LENGTH = 8;
/** The longest minimum an application may ask for: NIST asks that at least 64 characters be allowed. */
export const MAX_MIN_LENGTH = 64;

/** A length setting's value (`password_min_length`), when it is one. */
export const lengthSetting = (value: string | undefined): number | undefined => (value !== undefined && /^\d{1,2}$/.test(value) ? Number(value) : undefined);

/** The minimum of a password set outside a flow's form (the records API, the CLI): the application's `password_min_length`, never below 8. */
export const passwordMinimum = (settings: Readonly<Record<string, string>>): number =>
  Math.max(LOWEST_MIN_LENGTH, lengthSetting(settings['password_min_length']) ?? LOWEST_MIN_LENGTH);

/** Why `password` is too short for `minimum` (counted in characters, as people count them), or undefined. */
export const tooShortFor = (password: string, minimum: number): string | undefined =>
  ([...password].length < minimum ? `is shorter than ${minimum} characters, the application's minimum (docs/passwords.md); choose a longer one` : undefined);
