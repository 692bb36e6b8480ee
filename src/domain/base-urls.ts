import { isIP } from 'node:net';

/**
 * Each application's own base URL (docs/api.md: `https://{app}.<domain>`): requests are routed by
 * the first label of their Host, so an application other than the default one answers at its name
 * followed by PUBLIC_BASE_URL's host (`http://localhost:3000` → `http://conf.localhost:3000`,
 * `https://login.example.com` → `https://conf.login.example.com`). When PUBLIC_BASE_URL's own first
 * label is the default application's name (`https://local.example.com`), the other applications
 * take its place (`https://conf.example.com`). The default application keeps the bare host; so does
 * every application when PUBLIC_BASE_URL's host is an IP address, which names no application.
 */
export interface BaseUrls {
  /** PUBLIC_BASE_URL is https: people reach the pages over TLS, whatever the last hop to this process. */
  secure: boolean;
  /** The base URL of application `name`, without a trailing slash. */
  of(name: string): string;
  /**
   * A URL stored in a setting, on application `name`'s own host when it points at the bare
   * PUBLIC_BASE_URL while `name` is not the default application (a login client created before
   * each application had its own links); any other URL as it is.
   */
  rebase(url: string, name: string): string;
  /**
   * The operators' console (docs/console.md), when this service runs one: its operators'
   * application and the callback its sign-in comes back to, which that application's login
   * clients may always send a code to (as the account page's own callback).
   */
  console?: { app: string; callback: string };
}

/** The path of the console's sign-in callback, on its own origin. */
export const CONSOLE_CALLBACK_PATH = '/callback';

export function createBaseUrls(publicBaseUrl: string, defaultApp: string, console?: { app: string; publicUrl: string }): BaseUrls {
  const base = new URL(publicBaseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  const bareHost = base.hostname.replace(/^\[|\]$/g, '');
  const labels = bareHost.split('.');
  const hostOf = (name: string): string => {
    if (name === defaultApp || isIP(bareHost) !== 0) return base.hostname;
    return labels[0] === defaultApp && labels.length > 1 ? [name, ...labels.slice(1)].join('.') : `${name}.${base.hostname}`;
  };
  const originOf = (name: string) => `${base.protocol}//${hostOf(name)}${base.port ? `:${base.port}` : ''}`;
  return {
    ...(console && { console: { app: console.app, callback: `${console.publicUrl.replace(/\/+$/, '')}${CONSOLE_CALLBACK_PATH}` } }),
    secure: base.protocol === 'https:',
    of: (name) => `${originOf(name)}${prefix}`,
    rebase(url, name) {
      if (name === defaultApp) return url;
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return url;
      }
      if (parsed.origin !== base.origin || !parsed.pathname.startsWith(prefix)) return url;
      return `${originOf(name)}${parsed.pathname}${parsed.search}${parsed.hash}`;
    },
  };
}
