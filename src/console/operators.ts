import { OPERATOR_ROLES, type OperatorRole } from '../domain/operators';
import { invalidField, Refusal } from '../domain/refusal';
import { changeOperatorRole, listOperators } from '../usecases/operators/console-operators';
import { escape } from '../web/pages';
import { q, say, time, type PageHandler } from './parts';

/**
 * The console's operators (docs/console.md#operators), for admins: each operator's role, last
 * sign-in and second factors; a role changed, or taken away (its console sessions stop at once);
 * never the last admin's. New operators come from `gatehouse operators:add`.
 */
const DONE = ['roleChanged', 'roleRemoved'] as const;

/** Every operator: role, last sign-in, second factors, state; each role's form. */
export const operatorsPage: PageHandler = async ({ req, res, s, p }) => {
  const { locale } = s;
  const t = (k: string, v?: Record<string, string>) => escape(say(locale, k, v));
  const operators = await listOperators(p.services, { app: s.operatorsApp });
  const done = DONE.find((d) => d === req.query.done);
  // (the form named for whom it is; its button short, in a narrow cell)
  const roleForm = (id: number, role: OperatorRole, email: string) => `<form method="post" action="${escape(`/operators/${id}/role${q({ locale })}`)}" aria-label="${escape(say(locale, 'changeRole', { name: email }))}">`
    + `<input type="hidden" name="csrf" value="${escape(s.token)}"><label for="role-${id}" class="visually-hidden">${t('role')}</label><select id="role-${id}" name="role">`
    + [...OPERATOR_ROLES, 'none'].map((r) => `<option value="${r}"${r === role ? ' selected' : ''}>${t(r === 'none' ? 'roleNone' : `role_${r}`)}</option>`).join('') + '</select>'
    + `<label class="choice"><input type="checkbox" name="confirm" value="yes" required> ${t('confirm')}</label><button type="submit" class="secondary">${t('changeRoleShort')}</button></form>`;
  p.page(res, 200, locale, say(locale, 'operators'),
    (done ? `<p class="notice done" role="status">${t(`done_${done}`)}</p>` : '')
    + `<p class="tip">${t('operatorsTip')}</p><div class="scroll"><table><thead><tr>`
    + ['email', 'role', 'lastSignIn', 'secondFactors', 'state', ''].map((k) => `<th scope="col">${k ? t(k) : ''}</th>`).join('') + '</tr></thead><tbody>'
    + operators.map((o) => `<tr><td><a href="${escape(`/apps/${encodeURIComponent(s.operatorsApp.name)}/accounts/${o.entityId}${q({ locale })}`)}">${escape(o.email ?? String(o.entityId))}</a>`
      + `${o.entityId === s.operator.record.id ? ` <span class="badge">${t('you')}</span>` : ''}</td><td>${t(`role_${o.role}`)}</td>`
      + `<td>${escape(o.lastSignIn ? time(o.lastSignIn) : say(locale, 'never'))}</td>`
      + `<td>${escape([o.totp ? say(locale, 'with_totp') : '', o.passkeys ? say(locale, 'passkeysCount', { count: String(o.passkeys) }) : ''].filter(Boolean).join(', ') || say(locale, 'none'))}</td>`
      + `<td>${o.disabled ? `<span class="badge off">${t('disabled')}</span>` : `<span class="badge">${t('active')}</span>`}</td>`
      + `<td>${roleForm(o.entityId, o.role, o.email ?? String(o.entityId))}</td></tr>`).join('')
    + '</tbody></table></div>', s);
};

/** An operator's role changed, or taken away, confirmed. */
export const changeRole: PageHandler = async ({ req, res, s, p, body }) => {
  if (body.confirm !== 'yes') return p.problem(res, 400, s.locale, say(s.locale, 'notConfirmed'), s);
  const id = /^\d{1,15}$/.test(String(req.params.id)) ? Number(req.params.id) : undefined;
  const role = body.role === 'none' ? null : OPERATOR_ROLES.find((r) => r === body.role);
  try {
    if (id === undefined) throw invalidField('id', say(s.locale, 'noSuchAccount'));
    if (role === undefined) throw invalidField('role', `must be one of ${OPERATOR_ROLES.join(', ')}, or none`);
    await changeOperatorRole(p.services, { app: s.operatorsApp, entityId: id, role, acting: s.operator.acting });
  } catch (e) {
    if (e instanceof Refusal) return p.problem(res, e.reason === 'gone' ? 404 : 400, s.locale, e.message, s);
    throw e;
  }
  res.redirect(303, `/operators${q({ locale: s.locale, done: role === null ? 'roleRemoved' : 'roleChanged' })}`);
};
