import { type ApiError, errors } from '../errors';

/**
 * The one table of HTTP statuses. The original service answered every error with HTTP 200 and
 * the error in the body, except /oauth/token, which answered 400 (401 for bad client
 * credentials); its client libraries read `stat`. Gatehouse keeps that, and uses real statuses
 * only where no route was reached or the server failed:
 *
 * | situation                                   | HTTP |
 * |---------------------------------------------|------|
 * | any spec error on a Capture-style endpoint  | 200  |
 * | /oauth/token: 402 invalid_client            | 401  |
 * | /oauth/token: any other spec error          | 400  |
 * | unknown endpoint                            | 404  |
 * | known endpoint, method not accepted         | 405  |
 * | unreadable body / too large / wrong type    | 400 / 413 / 415 |
 * | unexpected server failure (a bug, DB down)  | 500  |
 */
/** `login`: Capture statuses; an unknown client_id is refused as 403, like a client without login_client. */
export type ErrorStyle = 'capture' | 'oauth' | 'login';

export function httpStatusFor(error: ApiError, style: ErrorStyle): number {
  if (error.transportStatus !== undefined) return error.transportStatus;
  if (style === 'oauth') return error.code === 402 ? 401 : 400;
  return 200;
}

/** How each style refuses missing or wrong client credentials (docs/api.md#oauthtoken: 402 invalid_client; docs/api.md#flows: 403). */
export const BAD_CREDENTIALS: Record<ErrorStyle, (why: string) => ApiError> = {
  capture: errors.invalidClientCredentials,
  oauth: errors.invalidClient,
  login: errors.permissionError,
};
