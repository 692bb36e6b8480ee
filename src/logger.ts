import pino from 'pino';

export type Logger = pino.Logger;

/**
 * Structured JSON logs. Secrets never reach a log line: handlers log paths, not query strings,
 * and these keys are censored wherever they appear.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'gatehouse' },
      redact: {
        paths: [
          'password', '*.password', 'client_secret', '*.client_secret', 'secret', '*.secret',
          'access_token', '*.access_token', 'refresh_token', '*.refresh_token', 'code', '*.code',
          'authorization', '*.authorization', 'headers.authorization',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
