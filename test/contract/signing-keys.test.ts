import { SecretBox } from '../../src/domain/secrets';
import { firstSigningKeys, newSigningKey, privateJwkOf } from '../../src/domain/signing-keys';
import { forEveryEngine } from '../helpers/contract';

// The signing keys' store (SigningKeyStore): one key per slot, so that of pods making the first
// keys at once, or rotating at once (on any node), one wins and the others write nothing; retired
// keys published for their time, then swept. Run on every engine.

const box = new SecretBox(Buffer.alloc(32, 7));

forEveryEngine('signing keys store', (storage) => {
  const RACE = 10;
  const long = new Date(0);

  it('the first keys once, of racing writers; each private key sealed and opened only for its key', async () => {
    const { db, appId, on } = storage();
    const now = new Date('2026-11-26T00:00:00.000Z');
    const added = await Promise.allSettled(Array.from({ length: RACE }, (_, i) => on(i).transaction((tx) => on(i).signingKeys.add(firstSigningKeys(box, appId, now), tx))));
    expect(added.filter((r) => r.status === 'fulfilled' && r.value === true)).toHaveLength(1);
    const keys = await db.signingKeys.published(appId, long);
    expect(keys.map((k) => k.slot).sort()).toEqual(['current:ES256', 'current:RS256', 'next:ES256', 'next:RS256']);
    for (const k of keys) {
      expect(k.publicJwk).toMatchObject({ kid: k.kid, alg: k.alg, use: 'sig' });
      expect(JSON.stringify(k.publicJwk)).not.toMatch(/"d"|"p"|"q"/);
      expect(k.privateSealed).not.toContain(String((privateJwkOf(box, k) as { d: string }).d));
      expect(privateJwkOf(box, k)).toMatchObject({ kid: k.kid, d: expect.any(String) });
      expect(() => privateJwkOf(box, { ...k, kid: keys.find((o) => o.kid !== k.kid)!.kid })).toThrow();
    }
  });

  it(`a rotation moves next to current and retires current; of ${RACE} racing rotations one does; retired keys are published for their time`, async () => {
    const { db, appId, on } = storage();
    const before = await db.signingKeys.published(appId, long);
    const next = before.find((k) => k.slot === 'next:ES256')!;
    const current = before.find((k) => k.slot === 'current:ES256')!;
    const at = new Date('2026-11-26T01:00:00.000Z');
    const rotated = await Promise.allSettled(Array.from({ length: RACE }, (_, i) => on(i).transaction((tx) =>
      on(i).signingKeys.rotate(appId, 'ES256', next.kid, newSigningKey(box, appId, 'ES256', 'next:ES256', at), at, tx))));
    expect(rotated.filter((r) => r.status === 'fulfilled' && r.value === true)).toHaveLength(1);
    const after = await db.signingKeys.published(appId, long);
    expect(after.find((k) => k.slot === 'current:ES256')!.kid).toBe(next.kid);
    const retired = after.find((k) => k.kid === current.kid)!;
    expect(retired).toMatchObject({ slot: null });
    expect(retired.retiredAt!.toISOString()).toBe(at.toISOString());
    expect(after.filter((k) => k.slot === 'next:ES256')).toHaveLength(1);
    // the RS256 keys did not move
    expect(after.find((k) => k.slot === 'current:RS256')!.kid).toBe(before.find((k) => k.slot === 'current:RS256')!.kid);
    // published while retired recently; gone from the list once retired before the bound, then swept
    expect((await db.signingKeys.published(appId, new Date(at.getTime() + 1))).map((k) => k.kid)).not.toContain(current.kid);
    expect(await db.signingKeys.sweepAlone(new Date(at.getTime() + 1))).toBeGreaterThanOrEqual(1);
    expect((await db.signingKeys.published(appId, long)).map((k) => k.kid)).not.toContain(current.kid);
  });
});
