import pino from 'pino';

export type Logger = pino.Logger;

/**
 * Database drivers put statement text and bound values into their errors (`sql`, `parameters`,
 * and messages such as "Duplicate entry 'ada@example.com'"). What a log may keep of them: their
 * class and the driver's error number and code, never the text.
 */
function isDatabaseError(err: Record<string, unknown>): boolean {
  return 'sql' in err || 'sqlMessage' in err || 'parameters' in err || 'original' in err || 'parent' in err
    || [err.name, err.constructor?.name].some((n) => /^(Sequelize|SqlError|DuplicateKeyError)/.test(String(n ?? '')));
}

/** The `err` of a log line: a database error without its text; any other error with message and stack. */
export function safeError(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const err = value as Record<string, unknown> & { constructor?: { name?: string } };
  if (isDatabaseError(err)) {
    const driver = (err.parent ?? err.original ?? err) as Record<string, unknown>;
    return {
      type: String(err.constructor?.name ?? err.name ?? 'Error'),
      errno: driver.errno ?? err.errno,
      code: driver.code ?? err.code,
      note: 'database error text omitted: it can hold bound values',
    };
  }
  return pino.stdSerializers.err(value as Error);
}

/**
 * Structured JSON logs. Secrets never reach a log line: handlers log paths, not query strings,
 * database errors lose their text (safeError), and these keys are censored wherever they appear.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, format: 'json' | 'pretty' = 'json'): Logger {
  // pretty: coloured lines for a developer's terminal (pino-pretty in a worker thread); the same
  // serializers and redaction apply before the line is formatted
  const target = format === 'pretty' && destination === undefined
    ? pino.transport({ target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' } })
    : destination;
  return pino(
    {
      level,
      base: { service: 'gatehouse' },
      serializers: { err: safeError },
      redact: {
        paths: [
          'password', '*.password', 'client_secret', '*.client_secret', 'secret', '*.secret',
          'access_token', '*.access_token', 'refresh_token', '*.refresh_token', 'code', '*.code',
          'authorization', '*.authorization', 'headers.authorization', 'link', '*.link',
          'verification_code', '*.verification_code', 'mfa_token', '*.mfa_token', 'recovery_code', '*.recovery_code',
          'recovery_codes', '*.recovery_codes', 'currentPassword', '*.currentPassword', 'refresh_secret', '*.refresh_secret',
          'merge_token', '*.merge_token', 'token', '*.token', 'otpauth_uri', '*.otpauth_uri',
          'enroll_token', '*.enroll_token', 'challenge_token', '*.challenge_token', 'credential', '*.credential',
          'newPassword', '*.newPassword', 'newPasswordConfirm', '*.newPasswordConfirm',
          'code_token', '*.code_token', 'codeToken', '*.codeToken', 'altcha', '*.altcha',
        ],
        censor: '[redacted]',
      },
    },
    target,
  );
}
