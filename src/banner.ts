import type { CreatedApplication } from './domain/applications';

/**
 * What the first embedded start and `gatehouse init` print. The secrets appear only on a terminal: when the output
 * goes to a file or a log collector, the banner says how to read them instead, so they never
 * land in a log.
 */
export function banner(created: CreatedApplication, baseUrl: string, terminal: boolean): string {
  const { owner, login } = created.clients;
  const list = `npx gatehouse clients:list --app ${created.app}`;
  const secret = (s: string) => (terminal ? `  client_secret=${s}` : '');
  return [
    '',
    `Gatehouse created the application "${created.app}" with flow ${created.flow.name} version ${created.flow.version}.`,
    `  owner client   client_id=${owner.client_id}${secret(owner.client_secret)}`,
    `  login client   client_id=${login.client_id}${secret(login.client_secret)}`,
    '',
    'Try it:',
    `  curl -u ${owner.client_id}:${terminal ? owner.client_secret : 'OWNER_SECRET'} '${baseUrl}/clients/list'`,
    '',
    terminal
      ? `These secrets are printed once. To see them again: ${list}`
      : `The secrets are not printed because the output is not a terminal (it may be a log). Read them with: ${list}`,
    '',
  ].join('\n');
}
