import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { isUuid } from '../../domain/ids.ts';
import type { Db } from '../../db/transaction.ts';
import { createProgram, listUserPrograms, type ProgramInput } from '../../modules/programs/program.service.ts';
import { currentUser, redirectDone, sendPage } from './dashboard-page.ts';
import { formErrorsOf, noErrors, optionalNumber, optionalText, readForm, readQuery, type FormErrors, type FormValues, errorFlash } from './forms.ts';
import { programsBody } from './programs.view.ts';

// The programs of the signed-in user: the list, the create form, and the switcher's target.
// The program form (programs.view.ts) is shared with the Settings page; so is programInputOf.

/** The form's fields as ProgramInput: blanks take the service's defaults. */
export function programInputOf(form: FormValues): Omit<ProgramInput, 'ownerUserId'> {
  const rate = optionalText(form.commissionRate);
  const baseUrls = (form.baseUrls ?? '').split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  return {
    name: form.name ?? '',
    domain: form.domain ?? '',
    logoUrl: optionalText(form.logoUrl) ?? null,
    currency: optionalText(form.currency),
    commissionRate: rate === undefined ? undefined : Number(rate),
    baseUrls: baseUrls.length > 0 ? baseUrls : undefined,
    referralParam: optionalText(form.referralParam),
    // Text that is not a number is kept, so the service's check names the field.
    cookieDays: optionalNumber(form.cookieDays) as number | undefined,
    attribution: optionalText(form.attribution),
  };
}

async function homePageOf(db: Db, request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
  const programs = await listUserPrograms(db, currentUser(request).id);
  const body = programsBody({ session: request.session!, programs, values, errors });
  return sendPage(db, request, reply, {
    title: 'Your programs',
    body,
    status: errors.status,
    flash: errorFlash(errors),
  });
}

export const programRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock }) => {
  app.get('/dashboard', (request, reply) => homePageOf(db, request, reply));

  app.post('/dashboard/programs', async (request, reply) => {
    const form = readForm(request);
    try {
      const program = await createProgram(db, { ...programInputOf(form), ownerUserId: currentUser(request).id }, clock);
      return redirectDone(reply, `/dashboard/programs/${program.id}`, 'program-created');
    } catch (error) {
      return homePageOf(db, request, reply, form, formErrorsOf(error));
    }
  });

  // The header's program switcher is a GET form (it works without script).
  app.get('/dashboard/switch', async (request, reply) => {
    const { program } = readQuery(request);
    return reply.redirect(program && isUuid(program) ? `/dashboard/programs/${program.toLowerCase()}` : '/dashboard');
  });
};
