import { createBaseUrls } from '../../src/domain/base-urls';

describe("an application's own base URL", () => {
  it('is PUBLIC_BASE_URL for the default application and its name before the host for any other', () => {
    const urls = createBaseUrls('http://localhost:3000', 'local');
    expect(urls.of('local')).toBe('http://localhost:3000');
    expect(urls.of('conf')).toBe('http://conf.localhost:3000');
    expect(createBaseUrls('https://login.example.com', 'local').of('conf')).toBe('https://conf.login.example.com');
    expect(createBaseUrls('https://login.example.com/auth', 'local').of('conf')).toBe('https://conf.login.example.com/auth');
  });

  it("takes the default application's place when PUBLIC_BASE_URL starts with its name", () => {
    expect(createBaseUrls('https://local.example.com', 'local').of('conf')).toBe('https://conf.example.com');
  });

  it('keeps an IP address, which names no application', () => {
    expect(createBaseUrls('http://127.0.0.1:3000', 'local').of('conf')).toBe('http://127.0.0.1:3000');
    expect(createBaseUrls('http://[::1]:3000', 'local').of('conf')).toBe('http://[::1]:3000');
  });

  it('moves a setting on the bare host to the application, and leaves any other URL alone', () => {
    const urls = createBaseUrls('http://localhost:3000', 'local');
    expect(urls.rebase('http://localhost:3000/reset-password?x=1', 'conf')).toBe('http://conf.localhost:3000/reset-password?x=1');
    expect(urls.rebase('http://localhost:3000/reset-password', 'local')).toBe('http://localhost:3000/reset-password');
    expect(urls.rebase('https://app.example.com/reset', 'conf')).toBe('https://app.example.com/reset');
    expect(urls.rebase('http://conf.localhost:3000/verify-email', 'conf')).toBe('http://conf.localhost:3000/verify-email');
    expect(urls.rebase('not a url', 'conf')).toBe('not a url');
  });
});
