import { BUDGET_KEYS } from './budget-keys';
import type { Application } from './storage/applications';
import type { Client } from './clients';
import type { SecretBox } from './secrets';

/**
 * A proof-of-work challenge before sign-in, registration, a password reset or a mailed code
 * (docs/proof-of-work.md): ALTCHA's open protocol (version 2), made and checked by `altcha-lib`,
 * solved in the browser by the `altcha` widget Gatehouse serves itself. No third party sees the
 * visitor, and no cookie is needed.
 */

/** When an application asks for one (setting `challenge`): never, always, or when it is busy with failures. */
export type ChallengeMode = 'off' | 'on' | 'when_busy';

/** A setting of the login client, else of the application. */
const settingOf = (app: Application, client: Client, key: string): string | undefined => client.settings[key] ?? app.settings[key];

export const challengeMode = (app: Application, client: Client): ChallengeMode => {
  const v = settingOf(app, client, 'challenge');
  return v === 'on' || v === 'when_busy' ? v : 'off';
};

/** How long a challenge may be solved and sent. */
export const CHALLENGE_SECONDS = 600;
/** The key derivation each attempt runs: PBKDF2-SHA-256 of this many iterations (WebCrypto in the browser). */
export const CHALLENGE_ALGORITHM = 'PBKDF2/SHA-256';
export const CHALLENGE_COST = 1000;

/** The attempts a solution takes on average (setting `challenge_difficulty`); the answer is drawn uniformly below twice it. */
export const DEFAULT_DIFFICULTY = 10_000;
export const MIN_DIFFICULTY = 10;
export const MAX_DIFFICULTY = 1_000_000;
export const challengeDifficulty = (app: Application, client: Client): number => {
  const v = Number(settingOf(app, client, 'challenge_difficulty'));
  return Number.isInteger(v) && v >= MIN_DIFFICULTY && v <= MAX_DIFFICULTY ? v : DEFAULT_DIFFICULTY;
};

/**
 * `when_busy`: a challenge is asked for once the failed sign-ins and registrations counted in a
 * window of 15 minutes (from the first of them) pass a threshold, from the client's address (`challenge_busy_address`, 10) or
 * in the whole application (`challenge_busy_application`, 500).
 */
export const BUSY_WINDOW_SECONDS = 900;
export const busyThresholds = (app: Application, client: Client): { address: number; application: number } => {
  const whole = (key: string, fallback: number) => {
    const v = Number(settingOf(app, client, key));
    return Number.isInteger(v) && v >= 1 && v <= 1_000_000 ? v : fallback;
  };
  return { address: whole('challenge_busy_address', 10), application: whole('challenge_busy_application', 500) };
};

/** The counters `when_busy` reads: failures from one address, and in the whole application (rate-limit keys). */
export const busyKeys = (applicationId: number, address: string) => ({
  address: BUDGET_KEYS.busyAddress(applicationId, address),
  application: BUDGET_KEYS.busyApplication(applicationId),
});

/**
 * The HMAC secrets of an application's challenges: derived from SECRET_KEY and the application, so
 * a challenge made for one application never verifies in another.
 */
export const challengeSecrets = (box: SecretBox, applicationId: number) => ({
  signature: box.tag(String(applicationId), 'altcha challenge signature'),
  key: box.tag(String(applicationId), 'altcha derived key signature'),
});

/** The paths the widget is served at (from the `altcha` package, no third party): its module, its style, its worker, its languages. */
export const WIDGET_PATH = '/assets/altcha';
