import { endSessions } from '../../usecases/account/browser-sessions';
import { escape } from '../pages';
import { act, actionForm, dateOf, factorsOf, type Page, say, type Section, type SignedWork } from './parts';

/** The account's sessions (browsers and apps): how and when each signed in, each to end, or every other one. */
export const sessionsSection: Section = {
  id: 'h-sessions',
  title: 'sessions',
  draw: ({ s: { locale }, o, token }) => '<ul class="items">' + o.sessions.map((v) => {
    const where = v.current ? say(locale, 'thisBrowser') : v.kind === 'browser' ? say(locale, 'browserSession', { device: v.device || '?' }) : say(locale, 'appSession', { client: v.client });
    const when = v.signedInAt ? say(locale, 'signedInWith', { date: dateOf(locale, v.signedInAt), factors: factorsOf(locale, v) }) : '';
    const last = v.lastUsedAt ? say(locale, 'lastUsed', { date: dateOf(locale, v.lastUsedAt) }) : '';
    return `<li><p><strong>${escape(where)}</strong><br>${escape(when)} ${escape(last)}</p>`
      + (v.current ? '' : actionForm('/account/sessions/end', token, say(locale, 'endSession'), { session: v.id }, '', true)) + '</li>';
  }).join('') + '</ul>'
    + (o.sessions.some((v) => !v.current) ? actionForm('/account/sessions/end', token, say(locale, 'endOthers'), { others: '1' }, '', true) : ''),
};

/** Ends one session, or every other one (`others`). */
export const sessionsEnd = (p: Page): SignedWork => async (req, res, s, body) => {
  const others = body.others === '1';
  await act(p, endSessions, () => ({ token: s.session, ...(others ? { others } : { session: body.session ?? '' }) }), others ? 'othersEnded' : 'sessionEnded')(req, res, s, body);
};
