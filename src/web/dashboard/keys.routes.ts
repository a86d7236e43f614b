import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { invalidField } from '../../domain/errors.ts';
import { issueToken, listProgramTokens, revokeProgramToken, type IssuedToken } from '../../modules/tokens/token.service.ts';
import { html } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { currentProgram, currentUser, doneFlash, pager, redirectDone, listPage, requestedPage, sendPage } from './dashboard-page.ts';
import { formatTime } from './format.ts';
import { formErrorsOf, noErrors, readForm, textField, type FormErrors, type FormValues } from './forms.ts';

// API keys: bearer tokens of this program made by its owner, for their own site or scripts.
// A new key's secret is shown once, in the response to the form post itself (not after a
// redirect: it must never be in a URL, and only its hash is stored).

const MAX_NAME = 100;

function keyName(text: string | undefined): string {
  const name = text?.trim() || 'API key';
  if (name.length > MAX_NAME) throw invalidField('#/name', `must be at most ${MAX_NAME} characters`);
  return name;
}

export const apiKeyRoutes: FastifyPluginAsync<AppServices> = async (app, { db, config, clock }) => {
  async function keysPage(request: FastifyRequest, reply: FastifyReply, options: { issued?: IssuedToken; values?: FormValues; errors?: FormErrors } = {}) {
    const { context, base } = currentProgram(request);
    const errors = options.errors ?? noErrors;
    const page = requestedPage(request);
    const list = listPage(await listProgramTokens(db, context.id, 'api_key', page), page, `${base}/keys`);
    const keys = list.items;
    const issued = options.issued;

    const body = html`
      <div class="page-head"><h1>API keys</h1></div>
      ${issued
        ? html`<section class="card" aria-labelledby="new-key">
            <h2 id="new-key">Your new key “${issued.name}”</h2>
            <p><strong>Copy it now: it is shown only this once.</strong> Tandem keeps only a fingerprint of it.</p>
            <div class="secret-box">
              <p class="secret" id="new-token">${issued.token}</p>
              <button type="button" class="secondary" data-copy="new-token" hidden>Copy</button>
            </div>
            <p class="muted" id="new-token-status" role="status"></p>
            <p>Send it as <code>Authorization: Bearer …</code>, for example:</p>
            <pre class="secret">curl ${config.siteUrl}/api/v1/affiliates -H "Authorization: Bearer ${issued.token}"</pre>
          </section>`
        : ''}
      <section class="card" aria-labelledby="create-key">
        <h2 id="create-key">Create a key</h2>
        <p class="muted">A key lets your site or scripts call the <a href="/docs">API</a> for ${context.name}, and nothing else.</p>
        <form class="filters" method="post" action="${base}/keys" novalidate>
          ${csrfField(request.session!)}
          ${textField({ label: 'Name', name: 'name', value: options.values?.name, help: 'Where it will be used, such as "Website backend".', autocomplete: 'off' }, errors)}
          <button type="submit">Create key</button>
        </form>
      </section>
      ${keys.length === 0
        ? html`<div class="empty"><p>No API keys yet. Create one above and give it to your site's backend: it records referrals and sales with it.</p></div>`
        : html`<div class="table-wrap" role="region" aria-label="API keys" tabindex="0"><table>
            <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${keys.map(
              (key) => html`<tr${key.revokedAt ? html` class="revoked"` : ''}>
                <td>${key.name}</td><td><code>${key.prefix}…</code></td>
                <td>${formatTime(key.createdAt)}${key.createdByEmail ? html`<br><span class="muted">${key.createdByEmail}</span>` : ''}</td>
                <td>${formatTime(key.lastUsedAt, 'Never')}</td>
                <td>${key.revokedAt ? html`<span class="badge bad">Revoked</span>` : html`<span class="badge ok">Active</span>`}</td>
                <td>${key.revokedAt
                  ? ''
                  : postButton(request.session!, `${base}/keys/${key.id}/revoke`, 'Revoke', { className: 'danger small', ariaLabel: `Revoke ${key.name} (${key.prefix}…)`, confirm: `Revoke the key ${key.name} (${key.prefix}…)? Anything using it stops working at once.` })}</td>
              </tr>`,
            )}</tbody>
          </table></div>`}
      ${pager(list)}`;
    return sendPage(db, request, reply, {
      title: 'API keys',
      active: 'keys',
      body,
      status: errors.status,
      flash: errors.message
        ? { kind: 'error', text: errors.message }
        : issued
          ? { kind: 'ok', text: 'API key created.' }
          : doneFlash(request, { revoked: 'Key revoked. Requests with it are refused within a few seconds.' }),
    });
  }

  app.get('/keys', (request, reply) => keysPage(request, reply));

  app.post('/keys', async (request, reply) => {
    const { context } = currentProgram(request);
    const form = readForm(request);
    try {
      const issued = await issueToken(db, { programId: context.id, name: keyName(form.name), kind: 'api_key', createdByUserId: currentUser(request).id }, clock);
      return keysPage(request, reply, { issued });
    } catch (error) {
      return keysPage(request, reply, { values: form, errors: formErrorsOf(error) });
    }
  });

  app.post('/keys/:tokenId/revoke', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { tokenId } = request.params as { tokenId: string };
    await revokeProgramToken(db, context.id, 'api_key', tokenId, clock);
    return redirectDone(reply, `${base}/keys`, 'revoked');
  });
};
