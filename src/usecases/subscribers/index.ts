import type { SecretBox } from '../../domain/secrets';
import type { AuditStore } from '../../domain/storage/audit';
import { audit } from './audit';
import { backchannelLogout } from './backchannel-logout';
import type { LogoutStore } from '../../domain/storage/logouts';
import { clientCache } from './client-cache';
import { erasure } from './erasure';
import { history } from './history';
import { mail } from './mail';
import type { Subscriber } from './subscriber';
import { webhooks, type WebhookSubscriptions } from './webhooks';

export type { Subscriber } from './subscriber';

/** Every subscriber of the events, in the order they run: adding one is a new file and a line here. */
export const subscribers = (deps: {
  box: SecretBox;
  audit: Pick<AuditStore, 'append'>;
  clients: { changed(applicationId: number, clientId: string): Promise<void> };
  webhooks: Pick<WebhookSubscriptions, 'wants' | 'refresh'>;
  logouts: Pick<LogoutStore, 'insert'>;
}): readonly Subscriber[] => [
  history,
  mail(deps.box),
  erasure(deps.box),
  audit(deps.audit),
  clientCache(deps.clients),
  webhooks(deps.webhooks),
  backchannelLogout(deps.logouts),
];
