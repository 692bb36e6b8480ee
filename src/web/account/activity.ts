import type { ActivityView } from '../../usecases/account/overview';
import type { SessionView } from '../../usecases/account/browser-sessions';
import { disownActivity } from '../../usecases/activity/disown-activity';
import { escape, providerLabel, type PageLocale } from '../pages';
import { act, actionForm, dateOf, deviceOf, factorsOf, type Page, say, sayHtml, type Section } from './parts';

/** The page's text of an activity type (`account.passkey_added`: act_passkey_added; `token.reuse_detected`: act_reuse_detected). */
export const activityTextKey = (type: string) => `act_${type.slice(type.indexOf('.') + 1)}`;

/** What one entry of the activity says happened, in the page's words. */
function activityWhat(locale: PageLocale, e: ActivityView): string {
  if (e.kind === 'failures') return say(locale, activityTextKey(e.type), { count: String(e.count), reason: say(locale, `reason_${e.reason}`) });
  const d = e.data;
  switch (e.type) {
    case 'account.signed_in': {
      const factors = [String(d.method ?? 'unknown'), ...(typeof d.factor === 'string' ? [d.factor] : [])];
      return say(locale, activityTextKey(e.type), { factors: factorsOf(locale, { factors: factors as SessionView['factors'] }) });
    }
    case 'account.identity_linked':
    case 'account.identity_unlinked':
      return say(locale, activityTextKey(e.type), { provider: providerLabel(String(d.provider ?? '')) });
    default:
      return say(locale, activityTextKey(e.type));
  }
}

/**
 * The account's recent activity, newest first: what, when (in the viewer's time zone), through
 * which app, from which device and address; and "this wasn't me". The user agent is shown as the
 * device it names, and whole (escaped) on hover.
 */
export const activitySection: Section = {
  id: 'h-activity',
  title: 'activity',
  draw: ({ s: { locale }, o: { activity }, token }) => {
    const t = sayHtml(locale);
    const items = activity.map((e) => {
      const device = e.userAgent === undefined ? '' : deviceOf(e.userAgent) || say(locale, 'unknownDevice');
      const where = [e.clientName ?? (e.clientId === undefined ? '' : e.clientId), device, e.address ?? ''].filter((w) => w !== '');
      const title = e.userAgent === undefined ? '' : ` title="${escape(e.userAgent)}"`;
      return `<li><p><strong>${escape(activityWhat(locale, e))}</strong><br>${escape(dateOf(locale, e.at))}`
        + (where.length > 0 ? ` <span${title}>${escape(where.join(' · '))}</span>` : '') + '</p></li>';
    });
    return (items.length === 0 ? `<p>${t('activityNone')}</p>` : `<ul class="items">${items.join('')}</ul>`)
      + `<p class="tip">${t('notMeHelp')}</p>` + actionForm('/account/activity/disown', token, say(locale, 'notMe'), {}, '', true);
  },
};

/** "This wasn't me": every other session ends, and the page asks for a new password. */
export const activityDisown = (p: Page) => act(p, disownActivity, (s) => ({ token: s.session }), 'disowned');
