import { chosenFlow } from '../../domain/flows';
import { OPERATOR_ROLE_ATTRIBUTE } from '../../domain/operators';
import { invalidField, Refusal } from '../../domain/refusal';
import type { Acting } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import type { UserRecord } from '../../domain/storage/records';
import { parseNewUser } from '../../domain/users';
import { accountClient } from '../account/account-client';
import { changeRecord } from '../records/change-record';
import { createRecord } from '../records/create-records';
import type { Services } from '../services';
import { sendPasswordReset } from './send-password-reset';

/**
 * An operator makes and edits accounts (docs/console.md#accounts): an address, names and a
 * password or a mailed link to set one; then the address, the names and every attribute the
 * application's flow writes, each change through the one record writer (the policy and snapshot of
 * every write, the old address told of a new one and the new one unverified until proven), with the
 * operator as the actor.
 */

/** An attribute an operator may set: its name, its label in the flow (else its name), and whether it is a date. */
export interface EditableAttribute { attribute: string; label: string; type: 'text' | 'email' | 'date' | 'select'; options?: { value: string; label: string }[] }

/** What no form of the console writes: how the account signs in, its verified mark, its ids, an operator's role, what Gatehouse keeps. */
const NEVER = new Set(['password', 'emailVerified', 'id', 'uuid', 'created', 'lastUpdated', 'lastLogin', 'profiles', OPERATOR_ROLE_ATTRIBUTE]);
const ATTRIBUTE_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** What every account has a field for, before the flow's own. */
const ALWAYS: EditableAttribute[] = [
  { attribute: 'email', label: 'email', type: 'email' },
  { attribute: 'givenName', label: 'givenName', type: 'text' },
  { attribute: 'familyName', label: 'familyName', type: 'text' },
  { attribute: 'displayName', label: 'displayName', type: 'text' },
];

/** The attributes of `app`'s accounts an operator edits: the address and names, then every other one its account client's flow writes. */
export async function editableAttributes(deps: Pick<Services, 'clients' | 'flows'>, command: { app: Application; locale: string }): Promise<EditableAttribute[]> {
  const out = new Map(ALWAYS.map((a) => [a.attribute, a]));
  const client = await accountClient(deps, command.app);
  const chosen = client ? chosenFlow(client.settings) : undefined;
  if (chosen?.name === undefined || chosen.version === undefined) return [...out.values()];
  // the flow in the operator's language, else in English; a flow that is not there (yet): the address and the names
  let flow: Awaited<ReturnType<Services['flows']['resolve']>> | undefined;
  for (const locale of [command.locale, 'en-US']) {
    flow ??= await deps.flows.resolve(command.app, chosen.name, chosen.version, locale).catch((e: unknown) => (e instanceof Refusal ? undefined : Promise.reject(e)));
  }
  if (!flow) return [...out.values()];
  for (const field of Object.values(flow.definition.fields)) {
    const attribute = field.schemaAttribute;
    // (an attribute's name as records take them: letters, digits and _, so that it is a field's name as it is)
    if (!attribute || !ATTRIBUTE_NAME.test(attribute) || NEVER.has(attribute)) continue;
    const label = field.label ? deps.flows.text(flow, field.label) : attribute;
    const type = field.type === 'email' ? 'email' : field.type === 'dateselect' ? 'date' : field.type === 'select' || field.type === 'radio' ? 'select' : 'text';
    const options = field.options?.map((o) => ({ value: o.value, label: deps.flows.text(flow, o.label) }));
    const held = out.get(attribute);
    out.set(attribute, { attribute, label: held && label === attribute ? held.label : label, type: held?.type === 'email' ? 'email' : type, ...(options && type === 'select' && { options }) });
  }
  return [...out.values()];
}


/**
 * Makes an account: its address and the attributes given (from editableAttributes), and its
 * password, or none and a mailed link to set one (`mailLink`). DuplicateAttributeError for an
 * address or username taken; a Refusal for what the rules refuse.
 */
export async function createAccount(
  deps: Pick<Services, 'baseUrls' | 'clients' | 'clock' | 'db' | 'passwords' | 'tokens' | 'versions' | 'work'>, command: { app: Application; acting: Acting; email: string; attributes: Record<string, string>; password?: string; mailLink: boolean },
): Promise<UserRecord> {
  const { app } = command;
  if (command.password === undefined && !command.mailLink) throw invalidField('password', 'give a password, or mail the person a link to set one');
  // the link's client, found before the account is made: never an account made and its link not sent
  if (command.password === undefined && !(await accountClient(deps, app))) {
    throw new Refusal('misconfigured', 'the application has no login client to send a link from (set account_client_id): set a password instead');
  }
  const attributes = Object.fromEntries(Object.entries(command.attributes).filter(([k, v]) => !NEVER.has(k) && k !== 'email' && v.trim() !== '').map(([k, v]) => [k, v.trim()]));
  const record = parseNewUser(app.id, { ...attributes, email: command.email.trim(), ...(command.password !== undefined && { password: command.password }) });
  const created = await createRecord(deps, { app, origin: command.acting.origin, operator: command.acting, record });
  if (command.password === undefined) await sendPasswordReset(deps, { app, entityId: created.id, acting: command.acting });
  return created;
}

/**
 * Changes an account's attributes: each given one (from editableAttributes) set, an empty one
 * removed; the address through the writer's rules (unverified until proven, the old one told).
 */
export async function editAccount(
  deps: Pick<Services, 'baseUrls' | 'clock' | 'db' | 'passwords' | 'versions' | 'work'>, command: { app: Application; acting: Acting; entityId: number; attributes: Record<string, string> },
): Promise<void> {
  const { app } = command;
  const record = await deps.db.records.find(app.id, { id: command.entityId });
  if (!record) throw new Refusal('gone', 'the record was deleted meanwhile');
  const given = Object.entries(command.attributes).filter(([k]) => !NEVER.has(k));
  await changeRecord(deps, {
    app, acting: command.acting, writer: { record, byUser: false, fresh: false, clientId: null }, kind: 'record.updated',
    change: (doc) => {
      const next: Record<string, unknown> = { ...doc };
      for (const [k, raw] of given) {
        const v = raw.trim();
        if (v === '') next[k] = k === 'email' || k === 'username' ? null : undefined;
        else next[k] = v;
      }
      // a new address is unverified until its person proves it
      if (typeof next.email === 'string' && next.email.toLowerCase() !== (record.email ?? '').toLowerCase()) next.emailVerified = null;
      return Object.fromEntries(Object.entries(next).filter(([, v]) => v !== undefined));
    },
  });
}
