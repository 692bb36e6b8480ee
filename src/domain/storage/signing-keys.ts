import type { Tx } from './transactions';

/** The algorithms the OpenID provider signs with (ID tokens, JWT access tokens): one key of each in each slot. */
export const SIGNING_ALGS = ['ES256', 'RS256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/** Where a key stands: `current` signs, `next` is published and signs after the next rotation; a retired key has no slot. */
export type KeySlot = `${'current' | 'next'}:${SigningAlg}`;

/** A signing key of an application's OpenID provider: its public JWK in clear, its private JWK sealed with SECRET_KEY. */
export interface StoredSigningKey {
  applicationId: number;
  kid: string;
  alg: SigningAlg;
  slot: KeySlot | null;
  publicJwk: Record<string, unknown>;
  privateSealed: string;
  createdAt: Date;
  retiredAt: Date | null;
}

export type NewSigningKey = Omit<StoredSigningKey, 'retiredAt'>;

/**
 * The signing keys of the applications' OpenID providers (docs/openid-connect.md#keys). One key
 * per slot and application: of pods that create the first keys at once, or rotate at once, one
 * wins and the others read what it wrote.
 */
export interface SigningKeyStore {
  /** The application's keys that are published: those in a slot, and those retired after `retiredAfter`; oldest first. */
  published(applicationId: number, retiredAfter: Date, tx?: Tx): Promise<StoredSigningKey[]>;
  /** Adds keys in empty slots; false (nothing written) when a slot was taken meanwhile. */
  add(keys: NewSigningKey[], tx: Tx): Promise<boolean>;
  /**
   * Rotates the keys of one algorithm: the current key retires, the next key (`nextKid`, as the
   * caller read it) becomes current, and `fresh` becomes next. False (nothing written) when the
   * next key is no longer `nextKid`: another rotation came first.
   */
  rotate(applicationId: number, alg: SigningAlg, nextKid: string, fresh: NewSigningKey, now: Date, tx: Tx): Promise<boolean>;
  /** Deletes keys retired before `before` (no token they signed is alive); answers how many. */
  sweepAlone(before: Date): Promise<number>;
}
