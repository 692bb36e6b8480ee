import type { Tx } from '../../src/domain/storage';
import { forEveryEngine, newAccount } from '../helpers/contract';

// The second factors' store (FactorStore): an enrollment replaced until it is confirmed, one
// confirmation, a time step taken once and never an older one — by one of 20 racing callers, on
// any node — and the authenticator gone with its record. Run on every engine.

forEveryEngine('factors store', (storage) => {
  const RACE = 20;
  const newUser = () => newAccount(storage());
  const write = <T>(work: (tx: Tx) => Promise<T>) => storage().db.transaction(work);

  it('an enrollment is replaced until confirmed; confirmed once; then kept until removed', async () => {
    const { db, appId } = storage();
    const user = await newUser();
    expect(await db.factors.totp(appId, user.id)).toBeUndefined();
    expect(await db.factors.summary(appId, user.id)).toEqual({ totp: false, passkeys: false });
    expect(await write((tx) => db.factors.startTotp(appId, user.id, 'sealed-1', new Date(), tx))).toBe(true);
    expect(await write((tx) => db.factors.startTotp(appId, user.id, 'sealed-2', new Date(), tx))).toBe(true);
    expect(await db.factors.totp(appId, user.id)).toMatchObject({ secretSealed: 'sealed-2', confirmedAt: null, lastStep: null });
    // a step is never taken before confirmation
    expect(await write((tx) => db.factors.takeTotpStep(appId, user.id, 100, tx))).toBe(false);
    // the secret a code was checked against, replaced meanwhile, is not turned on
    expect(await write((tx) => db.factors.confirmTotp(appId, user.id, 'sealed-1', 100, new Date(), tx))).toBe(false);
    expect(await write((tx) => db.factors.confirmTotp(appId, user.id, 'sealed-2', 100, new Date('2026-11-25T10:00:00.123Z'), tx))).toBe(true);
    expect(await write((tx) => db.factors.confirmTotp(appId, user.id, 'sealed-2', 101, new Date(), tx))).toBe(false);
    const confirmed = await db.factors.totp(appId, user.id);
    expect(confirmed).toMatchObject({ secretSealed: 'sealed-2', lastStep: 100 });
    expect(confirmed!.confirmedAt!.toISOString()).toBe('2026-11-25T10:00:00.123Z');
    // only a confirmed authenticator counts in the summary a sign-in reads
    expect(await db.factors.summary(appId, user.id)).toEqual({ totp: true, passkeys: false });
    // a confirmed authenticator is not replaced by a new enrollment
    expect(await write((tx) => db.factors.startTotp(appId, user.id, 'sealed-3', new Date(), tx))).toBe(false);
    expect((await db.factors.totp(appId, user.id))!.secretSealed).toBe('sealed-2');
    expect(await write((tx) => db.factors.removeTotp(appId, user.id, tx))).toBe(true);
    expect(await write((tx) => db.factors.removeTotp(appId, user.id, tx))).toBe(false);
    expect(await db.factors.totp(appId, user.id)).toBeUndefined();
    expect(await db.factors.summary(appId, user.id)).toEqual({ totp: false, passkeys: false });
  });

  it(`a step is taken once and never an older one: of ${RACE} racing for one step, on any node, one`, async () => {
    const { db, appId, on } = storage();
    const user = await newUser();
    await write((tx) => db.factors.startTotp(appId, user.id, 'sealed', new Date(), tx));
    await write((tx) => db.factors.confirmTotp(appId, user.id, 'sealed', 1000, new Date(), tx));
    expect(await write((tx) => db.factors.takeTotpStep(appId, user.id, 1000, tx))).toBe(false);
    expect(await write((tx) => db.factors.takeTotpStep(appId, user.id, 999, tx))).toBe(false);
    const taken = await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).transaction((tx) => on(i).factors.takeTotpStep(appId, user.id, 1001, tx))));
    expect(taken.filter(Boolean)).toHaveLength(1);
    expect(await write((tx) => db.factors.takeTotpStep(appId, user.id, 1001, tx))).toBe(false);
    expect(await write((tx) => db.factors.takeTotpStep(appId, user.id, 1003, tx))).toBe(true);
    expect(await write((tx) => db.factors.takeTotpStep(appId, user.id, 1002, tx))).toBe(false);
  });

  it('goes with its record, and is never another application\'s', async () => {
    const { db, appId } = storage();
    const user = await newUser();
    await write((tx) => db.factors.startTotp(appId, user.id, 'sealed', new Date(), tx));
    const other = (await write((tx) => db.applications.create(`other${Date.now()}`, new Date(), tx))).id;
    expect(await db.factors.totp(other, user.id)).toBeUndefined();
    expect(await write((tx) => db.factors.removeTotp(other, user.id, tx))).toBe(false);
    expect(await write((tx) => db.records.remove(user, tx))).toBe(true);
    expect(await db.factors.totp(appId, user.id)).toBeUndefined();
  });
});
