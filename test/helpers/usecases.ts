import { isPaused, type FlowRequest, type LoginCall, type Paused } from '../../src/usecases/login/call';
import type { Acting } from '../../src/domain/events';
import type { Services } from '../../src/usecases/services';
import { createWork } from '../../src/usecases/unit-of-work';
import { startTestApp, type TestApp } from './backend';
import type { Application } from '../../src/domain/storage/applications';

/** A login use case's call on the test app's "local" application through its login client, as the API's adapter makes it. */
export async function loginCall(t: TestApp, over: Partial<FlowRequest> = {}): Promise<LoginCall> {
  const { services, db } = t.runtime;
  const app = (await db.applications.findByName('local'))!;
  const client = (await services.clients.find(app.id, t.local.clients.login.client_id))!;
  const flow = await services.flows.resolve(app, 'standard', '1', 'en-US');
  return {
    origin: { requestId: 'use-case-test', address: '203.0.113.9' }, app, clientAddress: '203.0.113.9', services,
    request: { client, flow, responseType: 'token', ...over },
  };
}

/** The owner client of "local" acting, as the admin API's adapter says it. */
export const asOwner = (t: TestApp): Acting => ({ actor: { kind: 'client', clientId: t.local.clients.owner.client_id }, origin: { requestId: 'use-case-test' } });

/** The test app's services with a unit of work whose `breaks` step throws once the change's own writes are done. */
export function failingWork(t: TestApp, breaks: 'outbox' | 'events'): Services {
  const { services, db } = t.runtime;
  const injected = async () => {
    throw new Error(`injected: the ${breaks} write failed`);
  };
  const work = createWork({
    storage: {
      transaction: db.transaction, outbox: breaks === 'outbox' ? { ...db.outbox, insert: injected } : db.outbox,
      events: breaks === 'events' ? { ...db.events, append: injected } : db.events,
    },
    subscribers: [], dispatch: async () => undefined, now: () => services.clock.now(),
  });
  return { ...services, work };
}

/** The outcome of a sign-in, a registration or a code exchange that a test expects not to pause for a second factor. */
export function notPaused<T extends object>(outcome: T | Paused): T {
  if (isPaused(outcome)) throw new Error(`the sign-in paused (${outcome.pause.kind}) where the test expects none`);
  return outcome;
}

/** A test app and its "local" application, started before the file's tests and closed after them. */
export function localApp(): { readonly t: TestApp; readonly app: Application } {
  const held = {} as { t: TestApp; app: Application };
  beforeAll(async () => {
    held.t = await startTestApp();
    held.app = (await held.t.runtime.db.applications.findByName('local'))!;
  });
  afterAll(() => held.t?.close());
  return held;
}
