import { fromGithub, fromOidcClaims, parseProfile } from '../../src/domain/social/profile';

describe('social profiles in the auth_info shape', () => {
  it('OpenID Connect claims: identifier from issuer and subject, verifiedEmail only when email_verified is true', () => {
    const claims = { sub: 'u 1', email: 'Ada@Example.com', email_verified: true, given_name: 'Ada', family_name: 'Lovelace', picture: 'https://p/a.png', birthdate: '1815-12-10', phone_number: 'not a phone' };
    expect(fromOidcClaims('google', 'https://accounts.google.com/', claims)).toEqual({
      identifier: 'https://accounts.google.com#u%201', providerName: 'google', email: 'Ada@Example.com', verifiedEmail: 'Ada@Example.com',
      displayName: 'Ada Lovelace', name: { givenName: 'Ada', familyName: 'Lovelace', formatted: 'Ada Lovelace' }, photo: 'https://p/a.png', birthday: '1815-12-10',
    });
    expect(fromOidcClaims('okta', 'https://x', { sub: '1', email: 'a@b.c', email_verified: 'true' }).verifiedEmail).toBeUndefined();
    expect(fromOidcClaims('okta', 'https://x', { sub: '1' })).toEqual({ identifier: 'https://x#1', providerName: 'okta' });
  });

  it('GitHub: only a verified primary email is verifiedEmail', () => {
    const user = { id: 42, login: 'octo', name: 'Octo Cat', avatar_url: 'https://a/o.png', html_url: 'https://github.com/octo' };
    const verified = fromGithub('github', 'https://github.com', user, [{ email: 'other@x.y', primary: false, verified: true }, { email: 'octo@x.y', primary: true, verified: true }]);
    expect(verified).toMatchObject({ identifier: 'https://github.com#42', email: 'octo@x.y', verifiedEmail: 'octo@x.y', preferredUsername: 'octo', displayName: 'Octo Cat' });
    const unverified = fromGithub('github', 'https://github.com', user, [{ email: 'octo@x.y', primary: true, verified: false }]);
    expect(unverified.email).toBe('octo@x.y');
    expect(unverified.verifiedEmail).toBeUndefined();
    expect(fromGithub('github', 'https://github.com', { ...user, email: 'public@x.y' }, 'not a list').verifiedEmail).toBeUndefined();
  });

  it('a profile from an external application needs identifier and providerName', () => {
    expect(parseProfile({ identifier: 'https://idp#1', providerName: 'idp', email: 'a@b.c', extra: 'dropped' })).toEqual({ identifier: 'https://idp#1', providerName: 'idp', email: 'a@b.c' });
    expect(parseProfile({ providerName: 'idp' })).toBeUndefined();
    expect(parseProfile('nope')).toBeUndefined();
  });
});
