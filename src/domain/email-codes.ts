import { randomInt } from 'node:crypto';
import type { Application } from './storage/applications';
import type { Client } from './clients';
import type { SecretBox } from './secrets';
import { isValidEmail } from './users';
import { registrationOpen } from './registration';

/**
 * Sign-in by a code or a link mailed to the person (docs/email-codes.md): a first factor, the
 * possession of the mailbox. One message carries both a 6-digit code, typed where the sign-in
 * began, and a link that signs in only in the browser that asked.
 */

/** How long a mailed code lives. */
export const EMAIL_CODE_SECONDS = 600;
/** Wrong codes one mailed code takes before it ends. */
export const EMAIL_CODE_GUESSES = 5;
export const EMAIL_CODE_DIGITS = 6;

/** A new code: six digits, uniformly drawn (leading zeros kept). */
export const newEmailCode = (): string => String(randomInt(10 ** EMAIL_CODE_DIGITS)).padStart(EMAIL_CODE_DIGITS, '0');

/** A code as typed (spaces and dashes a person or a mail client adds removed); undefined when it is not six digits. */
export function typedEmailCode(typed: string): string | undefined {
  const code = typed.replace(/[\s-]+/g, '');
  return /^\d{6}$/.test(code) ? code : undefined;
}

/** A setting of the login client, else of the application. */
const settingOf = (app: Application, client: Client, key: string): string | undefined => client.settings[key] ?? app.settings[key];

/** Whether the application offers sign-in by email code to this client (setting `email_code_sign_in`: `on`; `off` by default). */
export const offersEmailCode = (app: Application, client: Client): boolean => settingOf(app, client, 'email_code_sign_in') === 'on';

/** Whether a code mailed to an address no account has registers one (setting `email_code_registration`: `on`; `off` by default). */
export const emailCodeRegisters = (app: Application, client: Client): boolean => settingOf(app, client, 'email_code_registration') === 'on' && registrationOpen(app, client);

/**
 * The family of an address's codes: a keyed digest of the address as accounts are looked up by it
 * (lower case), so a new code ends the address's earlier ones whether an account has it or not, and
 * no row holds the address in clear.
 */
export const emailCodeFamily = (box: SecretBox, applicationId: number, normalizedAddress: string) =>
  box.tag(`${applicationId}\n${normalizedAddress}`, 'email code family');

/** What a code's sealed values are bound to: its own row (the hash of its code_token). */
export const emailCodeBinding = (codeTokenHash: string) => `email_code:${codeTokenHash}`;

/** What a link's sealed code_token is bound to: the application, so a link of one never opens in another. */
export const emailLinkBinding = (applicationId: number) => `email_code_link:${applicationId}`;

/** The path of the page a mailed link opens (a button: a mail scanner that fetches it signs nobody in). */
export const EMAIL_LINK_PATH = '/signin/email-code/link';

/**
 * What a code's row keeps beside its hash: the code and the address, sealed to the row (the page a
 * link opens in another browser shows the code; a registration needs the address), and where a
 * hosted page's sign-in goes back to.
 */
export interface EmailCodeExtra {
  sealedCode: string;
  sealedEmail: string;
  /** A hosted page's sign-in: the app's state and the page's language, to go back with. */
  hosted?: { state?: string; locale: string };
}

/** The well-formed address of a begin (the rule of a record's email), or undefined. */
export function emailOf(value: string): string | undefined {
  const email = value.trim();
  return isValidEmail(email) ? email : undefined;
}

