import { createChallenge, randomInt, verifySolution, type Challenge, type Solution } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import type { Client } from '../../domain/clients';
import {
  BUSY_WINDOW_SECONDS, CHALLENGE_ALGORITHM, CHALLENGE_COST, CHALLENGE_SECONDS, busyKeys, busyThresholds, challengeDifficulty, challengeMode, challengeSecrets,
} from '../../domain/proof-of-work';
import { Refusal, invalidField } from '../../domain/refusal';
import { sha256Hex } from '../../domain/secrets';
import { textsOf } from '../../texts';
import type { CallContext } from '../services';

/** A login call as this module reads it: the client, and the language of its messages. */
type LoginCall<K extends 'box' | 'clock' | 'db' | 'rateLimiter'> = CallContext<K> & { request: { client: Client; flow: { locale: string } } };

/** A challenge as the widget and the API take it (ALTCHA v2: `parameters` and their `signature`). */
export type IssuedChallenge = Challenge;

/**
 * A new challenge for this client (docs/proof-of-work.md): PBKDF2-SHA-256 of CHALLENGE_COST
 * iterations per attempt, `challenge_difficulty` attempts on average, signed with
 * the application's secret (another application's never verifies), naming the client, expiring in
 * 10 minutes. Nothing is stored until it is used.
 */
export async function issueChallenge(ctx: CallContext<'box' | 'clock'> & { client: Client }): Promise<IssuedChallenge> {
  const difficulty = challengeDifficulty(ctx.app, ctx.client);
  const secrets = challengeSecrets(ctx.services.box, ctx.app.id);
  return createChallenge({
    algorithm: CHALLENGE_ALGORITHM, cost: CHALLENGE_COST, deriveKey,
    // the answer uniform over [0, 2 × difficulty): difficulty attempts on average, wherever a solver starts
    counter: randomInt(2 * difficulty),
    hmacSignatureSecret: secrets.signature, hmacKeySignatureSecret: secrets.key,
    expiresAt: new Date(ctx.services.clock.now().getTime() + CHALLENGE_SECONDS * 1000),
    data: { client: ctx.client.clientId },
  });
}

/** Whether this client's requests must carry a solved challenge now: `on`, or `when_busy` past a threshold. */
export async function challengeRequired(ctx: CallContext<'rateLimiter'> & { client: Client }): Promise<boolean> {
  const mode = challengeMode(ctx.app, ctx.client);
  if (mode !== 'when_busy') return mode === 'on';
  const keys = busyKeys(ctx.app.id, ctx.clientAddress);
  const [address, application] = await ctx.services.rateLimiter.count([keys.address, keys.application]);
  const limits = busyThresholds(ctx.app, ctx.client);
  return address >= limits.address || application >= limits.application;
}

/**
 * Counts a failed sign-in or a registration toward `when_busy` (from this address, and in the
 * application), whatever the mode: switching to `when_busy` then acts on what is happening already.
 */
export async function countTowardBusy(ctx: CallContext<'rateLimiter'>): Promise<void> {
  const keys = busyKeys(ctx.app.id, ctx.clientAddress);
  const window = { max: Number.MAX_SAFE_INTEGER, windowSeconds: BUSY_WINDOW_SECONDS };
  // a count that cannot be taken (the limits' store answering an error) never changes the answer it counts
  await ctx.services.rateLimiter.take([[keys.address, window], [keys.application, window]]).catch(() => undefined);
}

const refused = (locale: string, why: string) => invalidField('altcha', why, { message: textsOf('api', locale).challengeFailed });

/** The payload as the widget sends it (base64 of its JSON), or undefined. */
function payloadOf(raw: string): { challenge: Challenge; solution: Solution } | undefined {
  if (raw.length > 4096) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as { challenge?: Challenge; solution?: Solution };
    const ok = parsed && typeof parsed === 'object' && typeof parsed.challenge?.parameters === 'object' && typeof parsed.challenge.signature === 'string'
      && typeof parsed.solution === 'object' && parsed.solution !== null;
    return ok ? { challenge: parsed.challenge!, solution: parsed.solution! } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Refuses a request that owes a solved challenge and does not carry one (100 naming `altcha`), or
 * carries one that is malformed, another application's or client's, expired, wrong, or used
 * already (200 naming `altcha`). A solution is spent as it is accepted: its nonce is stored spent
 * by one statement that a second use of it cannot repeat, on one server or many.
 */
export async function proveWork(ctx: LoginCall<'box' | 'clock' | 'db' | 'rateLimiter'>, altcha: string | undefined): Promise<void> {
  const { client, flow: { locale } } = ctx.request;
  if (!(await challengeRequired({ ...ctx, client }))) return;
  if (altcha === undefined || altcha === '') {
    throw new Refusal('missing', 'altcha is required: this client asks for a solved proof-of-work challenge (get one from /oauth/challenge, solve it, send the payload)', {
      field: 'altcha', message: textsOf('api', locale).challengeMissing,
    });
  }
  const payload = payloadOf(altcha);
  if (!payload) throw refused(locale, 'is not an ALTCHA payload: base64 of {"challenge":…,"solution":…} as the widget makes it');
  const { challenge, solution } = payload;
  if (challenge.parameters.data?.client !== client.clientId) throw refused(locale, 'is a challenge of another client; get one from /oauth/challenge with this client_id');
  const secrets = challengeSecrets(ctx.services.box, ctx.app.id);
  let result: Awaited<ReturnType<typeof verifySolution>>;
  try {
    result = await verifySolution({ challenge, solution, deriveKey, hmacSignatureSecret: secrets.signature, hmacKeySignatureSecret: secrets.key });
  } catch {
    throw refused(locale, 'is not an ALTCHA payload this service can check');
  }
  if (result.invalidSignature) throw refused(locale, 'is a challenge this application did not make');
  if (result.expired) throw refused(locale, `is a challenge that expired (they live ${CHALLENGE_SECONDS / 60} minutes); get a new one`);
  if (!result.verified) throw refused(locale, 'is not a solution of its challenge');
  const now = ctx.services.clock.now();
  const spent = await ctx.services.db.credentials.insertSpentAlone({
    applicationId: ctx.app.id, kind: 'pow_challenge', valueHash: sha256Hex(`pow:${challenge.signature}`), entityId: null, clientId: client.id,
    forClientId: null, redirectUri: null, extra: null, family: null, expiresAt: new Date(now.getTime() + CHALLENGE_SECONDS * 1000),
  }, now);
  if (!spent) throw refused(locale, 'was used already: each solved challenge is good for one request; solve a new one');
}
