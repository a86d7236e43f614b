// The HTTP side of the scale bench (bench/scale.ts): one request timed from its start to the
// last byte of its answer, and a small browser stand-in for the dashboard and the portal (keeps
// cookies, never follows redirects, reads the CSRF token out of forms — the logic of
// test/helpers/web-client.ts, kept here so the bench does not import the tests).

export interface Timed {
  status: number;
  /** From the request's start to the answer's last byte. */
  ms: number;
  bytes: number;
  /** A transport error or a timeout (status 0). */
  error?: string;
  text?: string;
  headers?: Headers;
}

export const ok = (t: Timed) => t.status >= 200 && t.status < 300;

export const describeFailure = (t: Timed) => (t.error ? t.error : `${t.status} ${(t.text ?? '').replace(/\s+/g, ' ').slice(0, 200)}`);

/** One request; `keepText` keeps the body as text (else only its size is kept). Never throws. */
export async function timedFetch(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs: number; keepText?: boolean },
): Promise<Timed> {
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      body: init.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(init.timeoutMs),
    });
    const body = Buffer.from(await response.arrayBuffer());
    const ms = performance.now() - started;
    const failed = response.status < 200 || response.status >= 300;
    return { status: response.status, ms, bytes: body.length, text: init.keepText || failed ? body.toString('utf8') : undefined, headers: response.headers };
  } catch (error) {
    const ms = performance.now() - started;
    const name = (error as Error).name;
    return { status: 0, ms, bytes: 0, error: name === 'TimeoutError' ? `timed out after ${init.timeoutMs / 1000} s` : `${name}: ${(error as Error).message}` };
  }
}

/** Where `Link: <…>; rel="next"` points, as a path on the server (its origin is SITE_URL's). */
export function nextLinkPath(headers: Headers | undefined): string | null {
  const match = /<([^>]+)>;\s*rel="next"/.exec(headers?.get('link') ?? '');
  if (!match) return null;
  const url = new URL(match[1]!);
  return url.pathname + url.search;
}

/** A browser stand-in for one person: its cookies, sent on every request. */
export class Browser {
  private readonly cookies = new Map<string, string>();

  constructor(
    readonly origin: string,
    private readonly timeoutMs: number,
  ) {}

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string>, keepText = false): Promise<Timed> {
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const answer = await timedFetch(this.origin + path, { method, headers, body: form && new URLSearchParams(form).toString(), timeoutMs: this.timeoutMs, keepText });
    for (const cookie of answer.headers?.getSetCookie() ?? []) {
      const [pair] = cookie.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(cookie)) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(at + 1));
    }
    return answer;
  }

  get(path: string, keepText = false): Promise<Timed> {
    return this.request('GET', path, undefined, keepText);
  }

  /** Loads the login page (which sets the anonymous CSRF cookie) and logs in, as a person does. */
  async logIn(email: string, password: string): Promise<void> {
    const page = await this.get('/login', true);
    if (!ok(page)) throw new Error(`GET /login answered ${describeFailure(page)}`);
    const done = await this.request('POST', '/login', { _csrf: csrfOf(page.text!), email, password, next: '' }, true);
    if (done.status !== 303) throw new Error(`logging in answered ${describeFailure(done)} (expected 303)`);
  }

  /** Opens a portal sign-in link (path) and presses its button, as an affiliate's browser does. */
  async signInByLink(path: string): Promise<void> {
    const page = await this.get(path, true);
    if (!ok(page)) throw new Error(`GET ${path} answered ${describeFailure(page)}`);
    const done = await this.request('POST', path, { _csrf: csrfOf(page.text!) }, true);
    if (done.status !== 303 || !/\/home$/.test(done.headers?.get('location') ?? '')) throw new Error(`the portal sign-in answered ${describeFailure(done)} (expected 303 to …/home)`);
  }
}

/** The CSRF token of the first form on a page. */
function csrfOf(page: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!match) throw new Error('the page has no form with a CSRF token');
  return match[1]!;
}
