import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/transaction.ts';
import { parsePageRequest, encodeCursor } from '../../http/pagination.ts';
import type { Page, PageOrder, PagePosition, PageRequest } from '../../db/keyset.ts';
import { listUserPrograms, type Program } from '../../modules/programs/program.service.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { html, type SafeHtml } from '../html.ts';
import { renderPage, type PageOptions } from '../layout.ts';
import { readQuery } from './forms.ts';

// What every dashboard page shares: the signed-in user, the program in the path (loaded and
// checked by dashboard.ts before any handler runs), the page frame, flash messages and pagers.

export interface DashboardProgram {
  program: Program;
  /** What the API services take. */
  context: ProgramContext;
  /** The program's dashboard path, /dashboard/programs/{id}. */
  base: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    dashboardProgram: DashboardProgram | null;
  }
}

/** The signed-in user's session: what a page's forms and post buttons are bound to (their CSRF token). */
export type DashboardSession = NonNullable<FastifyRequest['session']>;

/** The signed-in user (dashboard.ts redirects everyone else to the login page first). */
export function currentUser(request: FastifyRequest): { id: string; email: string } {
  const user = request.session?.user;
  if (!user) throw new Error('dashboard route reached without a signed-in user');
  return user;
}

/** The program named in the path, already checked to belong to the user. */
export function currentProgram(request: FastifyRequest): DashboardProgram {
  if (!request.dashboardProgram) throw new Error('program route reached without its program');
  return request.dashboardProgram;
}

export interface DashboardPage {
  title: string;
  body: SafeHtml;
  /** The tab to mark current; program pages only. */
  active?: string;
  flash?: PageOptions['flash'];
  status?: number;
}

export async function sendPage(db: Db, request: FastifyRequest, reply: FastifyReply, page: DashboardPage): Promise<FastifyReply> {
  const programs = await listUserPrograms(db, currentUser(request).id);
  const current = request.dashboardProgram;
  return reply
    .code(page.status ?? 200)
    .type('text/html; charset=utf-8')
    .send(
      renderPage({
        title: current ? `${page.title} · ${current.program.name}` : page.title,
        session: request.session,
        // The page's enhancements (copy buttons, confirmations); everything works without them.
        body: html`${page.body}<script src="/assets/dashboard.js" defer></script>`,
        program: current ? { id: current.program.id, name: current.program.name } : undefined,
        programs: programs.map((p) => ({ id: p.id, name: p.name })),
        active: page.active,
        flash: page.flash,
      }),
    );
}

/**
 * The confirmation after POST-redirect-GET: the form redirects to `?done=<what>` and the page
 * shows the matching message. Unknown values show nothing.
 */
export function doneFlash(request: FastifyRequest, messages: Record<string, string>): PageOptions['flash'] {
  const done = readQuery(request).done;
  const text = done === undefined ? undefined : messages[done];
  return text ? { kind: 'ok', text } : undefined;
}

/** Redirect after a successful POST (303: the browser follows with a GET). */
export function redirectDone(reply: FastifyReply, path: string, done: string): FastifyReply {
  const [target = '', fragment] = path.split('#');
  const url = `${target}${target.includes('?') ? '&' : '?'}done=${encodeURIComponent(done)}${fragment ? `#${fragment}` : ''}`;
  return reply.redirect(url, 303);
}

export const PAGE_SIZE = 50;

/** A dashboard list's page request, with the signer of the cursor its "Next" link carries. */
export interface ListPageRequest extends PageRequest {
  cursorAt(position: PagePosition): string;
}

/**
 * The page a list URL asks for: 50 rows after its `cursor` (keyset and signed, as the API
 * pages), in `order` when the list is sorted by another column (the cursor then carries it).
 */
export function requestedPage(request: FastifyRequest, order?: PageOrder): ListPageRequest {
  const { cursor } = readQuery(request);
  return {
    ...parsePageRequest(request, { limit: PAGE_SIZE, cursor }),
    ...(order ? { order } : {}),
    cursorAt: (position) => encodeCursor(request, position),
  };
}

export interface ListPage<T> {
  items: T[];
  /** The URL of the next page, when there is one. */
  next: string | null;
  /** The URL of the first page, when this is a later one. */
  first: string | null;
}

/** A service's page with the pager's URLs: the same path and filters, with the cursor of the page's `next` for "Next". */
export function listPage<T>(page: Page<T>, requested: ListPageRequest, path: string, filters: Record<string, string | undefined> = {}): ListPage<T> {
  const params = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
  const first = requested.after === undefined ? null : params.size > 0 ? `${path}?${params}` : path;
  let next: string | null = null;
  if (page.next !== undefined) {
    params.set('cursor', requested.cursorAt(page.next));
    next = `${path}?${params}`;
  }
  return { items: page.items, next, first };
}

export function pager(list: ListPage<unknown>): SafeHtml | string {
  if (!list.next && !list.first) return '';
  return html`<nav class="pager" aria-label="Pages">
    <span>${list.first ? html`<a href="${list.first}">← First page</a>` : ''}</span>
    <span>${list.next ? html`<a href="${list.next}" rel="next">Next ${PAGE_SIZE} →</a>` : ''}</span>
  </nav>`;
}
