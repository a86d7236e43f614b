import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { addIntegration, listIntegrations, removeIntegration } from '../../modules/integrations/integration.service.ts';
import { updateProgram } from '../../modules/programs/program.service.ts';
import { isOperator } from '../../modules/users/user.service.ts';
import { html } from '../html.ts';
import { csrfField, postButton, renderPage } from '../layout.ts';
import { currentProgram, currentUser, doneFlash, redirectDone, sendPage } from './dashboard-page.ts';
import { formErrorsOf, noErrors, optionalText, readForm, textareaField, textField, type FormErrors, type FormValues } from './forms.ts';
import { programFields, programFormValues, programInputOf } from './programs.routes.ts';

// Settings: the program's own fields, and the integrations (automation tools) this Tandem
// instance lets use the connect flow. Integrations are instance-wide, so only the operator
// (isOperator) may change them; every other account sees the list.

const DONE = {
  saved: 'Program saved.',
  'integration-added': 'Integration added. Its users can now connect it to their programs.',
  'integration-removed': 'Integration removed. Tokens it already issued keep working until revoked under Connected apps.',
};

type Section = 'program' | 'integration';

export const settingsRoutes: FastifyPluginAsync<AppServices> = async (app, { db, config, clock }) => {
  async function settingsPage(request: FastifyRequest, reply: FastifyReply, failed?: { section: Section; values: FormValues; errors: FormErrors }) {
    const { program, base } = currentProgram(request);
    const operator = await isOperator(db, currentUser(request).id);
    const integrations = await listIntegrations(db);
    const programErrors = failed?.section === 'program' ? failed.errors : noErrors;
    const integrationErrors = failed?.section === 'integration' ? failed.errors : noErrors;
    const integrationValues = failed?.section === 'integration' ? failed.values : {};

    const body = html`
      <div class="page-head"><h1>Settings</h1></div>
      <section class="card" aria-labelledby="program-settings">
        <h2 id="program-settings">Program</h2>
        ${programErrors.message ? html`<p class="error" role="alert">${programErrors.message}</p>` : ''}
        <form method="post" action="${base}/settings" novalidate>
          ${csrfField(request.session!)}
          ${programFields(failed?.section === 'program' ? failed.values : programFormValues(program), programErrors)}
          <div class="actions"><button type="submit">Save program</button></div>
        </form>
        <p class="muted">Program id: <code>${program.id}</code></p>
      </section>

      <section class="card" aria-labelledby="tracking">
        <h2 id="tracking">Tracking script</h2>
        <p>Add this tag to every page of <strong>${program.domain}</strong> (and its subdomains) where visitors may land from an affiliate link.
        It counts the click and remembers the referral for ${program.cookieDays} days; read it with <code>window.tandem.referral</code> at sign-up.
        Behind a cookie banner, add <code>data-consent="required"</code> and call <code>window.tandem.consent()</code> once the visitor agrees.</p>
        <div class="secret-box">
          <pre class="secret" id="tracker-tag">&lt;script src="${config.siteUrl}/tracker.js" data-program-id="${program.id}" async&gt;&lt;/script&gt;</pre>
          <button type="button" class="secondary" data-copy="tracker-tag" hidden>Copy</button>
        </div>
        <p class="muted" id="tracker-tag-status" role="status"></p>
      </section>

      <section class="card" aria-labelledby="integrations">
        <h2 id="integrations">Integrations</h2>
        <p class="muted">The automation tools that may use the connect flow of this Tandem, for every account.
        A tool sends users to <code>${config.siteUrl}/connect/{name}/choose-affiliate-program</code> and trades the code at
        <code>${config.siteUrl}/api/{name}/token</code>; redirect URIs must match exactly.</p>
        ${integrations.length === 0
          ? html`<p class="empty">No integrations yet.${operator ? ' Add Zapier, n8n or Make below with the redirect URI each one documents.' : ''}</p>`
          : html`<div class="table-wrap"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">Display name</th><th scope="col">Redirect URIs</th><th scope="col">Client id</th>${operator ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : ''}</tr></thead>
              <tbody>${integrations.map(
                (i) => html`<tr>
                  <td><code>${i.name}</code></td><td>${i.displayName}</td>
                  <td>${i.redirectUris.map((uri) => html`<code>${uri}</code><br>`)}</td>
                  <td>${i.clientId ?? '—'}${i.hasClientSecret ? html` <span class="badge">secret set</span>` : ''}</td>
                  ${operator
                    ? html`<td>${postButton(request.session!, `${base}/settings/integrations/${i.name}/remove`, 'Remove', { className: 'danger small', ariaLabel: `Remove ${i.displayName}` })}</td>`
                    : ''}
                </tr>`,
              )}</tbody>
            </table></div>`}
        ${operator
          ? html`<h3>Add an integration</h3>
              ${integrationErrors.message ? html`<p class="error" role="alert">${integrationErrors.message}</p>` : ''}
              <form method="post" action="${base}/settings/integrations" novalidate>
                ${csrfField(request.session!)}
                <div class="form-grid">
                  ${textField({ label: 'Name', name: 'name', value: integrationValues.name, required: true, autocomplete: 'off', help: 'Lowercase letters, digits and hyphens, used in the URLs: zapier, n8n, make.' }, integrationErrors)}
                  ${textField({ label: 'Display name', name: 'displayName', value: integrationValues.displayName, autocomplete: 'off', help: 'Shown to users when they connect, such as Zapier.' }, integrationErrors)}
                  <div class="wide">${textareaField({ label: 'Redirect URIs', name: 'redirectUris', value: integrationValues.redirectUris, required: true, help: 'One per line, exactly as the tool sends them.' }, integrationErrors)}</div>
                  ${textField({ label: 'Client id', name: 'clientId', value: integrationValues.clientId, autocomplete: 'off', help: 'Optional.' }, integrationErrors)}
                  ${textField({ label: 'Client secret', name: 'clientSecret', type: 'password', autocomplete: 'new-password', help: 'Optional; stored hashed.' }, integrationErrors)}
                </div>
                <div class="actions"><button type="submit">Add integration</button></div>
              </form>`
          : html`<p class="muted">Only the operator of this Tandem (its first account) can change integrations, here or with <code>tandem integration add</code>.</p>`}
      </section>`;
    return sendPage(db, request, reply, {
      title: 'Settings',
      active: 'settings',
      body,
      status: failed?.errors.status,
      flash: failed ? { kind: 'error', text: 'Nothing was saved: check the form below.' } : doneFlash(request, DONE),
    });
  }

  app.get('/settings', (request, reply) => settingsPage(request, reply));

  app.post('/settings', async (request, reply) => {
    const { program, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await updateProgram(db, currentUser(request).id, program.id, programInputOf(form), clock);
      return redirectDone(reply, `${base}/settings`, 'saved');
    } catch (error) {
      return settingsPage(request, reply, { section: 'program', values: form, errors: formErrorsOf(error) });
    }
  });

  /** Instance-wide changes are the operator's: anyone else gets a 403 and nothing changes. */
  async function refuseUnlessOperator(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    if (await isOperator(db, currentUser(request).id)) return false;
    await reply
      .code(403)
      .type('text/html; charset=utf-8')
      .send(renderPage({ title: 'Not allowed', session: request.session, body: html`<div class="card narrow"><h1>Not allowed</h1><p>Only the operator of this Tandem can change its integrations.</p></div>` }));
    return true;
  }

  app.post('/settings/integrations', async (request, reply) => {
    if (await refuseUnlessOperator(request, reply)) return reply;
    const { base } = currentProgram(request);
    const form = readForm(request);
    try {
      await addIntegration(db, {
        name: form.name?.trim() ?? '',
        displayName: optionalText(form.displayName),
        redirectUris: (form.redirectUris ?? '').split(/\r?\n/).map((line) => line.trim()).filter(Boolean),
        clientId: optionalText(form.clientId) ?? null,
        clientSecret: form.clientSecret ? form.clientSecret : null,
      }, clock);
      return redirectDone(reply, `${base}/settings#integrations`, 'integration-added');
    } catch (error) {
      return settingsPage(request, reply, { section: 'integration', values: form, errors: formErrorsOf(error) });
    }
  });

  app.post('/settings/integrations/:name/remove', async (request, reply) => {
    if (await refuseUnlessOperator(request, reply)) return reply;
    const { base } = currentProgram(request);
    const { name } = request.params as { name: string };
    await removeIntegration(db, name);
    return redirectDone(reply, `${base}/settings`, 'integration-removed');
  });
};
