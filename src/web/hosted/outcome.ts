import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { isPaused, type SignInOutcome } from '../../usecases/login/call';
import { type Entry, type Hosted, toApp } from './parts';
import { showCode } from './code-step';
import { showEnroll } from './enrollment';

/** A sign-in's outcome: to the app with its code, or its pause's page (the second factor asked for, or one to add first). */
export function toAppOrPause(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, outcome: SignInOutcome): Promise<void> | void {
  if (!isPaused(outcome)) return toApp(res, entry, outcome);
  const { pause } = outcome;
  return pause.kind === 'enroll' ? showEnroll(h, req, res, app, entry, pause.token, 200) : showCode(h, req, res, app, entry, pause.token, 200);
}
