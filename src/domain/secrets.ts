import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random value of `bytes` bytes of entropy, as lowercase hex (safe in URLs, forms and signatures). */
export function randomToken(bytes = 20): string {
  return randomBytes(bytes).toString('hex');
}

/** SHA-256 of a code or token, hex: what the database stores instead of the value. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time equality of two strings of any length (compares their SHA-256 digests). */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

const FORMAT = 'v1';

/**
 * A sealed value did not open: almost always a SECRET_KEY other than the one the data was sealed
 * with (every api and worker process needs the same key), rarely a row edited by hand.
 */
export class SealedWithAnotherKeyError extends Error {
  constructor() {
    super('a stored secret does not open with this SECRET_KEY: it is not the key the data was sealed with (every process needs the same SECRET_KEY; the first one is in var/secret.key on the embedded default)');
    this.name = 'SealedWithAnotherKeyError';
  }
}

/**
 * Encrypts client secrets at rest with AES-256-GCM. The HMAC `Signature` scheme needs the plain
 * secret to verify a request, so secrets cannot be stored as one-way hashes. The row's client_id
 * is bound as associated data, so a ciphertext copied onto another client does not decrypt.
 */
export class SecretBox {
  private readonly key: Buffer;
  private readonly tagKey: Buffer;

  constructor(secretKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'gatehouse client secrets v1', 32));
    this.tagKey = Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'gatehouse value tags v1', 32));
  }

  /**
   * A keyed digest of `value` for `purpose` (HMAC-SHA-256, base64url). A browser holding the tag
   * of a value proves a page of ours gave it that value: nobody without the key can make one.
   */
  tag(value: string, purpose: string): string {
    return createHmac('sha256', this.tagKey).update(`${purpose}\n${value}`, 'utf8').digest('base64url');
  }

  seal(plain: string, boundTo: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [FORMAT, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Throws SealedWithAnotherKeyError when the value was sealed with another key or for another client. */
  open(sealed: string, boundTo: string): string {
    const [format, iv, tag, body] = sealed.split('.');
    if (format !== FORMAT || !iv || !tag || body === undefined) throw new Error('unrecognized sealed secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedWithAnotherKeyError();
    }
  }
}
