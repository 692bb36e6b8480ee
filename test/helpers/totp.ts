import { execFileSync } from 'node:child_process';

/** The code oathtool (Debian's oathtool) computes for `secret` at `at`. */
export const oathtool = (secret: string, at: Date) =>
  execFileSync('oathtool', ['--totp', '-b', secret, '-N', `@${Math.floor(at.getTime() / 1000)}`], { encoding: 'utf8' }).trim();
