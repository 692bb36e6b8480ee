import { sha256Hex } from '../../src/domain/secrets';
import type { Tx } from '../../src/domain/storage';
import { forEveryEngine, newAccount } from '../helpers/contract';

// The OpenID provider's other objects (OidcStateStore): saved whole and replaced, found by the hash
// of the id or of the uid, consumed once by one of 20 racing callers on any node, and gone with
// their grant, their record or their time. Run on every engine.

forEveryEngine('OpenID state store', (storage) => {
  const RACE = 20;
  const write = <T>(work: (tx: Tx) => Promise<T>) => storage().db.transaction(work);
  const later = (seconds: number) => new Date(Date.now() + seconds * 1000);
  const object = (id: string, extra: Partial<Parameters<ReturnType<typeof storage>['db']['oidcState']['save']>[1]> = {}) => ({
    model: 'Session', idHash: sha256Hex(id), uidHash: sha256Hex(`uid-${id}`), grantId: null, entityId: null, payload: { id, n: 1 }, expiresAt: later(600), ...extra,
  });

  it('saves an object whole, replaces it, finds it by id or uid, and destroys it', async () => {
    const { db, appId } = storage();
    await db.oidcState.saveAlone(appId, object('s1'));
    await write((tx) => db.oidcState.save(appId, object('s1', { payload: { id: 's1', n: 2 } }), tx));
    expect(await db.oidcState.find(appId, 'Session', sha256Hex('s1'))).toMatchObject({ model: 'Session', payload: { id: 's1', n: 2 }, consumedAt: null });
    expect(await db.oidcState.findByUid(appId, 'Session', sha256Hex('uid-s1'))).toMatchObject({ payload: { n: 2 } });
    // another model, another application: not found
    expect(await db.oidcState.find(appId, 'Interaction', sha256Hex('s1'))).toBeUndefined();
    expect(await db.oidcState.find(appId + 1000, 'Session', sha256Hex('s1'))).toBeUndefined();
    await write((tx) => db.oidcState.destroy(appId, 'Session', sha256Hex('s1'), tx));
    expect(await db.oidcState.find(appId, 'Session', sha256Hex('s1'))).toBeUndefined();
  });

  it(`consumed once: of ${RACE} racing on any node, one`, async () => {
    const { db, appId, on } = storage();
    await db.oidcState.saveAlone(appId, object('i1', { model: 'Interaction' }));
    const now = new Date();
    const won = await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).oidcState.consumeAlone(appId, 'Interaction', sha256Hex('i1'), now)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect((await db.oidcState.find(appId, 'Interaction', sha256Hex('i1')))!.consumedAt).not.toBeNull();
  });

  it(`a new object saved once: of ${RACE} saving one id on any node, one; the others find it there`, async () => {
    const { db, appId, on } = storage();
    const saved = await Promise.all(Array.from({ length: RACE }, (_, i) =>
      on(i).oidcState.saveNewAlone(appId, object('r1', { model: 'ReplayDetection', uidHash: null, payload: { n: i } }))));
    expect(saved.filter(Boolean)).toHaveLength(1);
    expect((await db.oidcState.find(appId, 'ReplayDetection', sha256Hex('r1')))!.payload).toEqual({ n: saved.indexOf(true) });
    // the same id of another model is another object
    expect(await db.oidcState.saveNewAlone(appId, object('r1', { model: 'Session' }))).toBe(true);
  });

  it('ends with its grant, its record, or its time', async () => {
    const { db, appId } = storage();
    const user = await newAccount(storage());
    await db.oidcState.saveAlone(appId, object('g1', { model: 'Grant', grantId: 'grant-1', entityId: user.id }));
    await db.oidcState.saveAlone(appId, object('s2', { entityId: user.id }));
    await db.oidcState.saveAlone(appId, object('old', { expiresAt: new Date(Date.now() - 1000) }));
    expect(await db.oidcState.destroyGrantAlone(appId, 'grant-1')).toBe(1);
    expect(await write((tx) => db.oidcState.destroyGrant(appId, 'grant-1', tx))).toBe(0);
    expect(await db.oidcState.find(appId, 'Grant', sha256Hex('g1'))).toBeUndefined();
    expect(await write((tx) => db.oidcState.destroyOfRecord(appId, user.id, tx))).toBe(1);
    expect(await db.oidcState.sweepAlone(new Date(), 100)).toBeGreaterThanOrEqual(1);
    expect(await db.oidcState.find(appId, 'Session', sha256Hex('old'))).toBeUndefined();
  });
});
