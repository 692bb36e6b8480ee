import { randomToken, safeEqual, SecretBox, sha256Hex } from '../../src/domain/secrets';

describe('secrets', () => {
  const box = new SecretBox(Buffer.alloc(32, 1));

  it('seals and opens a client secret bound to its client', () => {
    const sealed = box.seal('s3cret', 'client-a');
    expect(sealed).not.toContain('s3cret');
    expect(box.open(sealed, 'client-a')).toBe('s3cret');
    expect(box.seal('s3cret', 'client-a')).not.toBe(sealed); // fresh IV each time
  });

  it('refuses a sealed secret moved to another client, tampered with, or under another key', () => {
    const sealed = box.seal('s3cret', 'client-a');
    expect(() => box.open(sealed, 'client-b')).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'), 'client-a')).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 2)).open(sealed, 'client-a')).toThrow();
    expect(() => box.open('garbage', 'client-a')).toThrow('unrecognized');
  });

  it('makes random tokens of the requested entropy and hashes them', () => {
    expect(randomToken()).toMatch(/^[0-9a-f]{40}$/);
    expect(randomToken(16)).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(Array.from({ length: 1000 }, () => randomToken())).size).toBe(1000);
    // printf 'abc' | sha256sum
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('compares strings of any length', () => {
    expect(safeEqual('a', 'a')).toBe(true);
    expect(safeEqual('a', 'b')).toBe(false);
    expect(safeEqual('a', 'aa')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });
});
