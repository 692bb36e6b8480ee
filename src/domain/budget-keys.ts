/**
 * Every rate-limit counter's key, named once (docs/hardening.md#budgets-count-addresses-not-spellings): `what:scope:application:subject`.
 * The application's id is the third part of each, which the Redis limiter tags so that one
 * application's counters share a Redis Cluster slot; an address is as the budgets see it
 * (peerBudgetKey: an IPv6 address by its /64), an email address only as its digest.
 */
export const BUDGET_KEYS = {
  /** Password checks of one account (its id, or the address typed when no account has it). */
  loginAccount: (applicationId: number, subject: string) => `login:account:${applicationId}:${subject}`,
  /** Password checks and social key checks from one client address. */
  loginAddress: (applicationId: number, address: string) => `login:address:${applicationId}:${address}`,
  /** Registrations from one client address. */
  registerAddress: (applicationId: number, address: string) => `register:address:${applicationId}:${address}`,
  /** Emails to one recipient (the digest of its address), and asked from one client address. */
  mailRecipient: (applicationId: number, emailDigest: string) => `mail:recipient:${applicationId}:${emailDigest}`,
  mailAddress: (applicationId: number, address: string) => `mail:address:${applicationId}:${address}`,
  /** Passkey sign-ins begun from one client address. */
  passkeyAddress: (applicationId: number, address: string) => `passkey:address:${applicationId}:${address}`,
  /** Social sign-ins begun from one client address. */
  socialStart: (applicationId: number, address: string) => `social:start:${applicationId}:${address}`,
  /** Wrong device user codes typed from one client address, and in the whole application. */
  deviceAddress: (applicationId: number, address: string) => `device:address:${applicationId}:${address}`,
  deviceApplication: (applicationId: number) => `device:application:${applicationId}:all`,
  /** The turns of an address past its device budget (spaced out, not counted). */
  deviceTurn: (applicationId: number, address: string) => `device:turn:${applicationId}:${address}`,
  /** Wrong guesses of one mailed sign-in code (the digest of its code_token). */
  emailCodeGuesses: (applicationId: number, codeTokenHash: string) => `email_code:guesses:${applicationId}:${codeTokenHash}`,
  /** Failed sign-ins and registrations that make a proof of work asked for (`when_busy`): from one address, and in the whole application. */
  busyAddress: (applicationId: number, address: string) => `busy:address:${applicationId}:${address}`,
  busyApplication: (applicationId: number) => `busy:application:${applicationId}:all`,
  /** SCIM calls of one bearer token (its public id), and calls from one client address whose token is none. */
  scimToken: (applicationId: number, tokenId: string) => `scim:token:${applicationId}:${tokenId}`,
  scimFailed: (applicationId: number, address: string) => `scim:failed:${applicationId}:${address}`,
  /** SCIM lists no index answers, by one token (its public id; `caller` when the caller is no SCIM token). */
  scimScan: (applicationId: number, who: string) => `scim:scan:${applicationId}:${who}`,
} as const;
