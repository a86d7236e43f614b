import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { listIntegrations } from '../../modules/integrations/integration.service.ts';
import { listProgramTokens, revokeProgramToken } from '../../modules/tokens/token.service.ts';
import { html } from '../html.ts';
import { postButton } from '../layout.ts';
import { currentProgram, doneFlash, pager, redirectDone, listPage, requestedPage, sendPage } from './dashboard-page.ts';
import { formatTime } from './format.ts';

// Connected apps: every token the connect flow issued for this program (Zapier, n8n, Make …),
// who connected it and when, with Revoke. A revoked token is refused on this process's next API
// call, and by other server processes within TOKEN_CACHE_MS (their cached lookup expires).

export const connectedAppRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock }) => {
  app.get('/apps', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const page = requestedPage(request);
    const list = listPage(await listProgramTokens(db, context.id, 'connect', page), page, `${base}/apps`);
    const connections = list.items;
    const integrations = await listIntegrations(db);
    const displayName = new Map(integrations.map((i) => [i.name, i.displayName]));

    const body = html`
      <div class="page-head"><h1>Connected apps</h1></div>
      <p class="lead">Automation tools you connected to ${context.name}. Each can trigger on its events, act within it, and read its affiliates, referrals and sales.</p>
      ${connections.length === 0
        ? html`<div class="empty"><p><strong>No apps connected.</strong></p>
            <p>${integrations.length === 0
              ? html`This Tandem accepts no automation tools yet: its operator adds them under <a href="${base}/settings#integrations">Settings</a> (or with <code>tandem integration add</code>).`
              : html`In ${integrations.map((i, n) => html`${n > 0 ? (n === integrations.length - 1 ? ' or ' : ', ') : ''}${i.displayName}`)}, add Tandem and sign in when asked; the connection then appears here.`}</p></div>`
        : html`<div class="table-wrap" role="region" aria-label="Connected apps" tabindex="0"><table>
            <thead><tr><th scope="col">App</th><th scope="col">Connected by</th><th scope="col">Connected</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${connections.map((c) => {
              const appName = (c.integration && displayName.get(c.integration)) ?? c.integration ?? c.name;
              return html`<tr${c.revokedAt ? html` class="revoked"` : ''}>
                <td>${appName}<br><span class="muted"><code>${c.prefix}…</code></span></td>
                <td>${c.createdByEmail ?? '—'}</td>
                <td>${formatTime(c.createdAt)}</td>
                <td>${formatTime(c.lastUsedAt, 'Never')}</td>
                <td>${c.revokedAt ? html`<span class="badge bad">Revoked</span>` : html`<span class="badge ok">Active</span>`}</td>
                <td>${c.revokedAt
                  ? ''
                  : postButton(request.session!, `${base}/apps/${c.id}/revoke`, 'Revoke', { className: 'danger small', ariaLabel: `Revoke ${appName} connected ${c.createdAt.slice(0, 10)}`, confirm: `Revoke ${appName}'s access? Its workflows stop working until it is connected again.` })}</td>
              </tr>`;
            })}</tbody>
          </table></div>`}
      ${pager(list)}`;
    return sendPage(db, request, reply, {
      title: 'Connected apps',
      active: 'apps',
      body,
      flash: doneFlash(request, { revoked: 'Connection revoked. The app is refused within a few seconds; reconnect it from the app to use it again.' }),
    });
  });

  app.post('/apps/:tokenId/revoke', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { tokenId } = request.params as { tokenId: string };
    await revokeProgramToken(db, context.id, 'connect', tokenId, clock);
    return redirectDone(reply, `${base}/apps`, 'revoked');
  });
};
