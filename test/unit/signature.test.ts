import { formatSignatureDate, parseSignatureDate, sign, stringsToSign, verifySignature } from '../../src/domain/signature';

const SECRET = 'c0ffee00c0ffee00c0ffee00c0ffee00';
const DATE = '2026-11-21 05:40:00';

describe('Signature scheme (interoperates with the original client libraries)', () => {
  it('signs a call without parameters like openssl does, in both accepted forms', () => {
    // printf '/clients/list\n2026-11-21 05:40:00\n' | openssl dgst -sha1 -hmac 'c0ffee00c0ffee00c0ffee00c0ffee00' -binary | base64
    expect(sign(SECRET, '/clients/list\n2026-11-21 05:40:00\n')).toBe('6KMzOBduCdOjDtHUViLMeRMd3us=');
    // printf '/clients/list\n2026-11-21 05:40:00\n\n' | openssl dgst -sha1 -hmac 'c0ffee00c0ffee00c0ffee00c0ffee00' -binary | base64
    expect(verifySignature(SECRET, 'lvzrJourcn4n7cvAyjx1oEaHBuM=', '/clients/list', DATE, [])).toBe(true);
    expect(verifySignature(SECRET, '6KMzOBduCdOjDtHUViLMeRMd3us=', '/clients/list', DATE, [])).toBe(true);
  });

  it('signs sorted key=value lines with raw (not URL-encoded) values', () => {
    // printf '/entity.find\n2026-11-21 05:40:00\nfilter=email = '"'"'a+b@example.com'"'"'\ntype_name=user\n' \
    //   | openssl dgst -sha1 -hmac 'c0ffee00c0ffee00c0ffee00c0ffee00' -binary | base64
    const params: [string, string][] = [['type_name', 'user'], ['filter', "email = 'a+b@example.com'"]];
    expect(stringsToSign('/entity.find', DATE, params)[0]).toBe("/entity.find\n2026-11-21 05:40:00\nfilter=email = 'a+b@example.com'\ntype_name=user\n");
    expect(verifySignature(SECRET, '/8tUnOWw4uJW0FYFh+3GNjIeW4A=', '/entity.find', DATE, params)).toBe(true);
  });

  it('sorts whole key=value strings, and also accepts the by-key order of other libraries', () => {
    const params: [string, string][] = [['a', '1'], ['a-b', '2']];
    // printf '/x\n2026-11-21 05:40:00\na-b=2\na=1\n' | openssl dgst -sha1 -hmac 's3cret' -binary | base64
    expect(verifySignature('s3cret', 'A13wbp5dinLpMks9n2q7LtnStyE=', '/x', DATE, params)).toBe(true);
    // printf '/x\n2026-11-21 05:40:00\na=1\na-b=2\n' | openssl dgst -sha1 -hmac 's3cret' -binary | base64
    expect(verifySignature('s3cret', 'CQjlqfUYGHcZulZvO/T5vWf03XE=', '/x', DATE, params)).toBe(true);
  });

  it('refuses a signature made with another secret, path, date or parameter', () => {
    const params: [string, string][] = [['type_name', 'user'], ['filter', "email = 'a+b@example.com'"]];
    const good = '/8tUnOWw4uJW0FYFh+3GNjIeW4A=';
    expect(verifySignature('other', good, '/entity.find', DATE, params)).toBe(false);
    expect(verifySignature(SECRET, good, '/entity', DATE, params)).toBe(false);
    expect(verifySignature(SECRET, good, '/entity.find', '2026-11-21 05:40:01', params)).toBe(false);
    expect(verifySignature(SECRET, good, '/entity.find', DATE, [['type_name', 'users'], params[1]])).toBe(false);
    expect(verifySignature(SECRET, '', '/entity.find', DATE, params)).toBe(false);
  });

  it('parses only real UTC dates in YYYY-MM-DD HH:MM:SS', () => {
    expect(parseSignatureDate(DATE)?.toISOString()).toBe('2026-11-21T05:40:00.000Z');
    expect(formatSignatureDate(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02 03:04:05');
    for (const bad of ['2026-02-30 00:00:00', '2026-11-21T05:40:00', '2026-11-21 25:00:00', 'Sat, 21 Nov 2026 05:40:00 GMT', '']) {
      expect(parseSignatureDate(bad)).toBeUndefined();
    }
  });
});
