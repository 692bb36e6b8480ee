import type { Request, Response } from 'express';
import { SecretBox } from '../../src/domain/secrets';
import { csrf } from '../../src/web/pages';

/** A request as Express gives it to a page, with the cookies and headers a browser would send. */
const request = (cookies: Record<string, string>, headers: Record<string, string> = {}, secure = false) => ({
  secure, protocol: secure ? 'https' : 'http',
  headers: { cookie: Object.entries(cookies).map(([k, v]) => `${k}=${v}`).join('; '), host: 'login.example.com', ...headers },
  get: (name: string) => (name.toLowerCase() === 'host' ? 'login.example.com' : undefined),
}) as unknown as Request;

/** Issues a token the way a page does: the cookie it sets, and the form field's value. */
function issued(token: ReturnType<typeof csrf>, secure = false) {
  const set: { name: string; value: string; options: Record<string, unknown> }[] = [];
  const res = { cookie: (name: string, value: string, options: Record<string, unknown>) => set.push({ name, value, options }) } as unknown as Response;
  const field = token.issue(request({}, {}, secure), res);
  return { field, cookie: set[0] };
}

describe("a page form's CSRF token", () => {
  const box = new SecretBox(Buffer.alloc(32, 7));
  const token = csrf(box, 'gh_test_csrf', '/page', false);

  it('matches its own cookie only, and not a value planted as both cookie and field', () => {
    const { field, cookie } = issued(token);
    expect(cookie).toMatchObject({ name: 'gh_test_csrf', options: { httpOnly: true, sameSite: 'strict', path: '/page', secure: false } });
    expect(token.matches(request({ gh_test_csrf: cookie.value }), field)).toBe(true);
    expect(token.matches(request({ gh_test_csrf: 'p'.repeat(32) }), 'p'.repeat(32))).toBe(false);
    expect(token.matches(request({ gh_test_csrf: 'p'.repeat(32) }), field)).toBe(false);
    const [at, tag] = field.split('.');
    expect(token.matches(request({ gh_test_csrf: cookie.value }), `${Number(at) + 3600}.${tag}`)).toBe(false);
  });

  it('ends after 30 minutes, as its cookie does', () => {
    const { field, cookie } = issued(token);
    const now = Date.now();
    const later = jest.spyOn(Date, 'now').mockReturnValue(now + 31 * 60_000);
    try {
      expect(token.matches(request({ gh_test_csrf: cookie.value }), field)).toBe(false);
    } finally {
      later.mockRestore();
    }
  });

  it('is refused from another site, whatever it carries', () => {
    const { field, cookie } = issued(token);
    const held = { gh_test_csrf: cookie.value };
    expect(token.matches(request(held, { 'sec-fetch-site': 'cross-site' }), field)).toBe(false);
    expect(token.matches(request(held, { 'sec-fetch-site': 'same-site' }), field)).toBe(false);
    expect(token.matches(request(held, { origin: 'https://evil.example' }), field)).toBe(false);
    expect(token.matches(request(held, { origin: 'null' }), field)).toBe(false);
    expect(token.matches(request(held, { origin: 'http://login.example.com', 'sec-fetch-site': 'same-origin' }), field)).toBe(true);
  });

  it('lives in a __Host- cookie behind TLS, or when PUBLIC_BASE_URL is https', () => {
    const tls = issued(token, true).cookie;
    expect(tls).toMatchObject({ name: '__Host-gh_test_csrf', options: { path: '/', secure: true } });
    const https = issued(csrf(box, 'gh_test_csrf', '/page', true)).cookie;
    expect(https).toMatchObject({ name: '__Host-gh_test_csrf', options: { path: '/', secure: true } });
  });
});
