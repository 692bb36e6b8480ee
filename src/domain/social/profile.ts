/**
 * A social identity as the original social login product's `auth_info` call answered it: what
 * every provider's data is normalized to, and what `capture_user.profiles` shows.
 */
export interface SocialProfile {
  /** Stable and unique: the provider's issuer and the subject it names the person by. */
  identifier: string;
  providerName: string;
  email?: string;
  /** The email, only when the provider says it verified it. */
  verifiedEmail?: string;
  displayName?: string;
  preferredUsername?: string;
  name?: { givenName?: string; familyName?: string; formatted?: string };
  photo?: string;
  url?: string;
  /** `YYYY-MM-DD` (OpenID Connect `birthdate`). */
  birthday?: string;
  /** E.164, such as +15551234567 (OpenID Connect `phone_number`). */
  phoneNumber?: string;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 1024) : undefined);

/** `https://issuer.example#subject`: the issuer without trailing slashes, then the subject. */
export const identifierOf = (issuer: string, subject: string) => `${issuer.replace(/\/+$/, '')}#${encodeURIComponent(subject)}`;

/** An OpenID Connect provider's validated ID token claims and userinfo → the profile. */
export function fromOidcClaims(providerName: string, issuer: string, claims: Record<string, unknown>): SocialProfile {
  const email = text(claims.email)?.normalize('NFC');
  const givenName = text(claims.given_name);
  const familyName = text(claims.family_name);
  const formatted = text(claims.name) ?? ([givenName, familyName].filter(Boolean).join(' ') || undefined);
  return prune({
    identifier: identifierOf(issuer, String(claims.sub)),
    providerName,
    email,
    verifiedEmail: email && claims.email_verified === true ? email : undefined,
    displayName: formatted ?? text(claims.preferred_username) ?? text(claims.nickname),
    preferredUsername: text(claims.preferred_username) ?? text(claims.nickname),
    name: givenName || familyName || formatted ? prune({ givenName, familyName, formatted }) : undefined,
    photo: text(claims.picture),
    url: text(claims.profile) ?? text(claims.website),
    birthday: /^\d{4}-\d{2}-\d{2}$/.test(String(claims.birthdate)) ? String(claims.birthdate) : undefined,
    phoneNumber: /^\+[1-9]\d{6,14}$/.test(String(claims.phone_number)) ? String(claims.phone_number) : undefined,
  });
}

/** GitHub's `/user` and `/user/emails`: only a verified primary email counts as verifiedEmail. */
export function fromGithub(providerName: string, base: string, user: Record<string, unknown>, emails: unknown): SocialProfile {
  const list = Array.isArray(emails) ? emails as { email?: unknown; primary?: unknown; verified?: unknown }[] : [];
  const primary = list.find((e) => e.primary === true);
  const email = text(primary?.email)?.normalize('NFC') ?? text(user.email)?.normalize('NFC');
  const name = text(user.name);
  return prune({
    identifier: identifierOf(base, String(user.id)),
    providerName,
    email,
    verifiedEmail: primary && primary.verified === true && email === text(primary.email)?.normalize('NFC') ? email : undefined,
    displayName: name ?? text(user.login),
    preferredUsername: text(user.login),
    name: name ? { formatted: name } : undefined,
    photo: text(user.avatar_url),
    url: text(user.html_url),
  });
}

/** Checks a profile that came from elsewhere (an external social login application). */
export function parseProfile(raw: unknown): SocialProfile | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const p = raw as Record<string, unknown>;
  const identifier = text(p.identifier);
  const providerName = text(p.providerName);
  if (!identifier || !providerName) return undefined;
  const name = typeof p.name === 'object' && p.name !== null ? p.name as Record<string, unknown> : undefined;
  return prune({
    identifier, providerName, email: text(p.email)?.normalize('NFC'), verifiedEmail: text(p.verifiedEmail)?.normalize('NFC'),
    displayName: text(p.displayName), preferredUsername: text(p.preferredUsername),
    name: name ? prune({ givenName: text(name.givenName), familyName: text(name.familyName), formatted: text(name.formatted) }) : undefined,
    photo: text(p.photo), url: text(p.url), birthday: text(p.birthday), phoneNumber: text(p.phoneNumber),
  });
}

function prune<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
